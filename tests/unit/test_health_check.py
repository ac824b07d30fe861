"""``agent.health.check``: checking one target read-only. Specified here: SSH waits bounded
by the target's time limit, the cancel hook that closes the transport, the result of a
target that could not be checked, the reason an exception becomes, the gatherer that asks
again only for probes the sweep left out, and the symptoms check's status and message."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from agent.analysis.symptoms import Symptom
from agent.graph.state import DiagnosisState
from agent.health.check import (
    Cancel,
    HealthGatherer,
    HealthTarget,
    _reason,
    _symptom_check,
    bounded_ssh,
    not_checked,
)
from agent.health.model import SYMPTOMS_TITLE, THROUGHPUT_TITLE, Check, Cited
from agent.model.claims import ClaimVerdict
from agent.model.facts import Ledger
from tools.errors import ConfigError, ConnectError, ConnectionLost
from tools.sweep import SweepSpec, build_plan
from tools.sweep.results import SweepResult
from tools.transport import SSHOptions
from tools.transport.base import CommandResult

NOW = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("limit", "connect", "expected"),
    [
        (60.0, 10.0, 10.0),
        (8.0, 10.0, 4.0),
        (20.0, 10.0, 10.0),
        (1.0, 10.0, 1.0),
        (0.2, 10.0, 1.0),
        (30.0, 0.5, 0.5),
    ],
    ids=[
        "limit-roomy",
        "half-the-limit",
        "half-equals-timeout",
        "floor-one-second",
        "under-floor",
        "own-smaller",
    ],
)
def test_every_ssh_wait_is_at_most_half_the_limit_and_never_under_a_second(
    limit: float, connect: float, expected: float
) -> None:
    """Each of the connect, banner, auth and channel timeouts is capped at half the
    target's time limit, but the cap is never under one second; a smaller own timeout
    stays."""
    given = SSHOptions(
        connect_timeout=connect,
        banner_timeout=connect,
        auth_timeout=connect,
        channel_timeout=connect,
        retries=5,
    )
    bounded = bounded_ssh(given, limit)
    assert (
        bounded.connect_timeout,
        bounded.banner_timeout,
        bounded.auth_timeout,
        bounded.channel_timeout,
    ) == (expected, expected, expected, expected)
    assert bounded.retries == 5  # everything else is kept


class Closing:
    """A transport that only counts how often it was closed."""

    name = "fake"

    def __init__(self) -> None:
        self.closed = 0

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
    ) -> CommandResult:
        raise AssertionError(f"nothing may be run: {list(argv)}")

    def close(self) -> None:
        self.closed += 1


def test_cancelling_closes_the_attached_transport() -> None:
    """Calling the cancel hook marks it cancelled and closes the transport attached."""
    cancel = Cancel()
    transport = Closing()
    cancel.attach(transport)
    assert transport.closed == 0
    cancel()
    assert cancel.cancelled is True
    assert transport.closed == 1


def test_a_transport_attached_after_the_cancel_is_closed_at_once() -> None:
    """A check cancelled before it held a transport closes that transport as soon as it
    is attached, so a late start cannot go on."""
    cancel = Cancel()
    cancel()
    transport = Closing()
    cancel.attach(transport)
    assert transport.closed == 1


def test_cancelling_before_any_transport_only_marks_it() -> None:
    """With nothing attached the cancel hook only records that it was called."""
    cancel = Cancel()
    cancel()
    assert cancel.cancelled is True
    assert cancel.session is None


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (
            ConnectError("connection refused", target="gpu-a"),
            "ConnectError: gpu-a: connection refused",
        ),
        (ConnectionLost("closed by the scheduler"), "ConnectionLost: closed by the scheduler"),
        (ConfigError("profile p.toml:\n  bad   key"), "profile p.toml: bad key"),
        (OSError(), "OSError"),
    ],
    ids=["transport-named", "lost-named", "whitespace-folded", "empty-is-its-type"],
)
def test_an_exception_becomes_a_one_line_reason(exc: BaseException, reason: str) -> None:
    """A transport failure is named by its class; any other is its message on one line
    with runs of whitespace folded, or its class name when it says nothing."""
    assert _reason(exc) == reason


def target(baseline: str | None) -> HealthTarget:
    """A local target with a workspace and, when given, a named baseline."""
    return HealthTarget(
        label="gpu-a",
        uri="local",
        spec=SweepSpec(workspace="/w/a"),
        baseline=baseline,
        profile="fleet.toml",
    )


@pytest.mark.parametrize(
    ("baseline", "used"),
    [
        ("good", "snapshot 'good'"),
        (None, "derived from the target's own record (nothing was read from it)"),
    ],
    ids=["snapshot", "derived"],
)
def test_a_target_not_checked_names_itself_and_the_baseline_it_would_have_used(
    baseline: str | None, used: str
) -> None:
    """An unchecked target keeps its label, URI, workspace, profile and baseline, says
    which baseline it would have used, rounds its duration to milliseconds, and names
    the session and transcript it got."""
    result = not_checked(
        target(baseline),
        NOW,
        1.23456,
        "ConnectError: refused",
        [],
        session="s-1",
        transcript="/t/s-1.jsonl",
    )
    assert (result.target, result.uri, result.workspace, result.profile, result.baseline) == (
        "gpu-a",
        "local",
        "/w/a",
        "fleet.toml",
        baseline,
    )
    assert result.baseline_used == Cited(text=used)
    assert (result.status, result.reason) == ("could_not_check", "ConnectError: refused")
    assert (result.session, result.transcript) == ("s-1", "/t/s-1.jsonl")
    assert result.started_at == NOW
    assert result.duration_s == 1.235


def test_every_check_but_the_sweep_is_skipped_as_not_checked() -> None:
    """The sweep check errs with the reason; throughput, symptoms and applies are skipped
    with the same message, titled as a checked target would title them."""
    result = not_checked(target("good"), NOW, 0.0, "no baseline named 'good'", [])
    skipped = "not checked: the target could not be checked"
    assert result.checks == [
        Check(
            name="sweep", title="probe sweep", status="error", message="no baseline named 'good'"
        ),
        Check(name="throughput", title=THROUGHPUT_TITLE, status="skipped", message=skipped),
        Check(name="symptoms", title=SYMPTOMS_TITLE, status="skipped", message=skipped),
        Check(name="applies", title="an interrupted apply", status="skipped", message=skipped),
    ]


def test_the_health_gatherer_asks_nothing_the_full_sweep_already_ran() -> None:
    """A family asking for probes the full sweep runs gets nothing and nothing is sent:
    the sweep answered them (or found nothing to look at)."""
    spec = SweepSpec(workspace="/w/a")
    sent: list[Any] = []

    def run_sweep(*args: Any, **kwargs: Any) -> SweepResult:
        sent.append(kwargs.get("only"))
        return SweepResult(target="local", argv=(), rc=0, duration=0.0, results=[])

    swept = [p.name for p in build_plan(spec).runnable()]
    gatherer = HealthGatherer(Closing(), spec, Ledger(), run_sweep=run_sweep)
    assert gatherer(swept[:3]) == []
    assert sent == []
    assert gatherer(["torch_runtime", swept[0]]) == []
    assert sent == [["torch_runtime"]]  # only the probe the sweep left out is asked for


def symptom(
    kind: Any,
    status: Any = "verified",
    *,
    subject: bool = True,
    ratio: float | None = None,
    step: float | None = None,
    note: str = "",
    series: str = "tokens/s",
    verdicts: tuple[ClaimVerdict, ...] = (),
    explained_by: tuple[str, ...] = (),
) -> Symptom:
    """A checked symptom with no claims of its own."""
    return Symptom(
        kind=kind,
        series=series,
        subject=subject,
        claims=(),
        status=status,
        ratio=ratio,
        step=step,
        note=note,
        verdicts=verdicts,
        explained_by=explained_by,
    )


def state(*symptoms: Symptom) -> DiagnosisState:
    return DiagnosisState(target="local", mode="health", symptoms=list(symptoms))


DROP = symptom("throughput_drop", ratio=0.5, step=1200)
STEADY = symptom("throughput_steady")
NAN = symptom("loss_nonfinite", series="loss", note="nan", step=40)


@pytest.mark.parametrize(
    ("symptoms", "judged", "status", "message"),
    [
        ((), True, "passed", "no trend read (no train-log windows enough for one)"),
        (
            (),
            False,
            "error",
            "no trend read (too few windows for one): nothing shows the run's speed holding",
        ),
        ((STEADY,), False, "passed", "tokens/s is steady"),
        ((STEADY,), True, "passed", "tokens/s is steady"),
        (
            (symptom("throughput_steady", "refuted"),),
            False,
            "error",
            "tokens/s was not steady in its last quarter, with no change point sustained"
            " enough to place: nothing shows the run's speed holding",
        ),
        (
            (symptom("throughput_steady", "unverifiable"),),
            True,
            "passed",
            "no sustained drop of the judged throughput",
        ),
        ((NAN, DROP), True, "failed", "the loss is nan at step 40"),
        (
            (DROP,),
            False,
            "failed",
            "tokens/s fell to 0.50× at step 1,200 (no verified family explains it) — inside"
            " the run, and no figure against a baseline shows it recovered",
        ),
        (
            (symptom("throughput_drop", ratio=0.5, step=1200, explained_by=("script_changed",)),),
            True,
            "passed",
            "tokens/s fell to 0.50× at step 1,200 (explained by: script_changed) — inside"
            " the run; the throughput check judges it against the baseline",
        ),
        (
            (symptom("throughput_possible_drop", ratio=0.8, note="one window"), DROP),
            True,
            "error",
            "tokens/s: possible drop to 0.80×, not confirmed (one window): the run's speed"
            " could not be judged",
        ),
        (
            (symptom("speed_unobserved", note="no speed in the records"), STEADY),
            True,
            "error",
            "the run's speed is not observed: no speed in the records",
        ),
        (
            (symptom("throughput_drop", "refuted", ratio=0.5), STEADY),
            True,
            "passed",
            "tokens/s is steady",
        ),
    ],
    ids=[
        "nothing-judged-against-baseline",
        "nothing-and-no-baseline",
        "steady-no-baseline",
        "steady-judged",
        "slowed-no-baseline",
        "unsure-steady-judged",
        "fault-first",
        "drop-no-baseline-fails",
        "drop-judged-is-told",
        "possible-drop-undecided",
        "speed-unseen-undecided",
        "refuted-drop-ignored",
    ],
)
def test_the_symptoms_check_status_and_message(
    symptoms: tuple[Symptom, ...], judged: bool, status: str, message: str
) -> None:
    """A broken loss or stall fails it whatever the speed; a speed not observed or a
    possible drop makes it undecided; a confirmed drop fails it only where no figure was
    judged against a baseline; with no baseline judgement, nothing short of a speed seen
    holding passes it."""
    check = _symptom_check(state(*symptoms), judged)
    assert (check.name, check.status, check.message) == ("symptoms", status, message)


def test_a_run_that_is_over_is_told_beside_the_trend() -> None:
    """A verified "stopped" symptom is added to the message after the trend, and its
    verdict lines are shown though it judges no speed."""
    verdict = ClaimVerdict(outcome="holds", sentence="live processes = [] [F-1]", cites=("F-1",))
    over = symptom("stopped", subject=False, step=300, note="no log has grown", verdicts=(verdict,))
    check = _symptom_check(state(STEADY, over), True)
    assert check.status == "passed"
    assert check.message == (
        "tokens/s is steady; the run is not running after step 300: no log has grown"
    )
    assert check.lines == [Cited(text="live processes = [] [F-1]", cites=["F-1"], outcome="holds")]


def test_only_judged_restart_stop_and_fault_symptoms_give_lines() -> None:
    """The check's lines are the verdicts of symptoms on the judged throughput, restarts,
    stops and faults; another series' symptom adds none."""
    seen = ClaimVerdict(outcome="holds", sentence="a [F-1]", cites=("F-1",))
    other = ClaimVerdict(outcome="fails", sentence="b [F-2]", cites=("F-2",), claimed="b > 1")
    checked = state(
        symptom("throughput_steady", verdicts=(seen,)),
        symptom("throughput_drop", subject=False, ratio=0.5, verdicts=(other,)),
    )
    assert _symptom_check(checked, True).lines == [
        Cited(text="a [F-1]", cites=["F-1"], outcome="holds")
    ]
