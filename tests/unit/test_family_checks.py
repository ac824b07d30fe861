"""The checks of a health result built from what the probes and rule families found
(``agent.health.family_checks``): the sweep answered, no apply of the doctor's was left
unfinished, one check per family with its verdict lines, and the cited facts with the
commands that produced them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from agent.analysis.symptoms import Symptom
from agent.graph.state import DiagnosisState
from agent.health.family_checks import apply_check, cited_facts, family_checks, sweep_check
from agent.health.model import CitedFact
from agent.model.claims import ClaimVerdict
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, Kind, Status
from agent.rules.base import Evidence


@dataclass
class StubRule:
    """A rule family that proposes nothing: ``family_checks`` reads only its kind."""

    kind: Kind
    needs: frozenset[str] = field(default_factory=frozenset)

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        return []


def fact(probe: str, *, error: str | None = None, value: Any = None) -> Fact:
    return Fact(
        probe=probe,
        target="local",
        argv=("cat", f"/w/{probe} log"),
        rc=1 if error else 0,
        error=error,
        value=value,
    )


def hypothesis(kind: Kind, status: Status, sentence: str, *, alone: bool = True) -> Hypothesis:
    verdict = ClaimVerdict(
        outcome="holds" if status == "verified" else "fails",
        sentence=sentence,
        cites=("F-1",),
    )
    return Hypothesis(kind=kind, claims=(), status=status, verdicts=(verdict,), fault_alone=alone)


def test_a_sweep_with_every_probe_answering_passes_and_counts_them() -> None:
    """All probes answered: passed, "n of n probes answered", no lines."""
    check = sweep_check([fact("host"), fact("trainlog")])
    assert (check.name, check.title, check.status) == ("sweep", "probe sweep", "passed")
    assert (check.message, check.lines) == ("2 of 2 probes answered", [])


def test_a_sweep_with_some_probes_failing_passes_and_names_them() -> None:
    """Some probes could not observe: still passed (the rest answered); the message names
    them and each failure is a line citing its fact."""
    bad = fact("gpus", error="nvidia-smi: not found")
    check = sweep_check([fact("host"), bad, fact("trainlog")])
    assert check.status == "passed"
    assert check.message == "2 of 3 probes answered; could not observe: gpus"
    assert [(ln.text, ln.cites) for ln in check.lines] == [
        ("gpus: nvidia-smi: not found", [bad.id])
    ]


def test_a_sweep_where_no_probe_answered_is_an_error_quoting_the_first_failure() -> None:
    """Every probe failed: the sweep is an error, quoting the first failure."""
    check = sweep_check([fact("host", error="refused"), fact("gpus", error="timeout")])
    assert (check.status, check.message) == ("error", "no probe answered: refused")
    assert [ln.text for ln in check.lines] == ["host: refused", "gpus: timeout"]


def test_an_empty_sweep_is_not_an_error() -> None:
    """No facts at all is not "no probe answered": it passes with 0 of 0."""
    check = sweep_check([])
    assert (check.status, check.message) == ("passed", "0 of 0 probes answered")


def applies_state(value: dict[str, Any]) -> tuple[Ledger, DiagnosisState, Fact]:
    ledger = Ledger()
    f = ledger.append(fact("applies", value=value))
    return ledger, DiagnosisState(target="local", facts=[f.id]), f


def test_no_applies_fact_means_no_apply_left_unfinished() -> None:
    """Without an unfinished apply the check passes."""
    check = apply_check(Ledger(), DiagnosisState(target="local"))
    assert (check.name, check.status, check.message) == (
        "applies",
        "passed",
        "no apply left unfinished",
    )


def test_an_interrupted_apply_is_a_regression_citing_the_journal() -> None:
    """An apply whose journal says it was interrupted, with no live lock, fails the check:
    the message is the first sentence, and every sentence is a line citing the fact."""
    ledger, state, f = applies_state(
        {
            "journal": {
                "interrupted": True,
                "playbook": "pin_torch",
                "step": 2,
                "path": "/w/.doctor/journal",
                "backups": 3,
            }
        }
    )
    check = apply_check(ledger, state)
    assert check.status == "failed"
    assert check.message == (
        "an apply of pin_torch, stopped at step 2 and never ended (/w/.doctor/journal, "
        "3 backup(s)): the next fix plan on this target is its recovery"
    )
    assert [ln.cites for ln in check.lines] == [[f.id]]


def test_an_apply_still_under_way_is_undecided_not_a_regression() -> None:
    """An unfinished apply whose lock was touched within the lease may still be running:
    the check is an error (nothing about this run is decided), not a failure."""
    ledger, state, _ = applies_state(
        {
            "journal": {"interrupted": True, "playbook": "pin_torch", "step": 1},
            "lock": {"path": "/w/.doctor/lock", "age_s": 5},
        }
    )
    check = apply_check(ledger, state)
    assert check.status == "error"
    assert check.message == (
        "an apply of pin_torch is under way (step 1; its lock /w/.doctor/lock was touched 5s "
        "before this sweep)"
    )


def kinds(*names: Kind) -> list[StubRule]:
    return [StubRule(kind=k) for k in names]


def test_one_check_per_family_in_rule_order_with_its_title() -> None:
    """Each rule family gets a check, in the rules' order, titled by the family's title;
    a family with no hypothesis passes, saying none was proposed."""
    checks = family_checks(DiagnosisState(target="local"), kinds("script_changed", "crash_stated"))
    assert [(c.name, c.title, c.status, c.message, c.lines) for c in checks] == [
        (
            "script_changed",
            "training script or config changed since the known good state",
            "passed",
            "no hypothesis proposed from the facts",
            [],
        ),
        (
            "crash_stated",
            "crash with a stated cause",
            "passed",
            "no hypothesis proposed from the facts",
            [],
        ),
    ]


@pytest.mark.parametrize(
    ("statuses", "status", "message"),
    [
        (["verified"], "failed", "verified: every claim holds on its cited facts"),
        (["refuted", "verified"], "failed", "verified: every claim holds on its cited facts"),
        (
            ["unverifiable", "refuted"],
            "error",
            "unverifiable: a claim cites a failed observation or a missing value",
        ),
        (
            ["untested"],
            "error",
            "unverifiable: a claim cites a failed observation or a missing value",
        ),
        (["refuted"], "passed", "refuted: a claim fails on its cited facts"),
    ],
    ids=["verified", "one-of-two-verified", "unverifiable", "untested", "refuted"],
)
def test_a_familys_status_follows_its_hypotheses(
    statuses: list[Status], status: str, message: str
) -> None:
    """A verified fault fails the family; otherwise a claim that could not be decided makes
    it an error; a refuted family passes."""
    found = [hypothesis("script_changed", s, f"claim {i}") for i, s in enumerate(statuses)]
    state = DiagnosisState(target="local", hypotheses=found)
    (check,) = family_checks(state, kinds("script_changed"))
    assert (check.status, check.message) == (status, message)


def test_a_failed_family_shows_only_its_faults_lines() -> None:
    """A failed family's lines are the verdicts of the verified hypotheses, not the refuted
    ones beside them."""
    state = DiagnosisState(
        target="local",
        hypotheses=[
            hypothesis("script_changed", "refuted", "md5 same"),
            hypothesis("script_changed", "verified", "md5 differs"),
            hypothesis("crash_stated", "verified", "another family"),
        ],
    )
    (check,) = family_checks(state, kinds("script_changed"))
    assert [(ln.text, ln.cites, ln.outcome) for ln in check.lines] == [
        ("md5 differs", ["F-1"], "holds")
    ]


def test_a_verified_slowness_cause_on_a_run_that_did_not_slow_passes() -> None:
    """A cause of slowness verified on a run showing no slowdown nor stall is no fault on
    its own: the family passes and shows the verified claim."""
    state = DiagnosisState(
        target="local",
        hypotheses=[hypothesis("own_code_time", "verified", "sleep in step", alone=False)],
    )
    (check,) = family_checks(state, kinds("own_code_time"))
    assert check.status == "passed"
    assert check.message == (
        "verified, and no fault on its own: it would explain a slowdown or a stall, and the "
        "run shows neither"
    )
    assert [ln.text for ln in check.lines] == ["sleep in step"]


def test_the_same_cause_on_a_run_that_slowed_is_a_fault() -> None:
    """With a verified drop of the judged throughput, a verified cause of slowness fails."""
    drop = Symptom(
        kind="throughput_drop", series="s", subject=True, claims=(), status="verified", ratio=0.5
    )
    state = DiagnosisState(
        target="local",
        symptoms=[drop],
        hypotheses=[hypothesis("own_code_time", "verified", "sleep in step", alone=False)],
    )
    (check,) = family_checks(state, kinds("own_code_time"))
    assert check.status == "failed"


def test_cited_facts_are_the_runs_in_order_then_the_baselines() -> None:
    """Only cited facts are listed: the run's in the order gathered, then the baseline's
    (marked as such; one in both is the run's), each with its command shell-quoted; an id not
    in the ledger is left out."""
    ledger = Ledger()
    a, b, c, d = (ledger.append(fact(p)) for p in ("host", "trainlog", "gpus", "checksums"))
    state = DiagnosisState(target="local", facts=[b.id, a.id, c.id], baseline_facts=[d.id, a.id])
    listed = cited_facts(ledger, state, {a.id, b.id, d.id, "F-gone"})
    assert listed == [
        CitedFact(id=b.id, probe="trainlog", command="cat '/w/trainlog log'"),
        CitedFact(id=a.id, probe="host", command="cat '/w/host log'"),
        CitedFact(
            id=d.id,
            probe="checksums",
            command="cat '/w/checksums log'",
            baseline=True,
        ),
    ]
