"""Missing evidence never refutes: a claim over a value nobody observed (a failed probe, a
missing key, a null because the probed interpreter lacks the package) is unverifiable;
only a claim that fails on an observed value refutes. Checked predicate by predicate and
on the FX-race family with facts made by the real stdout-log parser."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from agent.model.claims import (
    PREDICATES,
    Absent,
    AtLeast,
    AtMost,
    Claim,
    Contains,
    Differs,
    Equal,
    Exists,
    Greater,
    Matches,
    NotBefore,
    RatioAtLeast,
    RatioBelow,
    Ref,
    VersionDiffers,
    WindowRatio,
    check,
)
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import verify
from agent.rules.base import Evidence
from agent.rules.fx_trace_race import FxTraceRace
from tests.lib import torch_error_texts as texts
from tools.parsers import stdoutlog

# One fact holding a null, observed values of every kind, and nothing at "gone".
VALUES: dict[str, object] = {
    "null": None,
    "zero": 0,
    "empty": [],
    "no": False,
    "n": 3,
    "text": "2.11.0",
}


def refs(ledger: Ledger) -> tuple[Ref, Ref, Ref]:
    fid = ledger.append(Fact(probe="p", target="local", value=VALUES)).id
    return Ref(fact=fid, path=("null",)), Ref(fact=fid, path=("n",)), Ref(fact=fid, path=("text",))


def over(null: Ref, n: Ref, text: Ref) -> list[object]:
    """Every predicate, with the null value as (one of) its operands."""
    return [
        Equal(a=null, value=False),
        Equal(a=null, b=n),
        Differs(a=null, value=3),
        VersionDiffers(a=null, b=text),
        VersionDiffers(a=null, b=null),
        Contains(a=null, item="x"),
        Matches(a=null, pattern="."),
        AtLeast(a=null, value=1),
        AtMost(a=null, value=1),
        RatioBelow(a=null, b=n, ratio=0.5),
        RatioAtLeast(a=n, b=null, ratio=0.5),
        Greater(a=null, b=n),
        NotBefore(a=n, b=null),
        WindowRatio(a=null, series=(("v",),), before=(0, 1), after=(2, 3), ratio=0.8),
        Exists(a=null),
        Absent(a=null),
    ]


def test_every_predicate_on_a_null_is_unverifiable() -> None:
    """Every predicate with a null operand is unverifiable: a value nobody observed neither holds
    nor fails."""
    ledger = Ledger()
    preds = over(*refs(ledger))
    assert {type(p) for p in preds} == set(PREDICATES)
    for pred in preds:
        verdict = check(Claim.model_validate({"predicate": pred}), ledger)
        assert verdict.outcome == "unverifiable", (pred, verdict)


@pytest.mark.parametrize(
    ("path", "predicate", "outcome"),
    [
        # Observed empties are observations: they decide.
        ("zero", Exists, "fails"),
        ("empty", Exists, "fails"),
        ("no", Exists, "fails"),
        ("zero", Absent, "holds"),
        ("empty", Absent, "holds"),
        ("n", Absent, "fails"),
        ("n", Exists, "holds"),
        # A key the fact does not have, and a null, are not.
        ("gone", Exists, "unverifiable"),
        ("gone", Absent, "unverifiable"),
        ("null", Exists, "unverifiable"),
        ("null", Absent, "unverifiable"),
    ],
)
def test_observed_empty_decides_unobserved_does_not(
    path: str, predicate: type[Exists] | type[Absent], outcome: str
) -> None:
    """An observed zero, empty list or False decides Exists and Absent; a missing key or a null does
    not, and the verdict names the fact and says which it was."""
    ledger = Ledger()
    fid = ledger.append(Fact(probe="p", target="local", value=VALUES)).id
    verdict = check(Claim(predicate=predicate(a=Ref(fact=fid, path=(path,)))), ledger)
    assert verdict.outcome == outcome, verdict
    if outcome == "unverifiable":
        assert fid in verdict.sentence
        assert "null" in verdict.sentence or "has no" in verdict.sentence


def fx_log(tmp_path: Path, ledger: Ledger) -> Fact:
    """torch's FX-trace error, as eval_frame.py raises it, ending two drafter threads."""
    lines = [f"step {i} loss 2.0" for i in range(1, 21)]
    for thread in ("drafter-1", "drafter-2"):
        lines += texts.thread_crash(thread, texts.FX_NESTED_TRACE)
    p = tmp_path / "console.log"
    p.write_text("\n".join(lines) + "\n")
    with io.FileIO(str(p), "r") as f:
        value = stdoutlog.scan(f)
    return ledger.append(Fact(probe="stdoutlog", target="local", value=value))


def pyenv(torch: str | None) -> Fact:
    return Fact(
        probe="pyenv",
        target="local",
        value={"python": "3.11.7", "key_packages": {"torch": torch, "triton": None}},
    )


SOURCE_OK = {"binds_check_at_wrap": {"value": True}, "holds_compiling_flag": {"value": False}}


@pytest.mark.parametrize(
    ("torch", "source", "status"),
    [
        # The interpreter probed has torch: the race is verified.
        ("2.11.0+cu130", SOURCE_OK, "verified"),
        # It has none: pyenv's torch is null and torch_source could not read torch. The
        # errors are in the log, nothing observed contradicts them: open, not refuted.
        (None, None, "unverifiable"),
        (None, SOURCE_OK, "unverifiable"),
        # torch_source observed that the wrappers do not bind the check: that refutes.
        ("2.11.0+cu130", {"binds_check_at_wrap": {"value": False}}, "refuted"),
    ],
)
def test_the_fx_race_without_the_trainers_torch_is_open_not_refuted(
    tmp_path: Path, torch: str | None, source: dict[str, object] | None, status: str
) -> None:
    """The FX-trace race stays open (unverifiable) when the probed interpreter has no torch; only
    torch_source observing that the wrappers do not bind the check refutes it."""
    ledger = Ledger()
    log = fx_log(tmp_path, ledger)
    env = ledger.append(pyenv(torch))
    src = ledger.append(
        Fact(probe="torch_source", target="local", value=source)
        if source is not None
        else Fact(
            probe="torch_source",
            target="local",
            error="unavailable: torch is not installed for /usr/bin/python3",
        )
    )
    evidence = Evidence(ledger, [log.id, env.id, src.id])
    (found,) = [verify(h, ledger) for h in FxTraceRace().propose(evidence)]
    assert found.status == status, [(v.outcome, v.sentence) for v in found.verdicts]
