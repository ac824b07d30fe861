"""The throughput check of a health result: the judged tokens/s against the baseline's,
which baseline that was (a snapshot, or derived from the target's own record), and the
figures every output prints, read from the same facts the verdict followed from.
"""

from __future__ import annotations

from agent.analysis import timing
from agent.analysis.baseline import DiffEntry, Snapshot
from agent.analysis.symptoms import Symptom
from agent.analysis.throughput import primary_entry, subject
from agent.graph.state import DiagnosisState
from agent.health.model import (
    REGRESSED_BELOW,
    THROUGHPUT_CHECK,
    THROUGHPUT_TITLE,
    Check,
    Cited,
    Judged,
    Metric,
    figure,
)
from agent.model.claims import Claim, RatioBelow, Ref, check, resolve
from agent.model.facts import Ledger, latest, observed
from tools.figures import finite_number
from tools.parsers import trainlog_paths as log_paths
from tools.parsers.trainlog import EARLY_WHY
from tools.probes import value_paths as vp


def baseline_used(ledger: Ledger, state: DiagnosisState, snapshot: Snapshot | None) -> Cited:
    """Which baseline the diff compared with: the snapshot, or what the derived one was
    read from (the throughput's source first), citing the facts it was read from."""
    speed = primary_entry(state.diff)
    if snapshot is not None:
        cites = [speed.baseline.fact] if speed is not None else []
        return Cited(
            text=f"snapshot {snapshot.name!r} of {snapshot.target}, taken "
            f"{snapshot.created_at:%Y-%m-%d %H:%M} UTC",
            cites=cites,
        )
    head = "derived from the target's own record, as diagnose derives it"
    if not state.diff:
        return Cited(text=f"{head}: it records nothing to compare with")
    parts, cites = [], []
    if speed is not None:
        parts.append(f"{_quantity(speed)} from {_source(ledger, speed.baseline)}")
        cites.append(speed.baseline.fact)
    others = [d.baseline for d in state.diff if d is not speed]
    if others:
        checkpoints = timing.baseline_checkpoints(others, ledger)
        read = [f"what checkpoint {name} recorded [{fact}]" for name, _, fact in checkpoints]
        named = {fact for _, _, fact in checkpoints}
        for fact_id in dict.fromkeys(r.fact for r in others):
            probe = ledger.get(fact_id).probe
            if probe == "trainlog":
                read.append(f"the train log's early window [{fact_id}]")
            elif fact_id not in named:
                read.append(f"the {probe} fact [{fact_id}]")
        plural = "quantity" if len(others) == 1 else "quantities"
        parts.append(f"{len(others)} other compared {plural} from {', '.join(read)}")
        cites += [r.fact for r in others]
    return Cited(text=f"{head}: {'; '.join(parts)}", cites=list(dict.fromkeys(cites)))


def _quantity(speed: DiffEntry) -> str:
    """ "drafter tokens/s (median of the last N records)" -> "drafter tokens/s"."""
    return speed.label.partition(" (")[0]


def _source(ledger: Ledger, ref: Ref) -> str:
    """Where a derived baseline value was read: a checkpoint's record or the log's early
    window (``agent.analysis.throughput``: ``early_median``)."""
    fact = ledger.get(ref.fact)
    if fact.probe == "checkpoints":
        read = timing.baseline_checkpoints([ref], ledger)
        if read:
            name, step, _ = read[0]
            when = f", written at step {step:,.0f}" if isinstance(step, int | float) else ""
            return f"what checkpoint {name} recorded{when} [{fact.id}]"
        return f"what the newest checkpoint recorded [{fact.id}]"
    if fact.probe == "trainlog" and ref.path and ref.path[-1] == "early_median":
        return f"the train log's early window ({EARLY_WHY}) [{fact.id}]"
    return f"{'.'.join(map(str, ref.path))} in the {fact.probe} fact [{fact.id}]"


def throughput_check(
    ledger: Ledger, state: DiagnosisState, which: str
) -> tuple[Check, Judged | None]:
    """The judged tokens/s against the baseline's (``which``: the snapshot, or derived):
    failed when below ``REGRESSED_BELOW`` times it (the claim, checked on the two cited
    facts), and the two figures, read from the same facts, for every output to print."""
    speed = primary_entry(state.diff)
    if speed is None:
        log = latest(ledger, state.facts, "trainlog")
        if log is not None and not log.ok:
            return Check(
                name=THROUGHPUT_CHECK,
                title=THROUGHPUT_TITLE,
                status="error",
                message=f"could not read the train log: {log.error}",
                lines=[Cited(text=f"trainlog: {log.error}", cites=[log.id])],
            ), None
        found = subject(log)
        if found is None:
            why = "no train log was found" if log is None else "the train log holds no tokens/s"
        else:
            why = f"the baseline ({which}) holds no {found.label}"
        return Check(
            name=THROUGHPUT_CHECK,
            title=THROUGHPUT_TITLE,
            status="skipped",
            message=f"not judged: {why}",
        ), None
    claim = Claim(predicate=RatioBelow(a=speed.current, b=speed.baseline, ratio=REGRESSED_BELOW))
    verdict = check(claim, ledger)
    line = Cited(text=verdict.stated(), cites=list(verdict.cites), outcome=verdict.outcome)
    now, then = _value(ledger, speed.current), _value(ledger, speed.baseline)
    if verdict.outcome not in ("holds", "fails") or now is None or then is None:
        return Check(
            name=THROUGHPUT_CHECK,
            title=THROUGHPUT_TITLE,
            status="error",
            message=f"could not compare: {verdict.sentence}",
            lines=[line],
        ), None
    judged = Judged(
        label=speed.label,
        value=now,
        value_fact=speed.current.fact,
        baseline=then,
        baseline_fact=speed.baseline.fact,
    )
    regressed = verdict.outcome == "holds"
    message = (
        f"{_quantity(speed)} {figure(now)} is {now / then:.2f}× the baseline's {figure(then)}: "
        f"{'regressed' if regressed else 'not regressed'} (regressed below "
        f"{REGRESSED_BELOW:g}× the baseline's, {figure(judged.threshold)}; baseline: {which})"
    )
    drops = verified_drops(state)
    if regressed and drops:
        # What the run did, beside the verdict: where it fell and what explains it.
        message += "; " + "; ".join(drop_words(s) for s in drops)
    return Check(
        name=THROUGHPUT_CHECK,
        title=THROUGHPUT_TITLE,
        status="failed" if regressed else "passed",
        message=message,
        lines=[line],
    ), judged


def _value(ledger: Ledger, ref: Ref) -> float | None:
    return finite_number(resolve(ledger.get(ref.fact), ref.path)) if ref.fact in ledger else None


def verified_drops(state: DiagnosisState) -> list[Symptom]:
    """The verified drops of the judged throughput inside the run's own log."""
    return [
        s
        for s in state.symptoms
        if s.kind == "throughput_drop" and s.subject and s.status == "verified"
    ]


def drop_words(drop: Symptom) -> str:
    """A drop's headline, with the families that explain it or that none does."""
    return drop.headline() + (
        f" (explained by: {', '.join(drop.explained_by)})"
        if drop.explained_by
        else " (no verified family explains it)"
    )


def result_metrics(
    ledger: Ledger, state: DiagnosisState, judged: Judged | None
) -> dict[str, Metric]:
    """The figures every output prints. tokens/s and the baseline's are ``judged``'s when
    the throughput was judged: what the verdict followed from, never another reading."""
    out: dict[str, Metric] = {}
    trainlog = observed(latest(ledger, state.facts, "trainlog"))
    host = observed(latest(ledger, state.facts, "host"))
    found = subject(trainlog)
    who = found.who if found is not None else ""
    # The quantity in the trainer's own unit ("drafter tokens/s", "samples/s"): the
    # metric keeps its name, the label says what the number is.
    if judged is not None:
        out["tokens_per_s"] = Metric(
            value=judged.value,
            cites=[judged.value_fact],
            label=judged.label.partition(" (")[0],
        )
    if trainlog is not None:
        for key, path, label in (
            (
                "tokens_per_s",
                found.path if found else log_paths.THROUGHPUT_RECENT,
                found.label.partition(" (")[0] if found else "tokens/s",
            ),
            ("last_step", found.last_step if found else log_paths.STEPS_MAX, f"{who}last step"),
        ):
            value = finite_number(resolve(trainlog, path))
            if value is not None and key not in out:
                out[key] = Metric(value=value, cites=[trainlog.id], label=label)
        last = finite_number(resolve(trainlog, log_paths.TIME_LAST))
        now = finite_number(resolve(host, vp.HOST_NOW)) if host is not None else None
        if last is not None and now is not None and host is not None:
            out["last_step_age_s"] = Metric(
                value=round(now - last, 3),
                cites=[host.id, trainlog.id],
                label="seconds from the last train-log record to the target's clock",
            )
    if judged is not None:
        out["baseline_tokens_per_s"] = Metric(
            # "drafter tokens/s (median of the last N records)" -> "baseline drafter tokens/s"
            value=judged.baseline,
            cites=[judged.baseline_fact],
            label=f"baseline {judged.label.partition(' (')[0]}",
        )
    return out
