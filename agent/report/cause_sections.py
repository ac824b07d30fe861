"""The report's sections on the causes weighed: a drop no known cause explains, each
hypothesis in rank order, the proposals refused, the families set aside or checked, and
the fix a verified fault unlocked.

Like every section of a report, each line is a claim verdict, a cited value or a fact
listing (``agent.report.build`` says why).
"""

from __future__ import annotations

from agent.analysis import symptoms as symptoms_layer
from agent.graph.state import DiagnosisState
from agent.model.facts import Ledger
from agent.model.hypotheses import TITLES, Hypothesis
from agent.report.model import Line, Section


def unexplained_section(state: DiagnosisState, ledger: Ledger) -> Section | None:
    """The unexplained-symptom verdict as its own answer: the drop, what differs since it
    worked, why each family that would explain a drop does not, and what would decide."""
    drops = symptoms_layer.unexplained(state.symptoms)
    if state.verdict != "unexplained_symptom" or not drops:
        return None
    lines = [_what_differs(state)]
    by_kind: dict[str, Hypothesis] = {h.kind: h for h in state.hypotheses}
    for kind in sorted(symptoms_layer.EXPLAINS_DROP):
        if (state.focus and kind not in state.focus) or (
            kind not in by_kind and kind not in state.examined
        ):
            continue  # a family this diagnosis did not run says nothing here
        lines.append(_why_not(state, kind, by_kind.get(kind)))
    decide = sorted({p.probe for h in state.hypotheses for p in h.predictions})
    decide += sorted({ledger.get(i).probe for i in state.facts if not ledger.get(i).ok})
    if decide:
        lines.append(
            Line(
                text="would decide: " + ", ".join(dict.fromkeys(decide)),
                cites=[i for i in state.facts if not ledger.get(i).ok],
            )
        )
    return Section(
        title=f"{drops[0].headline()}: no known cause explains it",
        lines=lines,
        kind="unexplained",
    )


def _what_differs(state: DiagnosisState) -> Line:
    changed = [d for d in state.diff if d.differs]
    if changed:
        return Line(
            text="what differs since it worked: " + ", ".join(d.label for d in changed),
            cites=sorted({c for d in changed for c in (d.baseline.fact, d.current.fact)}),
        )
    if state.diff:
        return Line(
            text=f"none of the {len(state.diff)} compared quantities differs since it worked",
            cites=sorted({c for d in state.diff for c in (d.baseline.fact, d.current.fact)}),
        )
    return Line(text="nothing could be compared with a state in which it worked", cites=[])


def _why_not(state: DiagnosisState, kind: str, hyp: Hypothesis | None) -> Line:
    """Why the family ``kind`` (its hypothesis ``hyp``, if one was formed) does not
    explain the drop."""
    aside = state.not_applicable
    if hyp is None and aside is not None and kind in aside.kinds:
        return Line(
            text=f"{TITLES[kind]}: not applicable, the run does not compile",
            cites=sorted({c for v in aside.verdicts for c in v.cites}),
        )
    if hyp is None:
        return Line(
            text=f"{TITLES[kind]}: no hypothesis formed from its facts",
            cites=list(state.examined.get(kind, [])),
        )
    failed = next((v for v in hyp.verdicts if v.outcome == "fails"), None)
    late = next((v for v in hyp.timing if v.outcome == "fails"), None)
    if failed is not None:
        why, cites = f"refuted: {failed.stated()}", list(failed.cites)
    elif late is not None:
        why, cites = f"dated before the drop: {late.stated()}", list(late.cites)
    else:
        why, cites = hyp.status, hyp.cites
    return Line(text=f"{TITLES[kind]}: {why}", cites=cites, outcome="info")


def hypothesis_sections(state: DiagnosisState) -> list[Section]:
    """One section per hypothesis, in the order ``hypotheses.rank`` put them."""
    drops = {
        s.headline(): s.explained_by
        for s in state.symptoms
        if s.kind == "throughput_drop" and s.subject and s.status == "verified"
    }
    return [
        _hypothesis_section(state, rank, hyp, drops)
        for rank, hyp in enumerate(state.hypotheses, start=1)
    ]


def _hypothesis_section(
    state: DiagnosisState, rank: int, hyp: Hypothesis, drops: dict[str, tuple[str, ...]]
) -> Section:
    """A hypothesis's claims, its rank, what it still predicts and what it explains of
    ``drops`` (each verified drop's headline, with the families that explain it)."""
    lines = [Line(text=v.stated(), cites=list(v.cites), outcome=v.outcome) for v in hyp.verdicts]
    # Why this one sits here: the same numbers ``hypotheses.rank`` sorts by.
    lines.append(
        Line(
            text=f"rank {rank}: {hyp.status}, {hyp.holding()} of {len(hyp.verdicts)} "
            f"claims hold, weight {hyp.weight}",
            cites=[],
        )
    )
    lines += [
        Line(text=f"not yet checked: {p.expect} (probe: {p.probe})", cites=[])
        for p in hyp.predictions
    ]
    lines += [
        Line(text=f"timing: {v.stated()}", cites=list(v.cites), outcome=v.outcome)
        for v in hyp.timing
    ]
    lines += [
        Line(text=f"explains the symptom: {head}", cites=[])
        for head, kinds in drops.items()
        if hyp.status == "verified" and hyp.kind in kinds
    ]
    if hyp.status == "verified" and not symptoms_layer.is_fault(hyp, state.symptoms):
        lines.append(
            Line(
                text="no fault on its own: it would explain a slowdown or a stall, and "
                "the run shows neither (what the run does, not what is wrong)",
                cites=[],
            )
        )
    if hyp.status == "verified" and hyp.timing_fit() == "does_not_fit":
        lines.append(
            Line(text="explains no drop: its evidence is dated before the drop began", cites=[])
        )
    unlocked = state.offered_for.get(hyp.kind, []) if hyp.status == "verified" else []
    if unlocked:
        # What verify offers (the playbooks' own ``requires``), not the rule's wish.
        lines.append(Line(text=f"unlocks playbooks: {', '.join(unlocked)}", cites=[]))
    if hyp.source != "rule":
        lines.append(Line(text=f"proposed by {hyp.source}", cites=[]))
    return Section(title=TITLES[hyp.kind], status=hyp.status, lines=lines, kind="hypothesis")


def refused_section(state: DiagnosisState) -> Section | None:
    if not state.refused:
        return None
    return Section(
        title="refused proposals",
        kind="refused",
        lines=[
            Line(text=f"{r.source}: {r.reason}", cites=[], outcome="rejected")
            for r in state.refused
        ],
    )


def not_applicable_section(state: DiagnosisState) -> Section | None:
    """The families set aside because the run does not compile, with the claims why."""
    aside = state.not_applicable
    if aside is None:
        return None
    return Section(
        title="not applicable: the run does not compile",
        kind="not_applicable",
        lines=[
            Line(
                text=", ".join(TITLES[k] for k in aside.kinds),
                cites=sorted({c for v in aside.verdicts for c in v.cites}),
            ),
            *(
                Line(text=v.stated(), cites=list(v.cites), outcome=v.outcome)
                for v in aside.verdicts
            ),
        ],
    )


def checked_section(state: DiagnosisState) -> Section | None:
    # "No fault found" is an answer only together with what was checked.
    if not state.examined or state.verdict is None:
        return None
    return Section(
        title="what was checked",
        kind="checked",
        lines=[
            Line(text=f"{kind}: {_what_was_formed(state, kind)}", cites=ids)
            for kind, ids in sorted(state.examined.items())
            if not state.focus or kind in state.focus
        ],
    )


def _what_was_formed(state: DiagnosisState, kind: str) -> str:
    if n := sum(h.kind == kind for h in state.hypotheses):
        return f"{n} hypothesis(es) formed"
    if state.not_applicable is not None and kind in state.not_applicable.kinds:
        return "not applicable (the run does not compile)"
    return "no hypothesis formed from its facts"


def plan_error_section(state: DiagnosisState) -> Section | None:
    if state.plan_error is None:
        return None
    return Section(
        title="fix not offered", lines=[Line(text=state.plan_error, cites=[])], kind="fix"
    )


def fix_section(state: DiagnosisState) -> Section | None:
    """The fix plan's steps and diffs, who approved it, what it did and its checks."""
    if state.plan is None:
        return None
    lines = [Line(text=f"step: {s}", cites=[]) for s in state.plan.steps]
    lines += [Line(text=f"diff of {c.path}:\n{c.diff}", cites=[]) for c in state.plan.changes]
    if state.plan_only:
        lines.append(Line(text="plan only: nothing was written", cites=[]))
    else:
        approval = "approved" if state.approved else "not approved"
        lines.append(Line(text=f"{approval} by {state.approved_by or 'nobody'}", cites=[]))
    if state.outcome is not None:
        lines.append(
            Line(text=f"{state.outcome.status}: {state.outcome.detail}", cites=state.outcome.facts)
        )
    lines += [
        Line(text=v.stated(), cites=list(v.cites), outcome=v.outcome) for v in state.verification
    ]
    return Section(title=f"fix: {state.plan.playbook}", lines=lines, kind="fix")
