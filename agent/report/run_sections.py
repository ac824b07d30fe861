"""The report's sections on what the run did: its symptoms over time, what differs since it
worked, an apply left unfinished, and evidence the families lack.

Like every section of a report, each line is a claim verdict, a cited value or a fact
listing (``agent.report.build`` says why).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from agent.analysis import applies, timing
from agent.analysis.baseline import DiffEntry
from agent.analysis.symptoms import Symptom
from agent.analysis.throughput import subject
from agent.graph.state import DiagnosisState
from agent.model.facts import Fact, Ledger, latest, observed
from agent.model.hypotheses import TITLES
from agent.report.model import Line, Section


def symptoms_section(state: DiagnosisState, ledger: Ledger) -> Section:
    """What the run did over time, each symptom with the claims it was checked by."""
    drop = timing.subject_drop(state.symptoms)
    lines = [line for s in state.symptoms for line in _symptom_lines(s, state, ledger, drop)]
    # Where the console says the run or a worker died, whether or not it got slower.
    lines += [
        Line(text=text, cites=cites) for text, cites in timing.crash_lines(ledger, state.facts)
    ]
    lines += _train_log_lines(state, ledger)
    return Section(title="symptoms", lines=lines, kind="symptoms")


def _symptom_lines(
    s: Symptom, state: DiagnosisState, ledger: Ledger, drop: Symptom | None
) -> list[Line]:
    """One symptom: its headline, its claims, what explains a drop, and (for ``drop``,
    the judged throughput's) the console lines around the change."""
    # A refuted steady claim has its own headline (which way the last quarter went).
    if s.status == "verified" or (s.kind == "throughput_steady" and s.status == "refuted"):
        head = s.headline()
    else:
        head = f"{s.headline()}: {s.status}"
    lines = [
        Line(
            text=head if s.status != "verified" else f"{head} (verified)",
            cites=sorted({c for v in s.verdicts for c in v.cites}),
            outcome="holds" if s.status == "verified" else "info",
        )
    ]
    lines += [Line(text=v.stated(), cites=list(v.cites), outcome=v.outcome) for v in s.verdicts]
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
    if s is drop:
        # What the console printed around the change, dated against it.
        lines += [
            Line(text=f"around the change: {text}", cites=cites)
            for text, cites in timing.context_lines(ledger, state.facts, s)
        ]
    return lines


def _train_log_lines(state: DiagnosisState, ledger: Ledger) -> list[Line]:
    """What the newest train log says of the run's course, or why it says nothing."""
    newest = latest(ledger, state.facts, "trainlog")
    log = observed(newest)
    if log is not None and isinstance(log.value, dict):
        return _read_log_lines(state, log, log.value)
    if newest is not None and not newest.ok:
        return [
            Line(
                text=f"the train log could not be read ({newest.error or 'probe failed'}): "
                "the run's behaviour over time is unknown",
                cites=[newest.id],
                outcome="unverifiable",
            )
        ]
    if newest is None:
        return [Line(text="no train-log fact: the run's behaviour over time is unknown", cites=[])]
    return []


def _read_log_lines(state: DiagnosisState, log: Fact, value: Mapping[str, object]) -> list[Line]:
    """The last step a read train log holds and, with no symptom found, why none was."""
    lines: list[Line] = []
    steps = value.get("steps")
    last = steps.get("max") if isinstance(steps, dict) else None
    if last is not None:
        lines.append(Line(text=f"last step logged: {last}", cites=[log.id]))
    if not state.symptoms and subject(log) is None:
        # Many trainers log no speed per step (a Trainer's log_history, Lightning's
        # metrics.csv without a throughput callback): say so, and what the parser saw.
        schema = value.get("schema")
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
        windows = value.get("windows")
        count = len(windows) if isinstance(windows, list) else 0
        lines.append(
            Line(
                text=f"no trend read: {count} train-log window(s), too few for a change "
                "point or a steady claim",
                cites=[log.id],
            )
        )
    return lines


def _show(value: object) -> str:
    """A diff value as a person reads it: 4,298 tok/s, not 4298.210052107709."""
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.4g}"
    return repr(value)


def since_it_worked(
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
    lines[:0] = _worked_when(state, ledger, entries)
    base = f"baseline {snapshot}" if snapshot else "derived baseline"
    return Section(
        title=f"since it worked ({base}): {len(changed)} changed", lines=lines, kind="changes"
    )


def _worked_when(state: DiagnosisState, ledger: Ledger, entries: list[DiffEntry]) -> list[Line]:
    """What "when it worked" is: the state before the change the drop began at; without
    a snapshot, the checkpoint the derived baseline read (agent.analysis.diff_keys)."""
    drop = timing.subject_drop(state.symptoms)
    if drop is None or drop.began is None or drop.began_step is None:
        return []
    began = f"the change at step {drop.began_step:,.0f} [{drop.began.fact}]"
    read = timing.baseline_checkpoints([d.baseline for d in entries], ledger)
    lines = []
    # The last checkpoint read is listed first.
    for name, step, fact in reversed(read):
        if isinstance(step, int | float):
            when = "at or before" if step <= drop.began_step else "after"
            said = f"checkpoint {name}, written at step {step:,.0f} [{fact}], {when} {began}"
        else:
            said = f"checkpoint {name} [{fact}], whose step is not known, against {began}"
        lines.append(Line(text=f"derived baseline: {said}", cites=sorted({fact, drop.began.fact})))
    return lines


def interrupted_section(state: DiagnosisState, ledger: Ledger) -> Section | None:
    """An apply of the doctor's that never ended, as the target's records show it."""
    halted = applies.interrupted(ledger, state.facts)
    if not halted:
        return None
    lines = [Line(text=text, cites=cites) for text, cites in halted]
    return Section(title=applies.TITLE, lines=lines, kind="applies")


def missing_evidence(state: DiagnosisState, ledger: Ledger) -> Section | None:
    """Why facts a family needs are missing, with what would supply them: the probed
    Python without torch is the common case (the wrong interpreter was probed)."""
    fact = observed(latest(ledger, state.facts, "pyenv"))
    if fact is None or not isinstance(fact.value, dict):
        return None
    packages = fact.value.get("key_packages")
    python = fact.value.get("python")
    exe = python.get("executable") if isinstance(python, dict) else None
    if not (isinstance(packages, dict) and "torch" in packages and packages["torch"] is None):
        return None
    line = Line(
        text=f"the probed Python {exe or '(unnamed)'} has no torch installed "
        f"(key_packages.torch is null) [{fact.id}]: the torch facts are missing; "
        "name the trainer's Python with --interpreter PATH or the profile's "
        'interpreter = "PATH"',
        cites=[fact.id],
        outcome="unverifiable",
    )
    return Section(title="missing evidence", lines=[line], kind="missing")
