"""Environment drift: the versions a checkpoint or a saved environment file records,
against the installed ones, compared as versions; nothing compared that one side lacks.

The rule table runs on in-memory facts shaped as the probes write them; the end-to-end
test runs the real probes on a workspace whose checkpoint records another torch.
"""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from agent.analysis.baseline import diff
from agent.analysis.diff_keys import comparables
from agent.model.claims import Claim, Ref, VersionDiffers, check, resolve
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, verify
from agent.model.versions import difference
from agent.rules.base import Evidence
from agent.rules.environment_drift import EnvironmentDrift

TORCH = "2.13.0+cpu"


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("2.11.0+cu130", "2.11.0+cu130", "same"),
        ("2.11.0+cu130", "2.11.0", "same"),  # a label on one side only says nothing
        ("2.11.0+cu130", "2.11.0+cpu", "build"),
        ("2.11.0+cu130", "2.13.0+cu130", "release"),
        ("2.11.0", "2.11", "same"),
        ("2.6.0a0+git1234", "2.6.0+git1234", "release"),  # a pre-release is another release
        ("3.12.3", "3.12.4", "release"),
        ("v1.2", "1.2.0", "same"),
        ("unknown", "2.11.0", None),
    ],
)
def test_version_difference(a: str, b: str, expected: str | None) -> None:
    """Two versions differ by release, by build label, or not at all, symmetrically; a label
    on one side only is no difference, and text that is no version compares as unknown."""
    assert difference(a, b) == expected
    assert difference(b, a) == expected


def pyenv(torch: str | None = TORCH, python: str = "3.11.7") -> dict[str, Any]:
    return {
        "python": {"version": python},
        "torch": None
        if torch is None
        else {"version": torch, "git_version": "abc1234", "cuda": None},
        "triton": None,
        "key_packages": {"transformers": "4.57.1"},
        "packages": [{"name": "lightning", "version": "2.6.6"}],
    }


def checkpoints(recorded: dict[str, Any]) -> dict[str, Any]:
    origin = {q: f"step_10/meta.json:{q}" for q in recorded}
    return {"steps": [], "recorded": recorded, "recorded_from": origin}


def propose(*facts: tuple[str, dict[str, Any] | None, str | None]) -> list[Hypothesis]:
    """The rule on a ledger of ``(probe, value, error)`` facts and the derived diff."""
    ledger = Ledger()
    ids = [
        ledger.append(Fact(probe=probe, target="local", value=value, error=error)).id
        for probe, value, error in facts
    ]
    entries = diff(comparables(ledger, ids), ledger, ids, None)
    hypotheses = EnvironmentDrift().propose(Evidence(ledger=ledger, fact_ids=ids, diff=entries))
    return [verify(h, ledger) for h in hypotheses]


CASES: list[tuple[str, list[tuple[str, dict[str, Any] | None, str | None]], str | None, str]] = [
    (
        "another torch release",
        [("pyenv", pyenv(), None), ("checkpoints", checkpoints({"torch": "2.11.0+cu130"}), None)],
        "verified",
        "are different releases",
    ),
    (
        "same release, other build",
        [("pyenv", pyenv(), None), ("checkpoints", checkpoints({"torch": "2.13.0+cu130"}), None)],
        "verified",
        "one release in different builds",
    ),
    (
        "a Lightning checkpoint from another Lightning",
        [("pyenv", pyenv(), None), ("checkpoints", checkpoints({"lightning": "2.5.0"}), None)],
        "verified",
        "Lightning version (baseline) from step_10/meta.json:lightning = '2.5.0'",
    ),
    (
        "same versions",
        [
            ("pyenv", pyenv(), None),
            ("checkpoints", checkpoints({"torch": TORCH, "python": "3.11.7"}), None),
        ],
        "refuted",
        "are the same version",
    ),
    (
        "the record names no build",
        [("pyenv", pyenv(), None), ("checkpoints", checkpoints({"torch": "2.13.0"}), None)],
        "refuted",
        "only one names its build",
    ),
    (
        "installed torch not observed",
        [
            ("pyenv", pyenv(torch=None), None),
            ("checkpoints", checkpoints({"torch": "2.11.0+cu130"}), None),
        ],
        "unverifiable",
        "has no torch version (now)",
    ),
    (
        "python agrees, the installed torch not observed",  # not refuted: torch is open
        [
            ("pyenv", pyenv(torch=None), None),
            ("checkpoints", checkpoints({"torch": "2.11.0+cu130", "python": "3.11.7"}), None),
        ],
        "unverifiable",
        "has no torch version (now)",
    ),
    (
        # The interpreter probed lacks a package the run recorded: maybe not the trainer's
        # interpreter at all, so this is left open rather than called drift.
        "a recorded package the probed interpreter lacks",
        [
            ("pyenv", pyenv(), None),
            ("checkpoints", checkpoints({"cuda": "12.8", "python": "3.11.7"}), None),
        ],
        "unverifiable",
        "only one has a version; not compared",
    ),
    (
        "a difference decides even beside an open one",
        [
            ("pyenv", pyenv(), None),
            ("checkpoints", checkpoints({"cuda": "12.8", "torch": "2.11.0"}), None),
        ],
        "verified",
        "are different releases",
    ),
    (
        "pyenv failed",
        [
            ("pyenv", None, "bundle_failed: python3: not found"),
            ("checkpoints", checkpoints({"torch": "2.11.0+cu130"}), None),
        ],
        "unverifiable",
        "is a failed observation",
    ),
    (
        "nothing records a version",
        [("pyenv", pyenv(), None), ("checkpoints", checkpoints({}), None)],
        None,
        "",
    ),
]


@pytest.mark.parametrize(("case", "facts", "status", "sentence"), CASES, ids=[c[0] for c in CASES])
def test_rule_table(
    case: str,
    facts: list[tuple[str, dict[str, Any] | None, str | None]],
    status: str | None,
    sentence: str,
) -> None:
    """Verified on a recorded version that differs, refuted when all compared agree,
    unverifiable when the installed side was not observed, not proposed when nothing
    records a version (nothing said there was an environment to drift from)."""
    found = propose(*facts)
    if status is None:
        assert found == [], case
        return
    (hyp,) = found
    assert hyp.status == status, [v.sentence for v in hyp.verdicts]
    assert any(sentence in v.sentence for v in hyp.verdicts), [v.sentence for v in hyp.verdicts]
    assert all(len(v.cites) == 2 for v in hyp.verdicts)  # the installed and the recorded fact


def test_with_a_snapshot_the_snapshot_is_the_baseline() -> None:
    """A snapshot whose versions match: refuted, though a checkpoint records another
    Lightning (the known good state is the snapshot, not what a checkpoint recorded)."""
    ledger = Ledger()
    then = ledger.append(Fact(probe="pyenv", target="local", value=pyenv())).id
    now = [
        ledger.append(Fact(probe=probe, target="local", value=value)).id
        for probe, value in (("pyenv", pyenv()), ("checkpoints", checkpoints({"lightning": "1.9"})))
    ]
    now_pyenv = ledger.get(now[0])
    assert resolve(now_pyenv, ("packages", "@name=lightning", "version")) == "2.6.6"
    entries = diff(comparables(ledger, now), ledger, now, [then])
    (hyp,) = EnvironmentDrift().propose(Evidence(ledger=ledger, fact_ids=now, diff=entries))
    hyp = verify(hyp, ledger)
    assert hyp.status == "refuted", [v.sentence for v in hyp.verdicts]
    assert all(then in v.cites for v in hyp.verdicts)


def test_unread_checkpoints_leave_the_question_open() -> None:
    """Checkpoints that could not be read are not "nothing recorded": the family stays,
    claimless, saying what would settle it."""
    (hyp,) = propose(("pyenv", pyenv(), None), ("checkpoints", None, "not_found: /ws/ck"))
    assert hyp.claims == () and hyp.predictions
    assert hyp.status == "unverifiable"


def test_version_claim_on_text_that_is_no_version_is_unverifiable() -> None:
    """A version claim on a value that is not a version is unverifiable, saying so, rather
    than a difference."""
    ledger = Ledger()
    a = ledger.append(Fact(probe="p", target="local", value={"v": "n/a"})).id
    b = ledger.append(Fact(probe="q", target="local", value={"v": "2.11.0"})).id
    claim = Claim(predicate=VersionDiffers(a=Ref(fact=a, path=("v",)), b=Ref(fact=b, path=("v",))))
    verdict = check(claim, ledger)
    assert verdict.outcome == "unverifiable"
    assert "not both versions" in verdict.sentence


def diagnose_foreign(tmp_path: Path, recorded_torch: str) -> tuple[Any, Ledger, str]:
    """The real probes and graph on a checkpoint directory no reference trainer wrote:
    ``outputs/step_100/meta.json`` holding ``{"torch": recorded_torch}``."""
    from agent.graph.state import DiagnosisState
    from agent.report.build import build_report
    from agent.report.markdown import render_markdown
    from agent.sessions.config import SessionConfig
    from agent.sessions.runner import build_doctor, run_session
    from agent.sessions.session import Session
    from tools.sweep import SweepSpec

    ck = tmp_path / "outputs"
    (ck / "step_100").mkdir(parents=True)
    (ck / "step_100" / "meta.json").write_text(json.dumps({"torch": recorded_torch}))
    spec = SweepSpec(
        workspace=str(tmp_path), checkpoints=str(ck), interpreter=sys.executable, parallel=2
    )
    session = Session.create(SessionConfig(command="diagnose", target="local", spec=spec))
    doctor = build_doctor(session, session.target("local"), spec)
    outcome = run_session(session, doctor, start=DiagnosisState(target="local"))
    session.close()
    report = render_markdown(build_report(outcome.state, session.ledger, session.id))
    return outcome.state, session.ledger, report


@pytest.mark.slow
def test_a_foreign_checkpoint_recording_another_torch_is_drift(tmp_path: Path) -> None:
    """``meta.json`` records torch 2.11.0+cu130 while this torch is installed: drift is
    verified, citing the installed version and the recorded one, named with the file and
    key it came from."""
    state, ledger, report = diagnose_foreign(tmp_path, "2.11.0+cu130")
    drift = [h for h in state.hypotheses if h.kind == "environment_drift"]
    assert [h.status for h in drift] == ["verified"], [
        v.sentence for h in drift for v in h.verdicts
    ]
    (verdict,) = drift[0].verdicts
    installed = metadata.version("torch")
    assert f"torch version (now) = '{installed}'" in verdict.sentence
    baseline = "torch version (baseline) from step_100/meta.json:torch = '2.11.0+cu130'"
    assert baseline in verdict.sentence
    assert "are different releases" in verdict.sentence
    pyenv_fact, ckpt_fact = (ledger.get(i) for i in verdict.cites)
    assert (pyenv_fact.probe, ckpt_fact.probe) == ("pyenv", "checkpoints")
    assert resolve(ckpt_fact, ("recorded_from", "torch")) == "step_100/meta.json:torch"
    assert state.verdict == "fault_found"
    assert "2.11.0+cu130" in report


@pytest.mark.slow
def test_a_foreign_checkpoint_recording_this_torch_is_no_drift(tmp_path: Path) -> None:
    """The same layout recording the installed torch: drift is compared and refuted."""
    state, _, _ = diagnose_foreign(tmp_path, metadata.version("torch"))
    drift = [h for h in state.hypotheses if h.kind == "environment_drift"]
    assert [h.status for h in drift] == ["refuted"], [v.sentence for h in drift for v in h.verdicts]
    assert "are the same version" in drift[0].verdicts[0].sentence
