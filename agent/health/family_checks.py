"""The checks of a health result on what the probes and the rule families found: the
sweep answered, no apply of the doctor's left unfinished, each family's verdict; and the
facts a result cites, with the commands that produced them.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from typing import Literal

from agent.analysis import applies
from agent.analysis.symptoms import is_fault
from agent.graph.state import DiagnosisState
from agent.health.model import APPLIES_CHECK, SWEEP_CHECK, Check, Cited, CitedFact
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import TITLES, Hypothesis
from agent.rules.base import Rule


def sweep_check(facts: list[Fact]) -> Check:
    """How many probes answered, and which could not observe: an error when none did."""
    failed = [f for f in facts if not f.ok]
    lines = [Cited(text=f"{f.probe}: {f.error}", cites=[f.id]) for f in failed]
    if facts and len(failed) == len(facts):
        return Check(
            name=SWEEP_CHECK,
            title="probe sweep",
            status="error",
            message=f"no probe answered: {failed[0].error}",
            lines=lines,
        )
    message = f"{len(facts) - len(failed)} of {len(facts)} probes answered"
    if failed:
        message += f"; could not observe: {', '.join(f.probe for f in failed)}"
    return Check(
        name=SWEEP_CHECK, title="probe sweep", status="passed", message=message, lines=lines
    )


def apply_check(ledger: Ledger, state: DiagnosisState) -> Check:
    """An apply of the doctor's that never ended leaves the target half changed: a
    regression until its recovery runs (the next fix plan is that recovery)."""
    halted = applies.interrupted(ledger, state.facts)
    if not halted:
        return Check(
            name=APPLIES_CHECK,
            title=applies.TITLE,
            status="passed",
            message="no apply left unfinished",
        )
    # An apply under way restarts the trainer: nothing about this run is decided.
    under_way = applies.in_progress(ledger, state.facts)
    return Check(
        name=APPLIES_CHECK,
        title=applies.TITLE,
        status="error" if under_way else "failed",
        message=halted[0][0],
        lines=[Cited(text=text, cites=cites) for text, cites in halted],
    )


def _lines(hypotheses: Iterable[Hypothesis]) -> list[Cited]:
    return [
        Cited(text=v.stated(), cites=list(v.cites), outcome=v.outcome)
        for h in hypotheses
        for v in h.verdicts
    ]


def family_checks(state: DiagnosisState, rules: Sequence[Rule]) -> list[Check]:
    """One check per rule family: failed by a fault, an error when a claim could not be
    decided, else passed (refuted, verified yet no fault on its own, or nothing proposed)."""
    checks = []
    for rule in rules:
        found = [h for h in state.hypotheses if h.kind == rule.kind]
        status, message, shown = _family_outcome(found, state)
        checks.append(
            Check(
                name=rule.kind,
                title=TITLES[rule.kind],
                status=status,
                message=message,
                lines=_lines(shown),
            )
        )
    return checks


def _family_outcome(
    found: list[Hypothesis], state: DiagnosisState
) -> tuple[Literal["failed", "error", "passed"], str, list[Hypothesis]]:
    """A family's check from its hypotheses: its status, why, and whose claims it shows."""
    statuses = {h.status for h in found}
    faults = [h for h in found if is_fault(h, state.symptoms)]
    if faults:
        return "failed", "verified: every claim holds on its cited facts", faults
    if statuses & {"unverifiable", "untested"}:
        why = "unverifiable: a claim cites a failed observation or a missing value"
        return "error", why, found
    if "verified" in statuses:
        why = (
            "verified, and no fault on its own: it would explain a slowdown or a stall,"
            " and the run shows neither"
        )
        return "passed", why, [h for h in found if h.status == "verified"]
    if found:
        return "passed", "refuted: a claim fails on its cited facts", found
    return "passed", "no hypothesis proposed from the facts", []


def cited_facts(ledger: Ledger, state: DiagnosisState, cited: set[str]) -> list[CitedFact]:
    """The facts of ``cited``, the run's in the order gathered, then the baseline's."""
    order = [*state.facts, *state.baseline_facts]
    out = []
    for fact_id in dict.fromkeys(order):
        if fact_id not in cited or fact_id not in ledger:
            continue
        fact = ledger.get(fact_id)
        out.append(
            CitedFact(
                id=fact.id,
                probe=fact.probe,
                command=shlex.join(fact.argv),
                baseline=fact_id in state.baseline_facts and fact_id not in state.facts,
            )
        )
    return out
