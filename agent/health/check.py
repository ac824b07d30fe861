"""Check one target, read-only: the sweep, the baseline diff and the rule base, with no
plan, approval or apply path at all.

Three locks keep a health check from changing a target, each enough on its own:
the graph is built with ``fixes=False`` (no plan/approve/apply nodes exist), the doctor
holds no playbooks and an approver that always says no, and the only transport it holds
is a ``ReadOnlyTransport`` that carries nothing but this target's probe bundles (the
sweep, and what its families may still ask for: ``probe_bundles``).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import shlex
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from agent.analysis import applies, timing
from agent.analysis.baseline import DiffEntry, Snapshot, baseline_store
from agent.analysis.diff_keys import comparables
from agent.analysis.symptoms import Symptom, broken, is_fault, observed_healthy
from agent.analysis.throughput import primary_entry, subject
from agent.graph.doctor import Doctor
from agent.graph.gather import SweepGatherer
from agent.graph.state import DiagnosisState
from agent.health.model import (
    APPLIES_CHECK,
    REGRESSED_BELOW,
    SWEEP_CHECK,
    SYMPTOMS_CHECK,
    SYMPTOMS_TITLE,
    THROUGHPUT_CHECK,
    THROUGHPUT_TITLE,
    Check,
    CheckStatus,
    Cited,
    CitedFact,
    Judged,
    Metric,
    TargetResult,
    figure,
)
from agent.model.claims import Claim, RatioBelow, Ref, check, resolve
from agent.model.facts import Fact, Ledger, latest, observed
from agent.model.hypotheses import TITLES, Hypothesis
from agent.rules import default_rules
from agent.rules.base import Rule
from agent.sessions.config import SessionConfig
from agent.sessions.runner import record_outcome, run_session
from agent.sessions.session import Session, ssh_dict
from tools.errors import DoctorError, TransportError
from tools.figures import finite_number
from tools.log import get_logger
from tools.parsers.trainlog import EARLY_WHY
from tools.sweep import Plan, SweepSpec, build_plan, render, sweep
from tools.transport import SSHOptions, Transport
from tools.transport.readonly import ReadOnlyCommand, ReadOnlyTransport

log = get_logger(__name__)

# Kept back from a target's time limit for what follows the sweep (the rules, the
# transcript): at most this many seconds, at most this share of the limit. A sweep that
# still overruns (the client waits a grace beyond the remote ``timeout``, see Target) is
# stopped by the fleet's hard deadline.
_AFTER_SWEEP = 15.0
_AFTER_SWEEP_SHARE = 0.25


@dataclass(frozen=True)
class HealthTarget:
    label: str
    """How results name it: the profile name, or the URI as given."""
    uri: str
    spec: SweepSpec
    baseline: str | None = None
    """A snapshot's name; None derives the baseline from the target's own record, as
    ``diagnose`` does without ``--baseline``."""
    profile: str | None = None
    """The profile file the target's settings came from, when one was used."""


class Cancel:
    """Lets the scheduler stop a check that ran past its time limit: closing the
    transport makes an SSH command in flight fail at once (``ConnectionLost``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._transport: Transport | None = None
        self.cancelled = False
        self.session: Session | None = None  # so a timed-out result can name its session

    def attach(self, transport: Transport, session: Session | None = None) -> None:
        with self._lock:
            self._transport = transport
            self.session = session
            cancelled = self.cancelled
        if cancelled:
            transport.close()

    def __call__(self) -> None:
        with self._lock:
            self.cancelled = True
            transport = self._transport
        if transport is not None:
            transport.close()


def bounded_ssh(ssh: SSHOptions, limit: float) -> SSHOptions:
    """SSH options whose every wait fits in the target's time limit."""
    cap = max(1.0, limit / 2)
    return dataclasses.replace(
        ssh,
        connect_timeout=min(ssh.connect_timeout, cap),
        banner_timeout=min(ssh.banner_timeout, cap),
        auth_timeout=min(ssh.auth_timeout, cap),
        channel_timeout=min(ssh.channel_timeout, cap),
    )


def check_target(
    target: HealthTarget,
    *,
    ssh: SSHOptions,
    deadline: float,
    cancel: Cancel | None = None,
    rules: Sequence[Rule] | None = None,
) -> TargetResult:
    """Check ``target`` before ``deadline`` (``time.monotonic()``); never raises for a
    target that cannot be checked: that is a result (``could_not_check``)."""
    started_at = datetime.now(UTC)
    started = time.monotonic()
    rules = list(rules if rules is not None else default_rules())
    bound = log.bind(target=target.label)
    session: Session | None = None
    try:
        baselines = baseline_store()
        # A missing snapshot: could not check, say why. None: derived in the graph.
        snapshot = baselines.load(target.baseline) if target.baseline is not None else None
        session = Session.create(
            SessionConfig(
                command="health",
                target=target.uri,
                mode="health",
                spec=target.spec,
                baseline=target.baseline,
                ssh=ssh_dict(ssh),
            )
        )
        bound = bound.bind(session=session.id)
        guard = guarded(session, target, rules)
        if cancel is not None:
            cancel.attach(guard, session)
        reserve = min(_AFTER_SWEEP, (deadline - started) * _AFTER_SWEEP_SHARE)
        gatherer = HealthGatherer(
            guard,
            target.spec,
            session.ledger,
            run_sweep=functools.partial(sweep, deadline=deadline - reserve),
        )
        doctor = Doctor(
            ledger=session.ledger,
            gather=gatherer,
            rules=rules,
            comparables=comparables,
            baselines=baselines,
            playbooks={},
            approver="never",
        )
        start = DiagnosisState(
            target=session.recorded(target.uri), mode="health", baseline=target.baseline
        )
        state = run_session(session, doctor, start=start, fixes=False).state
        record_outcome(session, state)
    except (DoctorError, OSError) as exc:
        reason = _reason(exc)
        bound.warning("health_not_checked", reason=reason)
        return _unchecked(target, started_at, started, reason, session, rules)
    except Exception as exc:  # one target's bug must not cost the other targets' results
        bound.exception("health_internal_error")
        reason = f"internal error: {type(exc).__name__}: {exc}"
        return _unchecked(target, started_at, started, reason, session, rules)
    finally:
        if session is not None:
            session.close()
    result = target_result(
        target, state, session, started_at, time.monotonic() - started, rules, snapshot
    )
    # A warning when not healthy: with -q, that is what a cron mail or a journal shows.
    emit = bound.info if result.status == "healthy" else bound.warning
    emit("health_checked", status=result.status, reason=result.reason)
    return result


class HealthGatherer(SweepGatherer):
    """The gatherer of a health check. A family asks for the probes it needs that no fact
    answers yet (``Doctor.gather_missing``); a probe the full sweep ran and that found
    nothing to look at (no checkpoints, no console log) left no fact, so it is asked for
    again. That second bundle is one the read-only guard never registered, and the target
    would say the same again: it gets nothing, as the sweep did."""

    def __call__(self, only: Iterable[str] | None) -> list[Fact]:
        if only is not None:
            swept = {p.name for p in build_plan(self.spec).runnable()}
            only = [name for name in only if name not in swept]
            if not only:
                return []
        return super().__call__(only)


def guarded(
    session: Session, target: HealthTarget, rules: Sequence[Rule] | None = None
) -> ReadOnlyTransport:
    """The only transport a health check holds: ``target``'s probe bundles for ``rules``
    (``probe_bundles``), recorded in ``session``; a refused command is written to the
    transcript before it raises."""

    def refused(argv: tuple[str, ...], stdin_digest: str) -> None:
        session.record({"type": "refused", "argv": list(argv), "stdin_digest": stdin_digest})

    allowed = probe_bundles(target.spec, rules if rules is not None else default_rules())
    return ReadOnlyTransport(session.target(target.uri), allowed, on_refused=refused)


def probe_bundles(spec: SweepSpec, rules: Sequence[Rule]) -> list[ReadOnlyCommand]:
    """Every command a health check of ``spec`` with ``rules`` may send, rendered: the
    full sweep's bundle, then a bundle for each set of probes its families may still ask
    for. A family node gathers what it ``needs`` that no fact answers yet; after the full
    sweep that is a probe that runs only when named (``tools.probes.ON_DEMAND``: torch
    imported for ``torch_runtime``). The nodes run side by side and one may fetch a probe
    another also needs, so each subset of those probes is a command of its own."""
    full = build_plan(spec)
    commands = [_bundle(full)]
    answered = {p.name for p in full.runnable()}
    wanted = set().union(*(rule.needs for rule in rules)) - answered
    # A probe with nothing to look at (no workspace) is skipped when named too: it adds
    # nothing to any bundle, and leaving it out keeps the subsets few.
    later = sorted(n for n in wanted if build_plan(spec, [n]).runnable())
    for size in range(1, len(later) + 1):
        for names in itertools.combinations(later, size):
            commands.append(_bundle(build_plan(spec, names)))
    return commands


def _bundle(plan: Plan) -> ReadOnlyCommand:
    names = ",".join(p.name for p in plan.runnable()) or "none"
    return ReadOnlyCommand.of(plan.argv, render(plan), f"probe bundle ({names})")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TransportError):
        return f"{type(exc).__name__}: {exc}"
    return " ".join(str(exc).split()) or type(exc).__name__


def _unchecked(
    target: HealthTarget,
    started_at: datetime,
    started: float,
    reason: str,
    session: Session | None,
    rules: Sequence[Rule],
) -> TargetResult:
    return not_checked(
        target,
        started_at,
        time.monotonic() - started,
        reason,
        rules,
        session=session.id if session else None,
        transcript=str(session.transcript_path) if session else None,
    )


def not_checked(
    target: HealthTarget,
    started_at: datetime,
    duration: float,
    reason: str,
    rules: Sequence[Rule] | None = None,
    *,
    session: str | None = None,
    transcript: str | None = None,
) -> TargetResult:
    """The result for a target that could not be checked: the sweep check errs with the
    reason, every family check is skipped (nothing was decided about it)."""
    checks = [Check(name=SWEEP_CHECK, title="probe sweep", status="error", message=reason)]
    checks.append(
        Check(
            name=THROUGHPUT_CHECK,
            title=THROUGHPUT_TITLE,
            status="skipped",
            message="not checked: the target could not be checked",
        )
    )
    checks.append(
        Check(
            name=SYMPTOMS_CHECK,
            title=SYMPTOMS_TITLE,
            status="skipped",
            message="not checked: the target could not be checked",
        )
    )
    checks.append(
        Check(
            name=APPLIES_CHECK,
            title=applies.TITLE,
            status="skipped",
            message="not checked: the target could not be checked",
        )
    )
    checks += [
        Check(
            name=r.kind,
            title=TITLES[r.kind],
            status="skipped",
            message="not checked: the target could not be checked",
        )
        for r in (rules if rules is not None else default_rules())
    ]
    if target.baseline is not None:
        used = f"snapshot {target.baseline!r}"
    else:
        used = "derived from the target's own record (nothing was read from it)"
    return TargetResult(
        target=target.label,
        uri=target.uri,
        workspace=target.spec.workspace,
        profile=target.profile,
        baseline=target.baseline,
        baseline_used=Cited(text=used),
        status="could_not_check",
        reason=reason,
        session=session,
        transcript=transcript,
        started_at=started_at,
        duration_s=round(duration, 3),
        checks=checks,
    )


# -- from the final state to a result ---------------------------------------------------


def target_result(
    target: HealthTarget,
    state: DiagnosisState,
    session: Session,
    started_at: datetime,
    duration: float,
    rules: Sequence[Rule],
    snapshot: Snapshot | None = None,
) -> TargetResult:
    ledger = session.ledger
    facts = [ledger.get(i) for i in state.facts]
    used = baseline_used(ledger, state, snapshot)
    which = f"snapshot {snapshot.name!r}" if snapshot is not None else "derived"
    throughput, judged = _throughput_check(ledger, state, which)
    checks = [
        _sweep_check(facts),
        throughput,
        _symptom_check(state, judged is not None),
        _apply_check(ledger, state),
        *_family_checks(state, rules),
    ]
    regressed = [c.name for c in checks if c.status == "failed"]
    undecided = [c.name for c in checks if c.status == "error"]
    if regressed:
        status, reason = "regressed", f"regressed: {', '.join(regressed)}"
    elif checks[0].status == "error":  # the bundle ran but no probe answered
        status, reason = "could_not_check", f"probe sweep: {checks[0].message}"
    elif undecided:
        status = "could_not_check"
        missing = f" (could not observe: {', '.join(state.missing)})" if state.missing else ""
        reason = f"insufficient evidence for: {', '.join(undecided)}{missing}"
    else:
        status, reason = "healthy", ""
    metrics = _metrics(ledger, state, judged)
    cited = {c for check in checks for line in check.lines for c in line.cites}
    cited |= {c for m in metrics.values() for c in m.cites}
    cited |= set(used.cites)
    return TargetResult(
        target=target.label,
        uri=target.uri,
        workspace=target.spec.workspace,
        profile=target.profile,
        baseline=target.baseline,
        baseline_used=used,
        status=status,
        reason=reason,
        verdict=state.verdict,
        session=session.id,
        transcript=str(session.transcript_path),
        started_at=started_at,
        duration_s=round(duration, 3),
        checks=checks,
        judged=judged,
        metrics=metrics,
        facts=_cited_facts(ledger, state, cited),
    )


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


def _throughput_check(
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
    line = Cited(text=verdict.sentence, cites=list(verdict.cites), outcome=verdict.outcome)
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
    drops = _drops(state)
    if regressed and drops:
        # What the run did, beside the verdict: where it fell and what explains it.
        message += "; " + "; ".join(_drop_words(s) for s in drops)
    return Check(
        name=THROUGHPUT_CHECK,
        title=THROUGHPUT_TITLE,
        status="failed" if regressed else "passed",
        message=message,
        lines=[line],
    ), judged


def _value(ledger: Ledger, ref: Ref) -> float | None:
    return finite_number(resolve(ledger.get(ref.fact), ref.path)) if ref.fact in ledger else None


def _drops(state: DiagnosisState) -> list[Symptom]:
    """The verified drops of the judged throughput inside the run's own log."""
    return [
        s
        for s in state.symptoms
        if s.kind == "throughput_drop" and s.subject and s.status == "verified"
    ]


def _drop_words(drop: Symptom) -> str:
    return drop.headline() + (
        f" (explained by: {', '.join(drop.explained_by)})"
        if drop.explained_by
        else " (no verified family explains it)"
    )


def _sweep_check(facts: list[Fact]) -> Check:
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


def _apply_check(ledger: Ledger, state: DiagnosisState) -> Check:
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


def _symptom_check(state: DiagnosisState, judged: bool) -> Check:
    """What the run did over time, from its own log (or its console's progress bar, or
    its checkpoints' pace): a drop, a climb, steady. Where the ``throughput`` check
    judged a figure against the baseline (``judged``), a change of speed is told, not
    judged: a fall inside the run is no regression by itself (the run may still be above
    its baseline). Where nothing was judged against a baseline, this check is the only
    one on the speed: a confirmed fall fails it and a speed not seen holding makes it an
    error, never a pass. A loss gone NaN or a stalled trainer fails it whatever the
    speed; a speed never observed, or a drop too short to confirm, makes it an error
    (the target could not be checked)."""
    faults = broken(state.symptoms)
    unseen = [s for s in state.symptoms if s.kind == "speed_unobserved" and s.status == "verified"]
    lines = [
        Cited(text=v.sentence, cites=list(v.cites), outcome=v.outcome)
        for s in state.symptoms
        if s.subject or s.kind in ("restarted", "stopped") or s in faults
        for v in s.verdicts
    ]
    status, message = _trend(state, judged, faults, unseen)
    over = [s for s in state.symptoms if s.kind == "stopped" and s.status == "verified"]
    if over:
        # Told beside the trend: a check of a run that is over is not one of a live run.
        message += "; " + over[0].headline()
    return Check(
        name=SYMPTOMS_CHECK, title=SYMPTOMS_TITLE, status=status, message=message, lines=lines
    )


def _trend(
    state: DiagnosisState, judged: bool, faults: list[Symptom], unseen: list[Symptom]
) -> tuple[CheckStatus, str]:
    """The symptom check's status and message (``_symptom_check`` says the rules)."""
    if faults:
        return "failed", "; ".join(s.headline() for s in faults)
    if unseen:
        return "error", unseen[0].headline()
    possible = [
        s
        for s in state.symptoms
        if s.kind == "throughput_possible_drop" and s.subject and s.status == "verified"
    ]
    if possible:
        return "error", possible[0].headline() + ": the run's speed could not be judged"
    drops = _drops(state)
    if drops and not judged:
        return "failed", "; ".join(_drop_words(s) for s in drops) + (
            " — inside the run, and no figure against a baseline shows it recovered"
        )
    if drops:
        return "passed", "; ".join(_drop_words(s) for s in drops) + (
            " — inside the run; the throughput check judges it against the baseline"
        )
    steady = [s for s in state.symptoms if s.kind == "throughput_steady" and s.subject]
    if not judged and not observed_healthy(state.symptoms):
        seen = steady[0].headline() if steady else "no trend read (too few windows for one)"
        return "error", f"{seen}: nothing shows the run's speed holding"
    if steady and steady[0].status == "verified":
        return "passed", steady[0].headline()
    if state.symptoms:
        return "passed", "no sustained drop of the judged throughput"
    return "passed", "no trend read (no train-log windows enough for one)"


def _lines(hypotheses: Iterable[Hypothesis]) -> list[Cited]:
    return [
        Cited(text=v.sentence, cites=list(v.cites), outcome=v.outcome)
        for h in hypotheses
        for v in h.verdicts
    ]


def _family_checks(state: DiagnosisState, rules: Sequence[Rule]) -> list[Check]:
    checks = []
    for rule in rules:
        found = [h for h in state.hypotheses if h.kind == rule.kind]
        statuses = {h.status for h in found}
        title = TITLES[rule.kind]
        faults = [h for h in found if is_fault(h, state.symptoms)]
        if faults:
            check = Check(
                name=rule.kind,
                title=title,
                status="failed",
                message="verified: every claim holds on its cited facts",
                lines=_lines(faults),
            )
        elif statuses & {"unverifiable", "untested"}:
            check = Check(
                name=rule.kind,
                title=title,
                status="error",
                message="unverifiable: a claim cites a failed observation or a missing value",
                lines=_lines(found),
            )
        elif "verified" in statuses:
            check = Check(
                name=rule.kind,
                title=title,
                status="passed",
                message="verified, and no fault on its own: it would explain a slowdown "
                "or a stall, and the run shows neither",
                lines=_lines([h for h in found if h.status == "verified"]),
            )
        elif found:
            check = Check(
                name=rule.kind,
                title=title,
                status="passed",
                message="refuted: a claim fails on its cited facts",
                lines=_lines(found),
            )
        else:
            check = Check(
                name=rule.kind,
                title=title,
                status="passed",
                message="no hypothesis proposed from the facts",
            )
        checks.append(check)
    return checks


def _metrics(ledger: Ledger, state: DiagnosisState, judged: Judged | None) -> dict[str, Metric]:
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
                found.path if found else ("throughput", "recent_median"),
                found.label.partition(" (")[0] if found else "tokens/s",
            ),
            ("last_step", found.last_step if found else ("steps", "max"), f"{who}last step"),
        ):
            value = finite_number(resolve(trainlog, path))
            if value is not None and key not in out:
                out[key] = Metric(value=value, cites=[trainlog.id], label=label)
        last = finite_number(resolve(trainlog, ("time", "last")))
        now = finite_number(resolve(host, ("now",))) if host is not None else None
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


def _cited_facts(ledger: Ledger, state: DiagnosisState, cited: set[str]) -> list[CitedFact]:
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
