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
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypedDict

from agent.analysis import applies
from agent.analysis.baseline import Snapshot, baseline_store
from agent.analysis.diff_keys import comparables
from agent.analysis.symptoms import Symptom, broken, observed_healthy
from agent.graph.doctor import Doctor
from agent.graph.gather import SweepGatherer
from agent.graph.state import DiagnosisState
from agent.health.family_checks import apply_check, cited_facts, family_checks, sweep_check
from agent.health.model import (
    APPLIES_CHECK,
    SWEEP_CHECK,
    SYMPTOMS_CHECK,
    SYMPTOMS_TITLE,
    THROUGHPUT_CHECK,
    THROUGHPUT_TITLE,
    Check,
    CheckStatus,
    Cited,
    TargetResult,
)
from agent.health.throughput_check import (
    baseline_used,
    drop_words,
    result_metrics,
    throughput_check,
    verified_drops,
)
from agent.model.facts import Fact
from agent.model.hypotheses import TITLES
from agent.rules import default_rules
from agent.rules.base import Rule
from agent.sessions.config import SessionConfig
from agent.sessions.runner import record_outcome, run_session
from agent.sessions.session import Session, ssh_dict
from tools.errors import DoctorError, TransportError
from tools.log import get_logger
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
        **_identity(target),
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
# The throughput check and the figures are agent.health.throughput_check's; the sweep, the
# apply and the family checks agent.health.family_checks'; the run's own trend is read here.


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
    throughput, judged = throughput_check(ledger, state, which)
    checks = [
        sweep_check(facts),
        throughput,
        _symptom_check(state, judged is not None),
        apply_check(ledger, state),
        *family_checks(state, rules),
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
    metrics = result_metrics(ledger, state, judged)
    cited = {c for check in checks for line in check.lines for c in line.cites}
    cited |= {c for m in metrics.values() for c in m.cites}
    cited |= set(used.cites)
    return TargetResult(
        **_identity(target),
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
        facts=cited_facts(ledger, state, cited),
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
        Cited(text=v.stated(), cites=list(v.cites), outcome=v.outcome)
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
    drops = verified_drops(state)
    if drops and not judged:
        return "failed", "; ".join(drop_words(s) for s in drops) + (
            " — inside the run, and no figure against a baseline shows it recovered"
        )
    if drops:
        return "passed", "; ".join(drop_words(s) for s in drops) + (
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


class _Identity(TypedDict):
    target: str
    uri: str
    workspace: str | None
    profile: str | None
    baseline: str | None


def _identity(target: HealthTarget) -> _Identity:
    """What names a target in its result: as the user gave it, where, and against what
    (typed, so that a field renamed in ``TargetResult`` fails mypy here)."""
    return {
        "target": target.label,
        "uri": target.uri,
        "workspace": target.spec.workspace,
        "profile": target.profile,
        "baseline": target.baseline,
    }
