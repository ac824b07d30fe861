"""A report built only from the final state and the ledger.

Every sentence in a report is either a claim verdict (rendered by ``agent.model.claims`` from
the predicate and the cited values), a diff entry (two cited values), or a fact listing
(the command that produced it). Titles name a hypothesis kind or a section; they assert
nothing. There is no place here for free text about the target.
"""

from __future__ import annotations

import math
import shlex

from agent.analysis import applies, timing
from agent.analysis import symptoms as symptoms_layer
from agent.analysis.baseline import DiffEntry
from agent.analysis.throughput import subject
from agent.graph.state import DiagnosisState
from agent.model.claims import ClaimVerdict
from agent.model.facts import Ledger, latest, observed
from agent.model.hypotheses import TITLES, Hypothesis
from agent.report.model import (
    VERDICT_TEXT,
    ClaimDoc,
    FactDoc,
    HypothesisDoc,
    Line,
    Report,
    Section,
)


def _symptom_lines(state: DiagnosisState, ledger: Ledger) -> list[Line]:
    """What the run did over time, each symptom with the claims it was checked by."""
    lines: list[Line] = []
    for s in state.symptoms:
        # A refuted steady claim has its own headline (which way the last quarter went).
        if s.status == "verified" or (s.kind == "throughput_steady" and s.status == "refuted"):
            head = s.headline()
        else:
            head = f"{s.headline()}: {s.status}"
        lines.append(
            Line(
                text=head if s.status != "verified" else f"{head} (verified)",
                cites=sorted({c for v in s.verdicts for c in v.cites}),
                outcome="holds" if s.status == "verified" else "info",
            )
        )
        lines += [Line(text=v.sentence, cites=list(v.cites), outcome=v.outcome) for v in s.verdicts]
        if (
            s.kind == "throughput_drop"
            and s.subject
            and s.status == "verified"
            and state.verdict is not None
        ):
            lines.append(
                Line(
                    text="explained by: " + ", ".join(TITLES[k] for k in s.explained_by)
                    if s.explained_by
                    else "no verified family explains it",
                    cites=[],
                )
            )
        if s is timing.subject_drop(state.symptoms):
            # What the console printed around the change, dated against it.
            lines += [
                Line(text=f"around the change: {text}", cites=cites)
                for text, cites in timing.context_lines(ledger, state.facts, s)
            ]
    # Where the console says the run or a worker died, whether or not it got slower.
    lines += [
        Line(text=text, cites=cites) for text, cites in timing.crash_lines(ledger, state.facts)
    ]
    newest = latest(ledger, state.facts, "trainlog")
    log = observed(newest)
    if log is not None and isinstance(log.value, dict):
        steps = log.value.get("steps")
        last = steps.get("max") if isinstance(steps, dict) else None
        if last is not None:
            lines.append(Line(text=f"last step logged: {last}", cites=[log.id]))
        if not state.symptoms and subject(log) is None:
            # Many trainers log no speed per step (a Trainer's log_history, Lightning's
            # metrics.csv without a throughput callback): say so, and what the parser saw.
            schema = log.value.get("schema")
            reasons = schema.get("why") if isinstance(schema, dict) else None
            why = reasons.get("throughput") if isinstance(reasons, dict) else None
            lines.append(
                Line(
                    text=f"the train log [{log.id}] holds no throughput"
                    + (f" ({why})" if why else "")
                    + ": the run's speed over time is unknown",
                    cites=[log.id],
                )
            )
        elif not state.symptoms:
            windows = log.value.get("windows")
            count = len(windows) if isinstance(windows, list) else 0
            lines.append(
                Line(
                    text=f"no trend read: {count} train-log window(s), too few for a change "
                    "point or a steady claim",
                    cites=[log.id],
                )
            )
    elif newest is not None and not newest.ok:
        lines.append(
            Line(
                text=f"the train log could not be read ({newest.error or 'probe failed'}): "
                "the run's behaviour over time is unknown",
                cites=[newest.id],
                outcome="unverifiable",
            )
        )
    elif newest is None:
        lines.append(
            Line(text="no train-log fact: the run's behaviour over time is unknown", cites=[])
        )
    return lines


def _show(value: object) -> str:
    """A diff value as a person reads it: 4,298 tok/s, not 4298.210052107709."""
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.4g}"
    return repr(value)


def _since_it_worked(
    state: DiagnosisState, ledger: Ledger, entries: list[DiffEntry], snapshot: str | None
) -> Section | None:
    """A baseline diff (the snapshot's, or the run's own record), what differs first; the
    unchanged entries folded into a count."""
    if not entries:
        return None
    changed = [d for d in entries if d.differs]
    same = [d for d in entries if not d.differs]
    lines = [
        Line(
            text=f"{d.label}: {_show(d.baseline_value)} [{d.baseline.fact}] → "
            f"{_show(d.current_value)} [{d.current.fact}]",
            cites=sorted({d.baseline.fact, d.current.fact}),
        )
        for d in changed
    ]
    if same:
        lines.append(
            Line(
                text=f"{len(same)} compared quantit{'y' if len(same) == 1 else 'ies'} unchanged: "
                + ", ".join(d.label for d in same),
                cites=sorted({c for d in same for c in (d.baseline.fact, d.current.fact)}),
            )
        )
    base = f"baseline {snapshot}" if snapshot else "derived baseline"
    drop = timing.subject_drop(state.symptoms)
    if drop is not None and drop.began is not None and drop.began_step is not None:
        # What "when it worked" is: the state before the change the drop began at; without
        # a snapshot, the checkpoint the derived baseline read (agent.analysis.diff_keys).
        began = f"the change at step {drop.began_step:,.0f} [{drop.began.fact}]"
        for name, step, fact in timing.baseline_checkpoints([d.baseline for d in entries], ledger):
            if isinstance(step, int | float):
                when = "at or before" if step <= drop.began_step else "after"
                said = f"checkpoint {name}, written at step {step:,.0f} [{fact}], {when} {began}"
            else:
                said = f"checkpoint {name} [{fact}], whose step is not known, against {began}"
            lines.insert(
                0, Line(text=f"derived baseline: {said}", cites=sorted({fact, drop.began.fact}))
            )
    return Section(
        title=f"since it worked ({base}): {len(changed)} changed", lines=lines, kind="changes"
    )


def _missing_evidence(state: DiagnosisState, ledger: Ledger) -> list[Line]:
    """Why facts a family needs are missing, with what would supply them: the probed
    Python without torch is the common case (the wrong interpreter was probed)."""
    fact = observed(latest(ledger, state.facts, "pyenv"))
    if fact is None or not isinstance(fact.value, dict):
        return []
    packages = fact.value.get("key_packages")
    python = fact.value.get("python")
    exe = python.get("executable") if isinstance(python, dict) else None
    if not (isinstance(packages, dict) and "torch" in packages and packages["torch"] is None):
        return []
    return [
        Line(
            text=f"the probed Python {exe or '(unnamed)'} has no torch installed "
            f"(key_packages.torch is null) [{fact.id}]: the torch facts are missing; "
            "name the trainer's Python with --interpreter PATH or the profile's "
            'interpreter = "PATH"',
            cites=[fact.id],
            outcome="unverifiable",
        )
    ]


def _unexplained(state: DiagnosisState, ledger: Ledger) -> Section | None:
    """The unexplained-symptom verdict as its own answer: the drop, what differs since it
    worked, why each family that would explain a drop does not, and what would decide."""
    drops = symptoms_layer.unexplained(state.symptoms)
    if state.verdict != "unexplained_symptom" or not drops:
        return None
    drop = drops[0]
    changed = [d for d in state.diff if d.differs]
    if changed:
        lines = [
            Line(
                text="what differs since it worked: " + ", ".join(d.label for d in changed),
                cites=sorted({c for d in changed for c in (d.baseline.fact, d.current.fact)}),
            )
        ]
    elif state.diff:
        lines = [
            Line(
                text=f"none of the {len(state.diff)} compared quantities differs since it worked",
                cites=sorted({c for d in state.diff for c in (d.baseline.fact, d.current.fact)}),
            )
        ]
    else:
        lines = [Line(text="nothing could be compared with a state in which it worked", cites=[])]
    by_kind: dict[str, Hypothesis] = {h.kind: h for h in state.hypotheses}
    for kind in sorted(symptoms_layer.EXPLAINS_DROP):
        if (state.focus and kind not in state.focus) or (
            kind not in by_kind and kind not in state.examined
        ):
            continue  # a family this diagnosis did not run says nothing here
        hyp = by_kind.get(kind)
        aside = state.not_applicable
        if hyp is None and aside is not None and kind in aside.kinds:
            lines.append(
                Line(
                    text=f"{TITLES[kind]}: not applicable, the run does not compile",
                    cites=sorted({c for v in aside.verdicts for c in v.cites}),
                )
            )
            continue
        if hyp is None:
            looked = state.examined.get(kind, [])
            lines.append(
                Line(
                    text=f"{TITLES[kind]}: no hypothesis formed from its facts",
                    cites=list(looked),
                )
            )
            continue
        failed = next((v for v in hyp.verdicts if v.outcome == "fails"), None)
        late = next((v for v in hyp.timing if v.outcome == "fails"), None)
        if failed is not None:
            why, cites = f"refuted: {failed.sentence}", list(failed.cites)
        elif late is not None:
            why, cites = f"dated before the drop: {late.sentence}", list(late.cites)
        else:
            why, cites = hyp.status, hyp.cites
        lines.append(Line(text=f"{TITLES[kind]}: {why}", cites=cites, outcome="info"))
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
        title=f"{drop.headline()}: no known cause explains it", lines=lines, kind="unexplained"
    )


def build_report(state: DiagnosisState, ledger: Ledger, session: str) -> Report:
    sections: list[Section] = [
        Section(title="symptoms", lines=_symptom_lines(state, ledger), kind="symptoms")
    ]
    # With a snapshot, the run's own record is shown too: the snapshot may be older than
    # the state in which the run last worked, and the two can disagree.
    for entries, snapshot in ((state.diff, state.baseline), (state.derived_diff, None)):
        since = _since_it_worked(state, ledger, entries, snapshot)
        if since is not None:
            sections.append(since)
    halted = applies.interrupted(ledger, state.facts)
    if halted:
        lines = [Line(text=text, cites=cites) for text, cites in halted]
        sections.append(Section(title=applies.TITLE, lines=lines, kind="applies"))
    missing = _missing_evidence(state, ledger)
    if missing:
        sections.append(Section(title="missing evidence", lines=missing, kind="missing"))
    unexplained = _unexplained(state, ledger)
    if unexplained is not None:
        sections.append(unexplained)
    verdict = VERDICT_TEXT.get(state.verdict or "", "not yet decided")
    drops = {
        s.headline(): s.explained_by
        for s in state.symptoms
        if s.kind == "throughput_drop" and s.subject and s.status == "verified"
    }
    for rank, hyp in enumerate(state.hypotheses, start=1):
        lines = [
            Line(text=v.sentence, cites=list(v.cites), outcome=v.outcome) for v in hyp.verdicts
        ]
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
            Line(text=f"timing: {v.sentence}", cites=list(v.cites), outcome=v.outcome)
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
                Line(
                    text="explains no drop: its evidence is dated before the drop began",
                    cites=[],
                )
            )
        unlocked = state.offered_for.get(hyp.kind, []) if hyp.status == "verified" else []
        if unlocked:
            # What verify offers (the playbooks' own ``requires``), not the rule's wish.
            lines.append(Line(text=f"unlocks playbooks: {', '.join(unlocked)}", cites=[]))
        if hyp.source != "rule":
            lines.append(Line(text=f"proposed by {hyp.source}", cites=[]))
        sections.append(
            Section(title=TITLES[hyp.kind], status=hyp.status, lines=lines, kind="hypothesis")
        )
    if state.refused:
        sections.append(
            Section(
                title="refused proposals",
                kind="refused",
                lines=[
                    Line(text=f"{r.source}: {r.reason}", cites=[], outcome="rejected")
                    for r in state.refused
                ],
            )
        )
    if state.not_applicable is not None:
        aside = state.not_applicable
        sections.append(
            Section(
                title="not applicable: the run does not compile",
                kind="not_applicable",
                lines=[
                    Line(
                        text=", ".join(TITLES[k] for k in aside.kinds),
                        cites=sorted({c for v in aside.verdicts for c in v.cites}),
                    ),
                    *(
                        Line(text=v.sentence, cites=list(v.cites), outcome=v.outcome)
                        for v in aside.verdicts
                    ),
                ],
            )
        )
    if state.examined and state.verdict is not None:
        # "No fault found" is an answer only together with what was checked.
        sections.append(
            Section(
                title="what was checked",
                kind="checked",
                lines=[
                    Line(
                        text=f"{kind}: "
                        + (
                            f"{n} hypothesis(es) formed"
                            if (n := sum(h.kind == kind for h in state.hypotheses))
                            else "not applicable (the run does not compile)"
                            if state.not_applicable is not None
                            and kind in state.not_applicable.kinds
                            else "no hypothesis formed from its facts"
                        ),
                        cites=ids,
                    )
                    for kind, ids in sorted(state.examined.items())
                    if not state.focus or kind in state.focus
                ],
            )
        )
    python = observed(latest(ledger, state.facts, "interpreter"))
    if python is not None and isinstance(python.value, dict):
        # Which Python the facts came from, and why that one: discovered or given.
        chosen = python.value
        candidates = chosen.get("candidates")
        looked = len(candidates) if isinstance(candidates, list) else 0
        sections.append(
            Section(
                title="probed with",
                kind="probed_with",
                lines=[
                    Line(
                        text=f"the target's Python {chosen.get('path')}: "
                        f"{chosen.get('chosen_because')}"
                        + (f" ({looked} candidate(s) looked at)" if looked else ""),
                        cites=[python.id],
                    )
                ],
            )
        )
    failed = [ledger.get(i) for i in state.facts if not ledger.get(i).ok]
    if failed:
        sections.append(
            Section(
                title="could not observe",
                kind="unobserved",
                lines=[Line(text=f"{f.probe}: {f.error}", cites=[f.id]) for f in failed],
            )
        )
    if state.plan_error is not None:
        sections.append(
            Section(
                title="fix not offered",
                lines=[Line(text=state.plan_error, cites=[])],
                kind="fix",
            )
        )
    if state.plan is not None:
        plan_lines = [Line(text=f"step: {s}", cites=[]) for s in state.plan.steps]
        plan_lines += [
            Line(text=f"diff of {c.path}:\n{c.diff}", cites=[]) for c in state.plan.changes
        ]
        if state.plan_only:
            plan_lines.append(Line(text="plan only: nothing was written", cites=[]))
        else:
            approval = "approved" if state.approved else "not approved"
            plan_lines.append(Line(text=f"{approval} by {state.approved_by or 'nobody'}", cites=[]))
        if state.outcome is not None:
            plan_lines.append(
                Line(
                    text=f"{state.outcome.status}: {state.outcome.detail}",
                    cites=state.outcome.facts,
                )
            )
        plan_lines += [
            Line(text=v.sentence, cites=list(v.cites), outcome=v.outcome)
            for v in state.verification
        ]
        sections.append(Section(title=f"fix: {state.plan.playbook}", lines=plan_lines, kind="fix"))
    facts = [
        FactDoc(
            id=f.id,
            baseline=f.id in state.baseline_facts and f.id not in state.facts,
            probe=f.probe + (" (baseline)" if f.id in state.baseline_facts else ""),
            command=shlex.join(f.argv)
            if f.argv
            else f"(observed by {f.probe.split(':', 1)[-1]}; its commands are in the transcript)",
            rc=f.rc,
            error=f.error,
            value=f.value,
        )
        for f in (ledger.get(i) for i in [*state.facts, *state.baseline_facts])
    ]
    hypotheses = [
        HypothesisDoc(
            kind=h.kind,
            status=h.status,
            source=h.source,
            claims=[_claim_doc(v) for v in h.verdicts],
        )
        for h in state.hypotheses
    ]
    return Report(
        target=state.target,
        session=session,
        verdict=verdict,
        hypotheses=hypotheses,
        sections=sections,
        facts=facts,
    )


def _claim_doc(v: ClaimVerdict) -> ClaimDoc:
    return ClaimDoc(text=v.sentence, cites=list(v.cites), status=v.outcome)
