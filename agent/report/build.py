"""A report built only from the final state and the ledger.

Every sentence in a report is either a claim verdict (rendered by ``agent.model.claims`` from
the predicate and the cited values), a diff entry (two cited values), or a fact listing
(the command that produced it). Titles name a hypothesis kind or a section; they assert
nothing. There is no place here for free text about the target.
"""

from __future__ import annotations

import shlex

from agent.graph.state import DiagnosisState
from agent.model.claims import ClaimVerdict
from agent.model.facts import Ledger, latest, observed
from agent.model.hypotheses import Hypothesis
from agent.report.cause_sections import (
    checked_section,
    fix_section,
    hypothesis_sections,
    not_applicable_section,
    plan_error_section,
    refused_section,
    unexplained_section,
)
from agent.report.model import (
    VERDICT_TEXT,
    ClaimDoc,
    FactDoc,
    HypothesisDoc,
    Line,
    Report,
    Section,
)
from agent.report.run_sections import (
    interrupted_section,
    missing_evidence,
    since_it_worked,
    symptoms_section,
)


def build_report(state: DiagnosisState, ledger: Ledger, session: str) -> Report:
    return Report(
        target=state.target,
        session=session,
        verdict=VERDICT_TEXT.get(state.verdict or "", "not yet decided"),
        hypotheses=[_hypothesis_doc(h) for h in state.hypotheses],
        sections=_sections(state, ledger),
        facts=_fact_docs(state, ledger),
    )


def _sections(state: DiagnosisState, ledger: Ledger) -> list[Section]:
    """The report's sections in reading order: what the run did, then the causes weighed,
    then how the facts were observed and the fix; a section with nothing to say is left out."""
    sections = [
        symptoms_section(state, ledger),
        # With a snapshot, the run's own record is shown too: the snapshot may be older
        # than the state in which the run last worked, and the two can disagree.
        since_it_worked(state, ledger, state.diff, state.baseline),
        since_it_worked(state, ledger, state.derived_diff, None),
        interrupted_section(state, ledger),
        missing_evidence(state, ledger),
        unexplained_section(state, ledger),
        *hypothesis_sections(state),
        refused_section(state),
        not_applicable_section(state),
        checked_section(state),
        _probed_with(state, ledger),
        _unobserved(state, ledger),
        plan_error_section(state),
        fix_section(state),
    ]
    return [s for s in sections if s is not None]


def _probed_with(state: DiagnosisState, ledger: Ledger) -> Section | None:
    """Which Python the facts came from, and why that one: discovered or given."""
    python = observed(latest(ledger, state.facts, "interpreter"))
    if python is None or not isinstance(python.value, dict):
        return None
    chosen = python.value
    candidates = chosen.get("candidates")
    looked = len(candidates) if isinstance(candidates, list) else 0
    return Section(
        title="probed with",
        kind="probed_with",
        lines=[
            Line(
                text=f"the target's Python {chosen.get('path')}: {chosen.get('chosen_because')}"
                + (f" ({looked} candidate(s) looked at)" if looked else ""),
                cites=[python.id],
            )
        ],
    )


def _unobserved(state: DiagnosisState, ledger: Ledger) -> Section | None:
    failed = [ledger.get(i) for i in state.facts if not ledger.get(i).ok]
    if not failed:
        return None
    return Section(
        title="could not observe",
        kind="unobserved",
        lines=[Line(text=f"{f.probe}: {f.error}", cites=[f.id]) for f in failed],
    )


def _fact_docs(state: DiagnosisState, ledger: Ledger) -> list[FactDoc]:
    return [
        FactDoc(
            id=f.id,
            baseline=baseline,
            probe=f.probe + (" (baseline)" if baseline else ""),
            command=shlex.join(f.argv)
            if f.argv
            else f"(observed by {f.probe.split(':', 1)[-1]}; its commands are in the transcript)",
            rc=f.rc,
            error=f.error,
            value=f.value,
        )
        for f, baseline in ((ledger.get(i), alone) for i, alone in state.fact_ids())
    ]


def _hypothesis_doc(h: Hypothesis) -> HypothesisDoc:
    return HypothesisDoc(
        kind=h.kind,
        status=h.status,
        source=h.source,
        claims=[_claim_doc(v) for v in h.verdicts],
    )


def _claim_doc(v: ClaimVerdict) -> ClaimDoc:
    return ClaimDoc(text=v.stated(), cites=list(v.cites), status=v.outcome)
