"""A profile's regular expression run under a time bound (tools/parsers/_bounded.py):
``Budget.run`` arms ``SIGALRM`` for the time allowed (the per-call bound, or what is left
of the total), gives back the caller's handler and timer, abandons the pattern for good
once it overran, and runs unbounded where a bound cannot hold. The alarm is not waited
for here: a stand-in signal module records what would be armed, and a stand-in clock
says how long each call took."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any

import pytest

from tools.parsers import _bounded
from tools.parsers._bounded import Budget, Overran, bounded


class FakeSignal:
    """What ``Budget.run`` uses of ``signal``: every handler set and timer armed is
    recorded; nothing is armed for real."""

    SIGALRM = signal.SIGALRM
    ITIMER_REAL = signal.ITIMER_REAL
    SIG_DFL = signal.SIG_DFL

    def __init__(self, previous: Any = None, outer: float = 0.0) -> None:
        self.handler: Any = previous
        self.outer = outer  # seconds the caller's own timer had left
        self.handlers: list[Any] = []
        self.timers: list[float] = []

    def signal(self, signum: int, handler: Any) -> Any:
        assert signum == signal.SIGALRM
        previous, self.handler = self.handler, handler
        self.handlers.append(handler)
        return previous

    def setitimer(self, which: int, seconds: float) -> tuple[float, float]:
        assert which == signal.ITIMER_REAL
        self.timers.append(seconds)
        left, self.outer = self.outer, 0.0
        return left, 0.0


class FakeClock:
    """``time.monotonic`` reading the given instants in turn."""

    def __init__(self, *instants: float) -> None:
        self.instants = list(instants)

    def monotonic(self) -> float:
        return self.instants.pop(0)


@pytest.fixture
def fake_signal(monkeypatch: pytest.MonkeyPatch) -> Callable[..., FakeSignal]:
    def install(previous: Any = None, outer: float = 0.0, *took: float) -> FakeSignal:
        fake = FakeSignal(previous, outer)
        monkeypatch.setattr(_bounded, "signal", fake)
        instants = [0.0]
        for seconds in took:
            instants += [instants[-1] + seconds, instants[-1] + seconds]
        monkeypatch.setattr(_bounded, "time", FakeClock(*instants))
        return fake

    return install


def test_a_bound_holds_on_the_main_thread_only() -> None:
    """The main thread (where signals arrive) can be bounded; another thread cannot."""
    seen: list[bool] = []
    worker = threading.Thread(target=lambda: seen.append(bounded()))
    worker.start()
    worker.join()
    assert bounded() is True
    assert seen == [False]


def test_off_the_main_thread_the_call_runs_unbounded() -> None:
    """Off the main thread the call runs as it is, its result returned, with no alarm
    handler set and no time counted."""
    budget = Budget(0.5)
    before = signal.getsignal(signal.SIGALRM)
    got: list[str] = []
    worker = threading.Thread(target=lambda: got.append(budget.run(str.upper, "abc")))
    worker.start()
    worker.join()
    assert got == ["ABC"]
    assert signal.getsignal(signal.SIGALRM) is before
    assert (budget.used, budget.overran) == (0.0, False)


def test_a_call_in_time_returns_its_result_and_leaves_the_alarm_as_it_was() -> None:
    """On the real clock and signals, with no outer timer armed: the call's result comes
    back, the caller's ``SIGALRM`` handler is in place again and no timer is left armed."""
    # The test runner may keep its own timeout on ITIMER_REAL: set aside, then restored.
    left, interval = signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        before = signal.getsignal(signal.SIGALRM)
        assert Budget(5.0).run(sorted, [3, 1, 2]) == [1, 2, 3]
        assert signal.getsignal(signal.SIGALRM) is before
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        if left:
            signal.setitimer(signal.ITIMER_REAL, left, interval)


@pytest.mark.parametrize(
    ("per_call", "total", "used", "armed"),
    [
        (1.0, None, 0.0, 1.0),
        (1.0, 4.0, 0.0, 1.0),
        (1.0, 0.75, 0.25, 0.5),
        (2.0, 3.0, 2.5, 0.5),
    ],
    ids=["per-call-only", "total-not-binding", "total-left-binds", "little-left"],
)
def test_the_alarm_is_armed_for_the_time_allowed(
    fake_signal: Callable[..., FakeSignal],
    per_call: float,
    total: float | None,
    used: float,
    armed: float,
) -> None:
    """The alarm is set to the per-call bound, or to what is left of the total where
    that is less; then disarmed, and the caller's handler put back."""
    fake = fake_signal(signal.default_int_handler, 0.0, 0.25)
    budget = Budget(per_call, total)
    budget.used = used
    assert budget.run(len, "abc") == 3
    assert fake.timers == [armed, 0]
    assert fake.handlers == [_bounded._raise, signal.default_int_handler]
    assert budget.used == used + 0.25


def test_time_taken_adds_up_across_calls(fake_signal: Callable[..., FakeSignal]) -> None:
    """Each call's time, as the clock measured it, is added to what the budget used."""
    fake_signal(None, 0.0, 0.25, 0.5)
    budget = Budget(1.0, total=2.0)
    budget.run(len, "a")
    budget.run(len, "b")
    assert budget.used == 0.75


def test_a_handler_not_set_from_python_is_given_back_as_the_default(
    fake_signal: Callable[..., FakeSignal],
) -> None:
    """Where the previous handler was not set from Python (``signal`` returned None),
    the default handler is restored."""
    fake = fake_signal(None, 0.0, 0.125)
    Budget(1.0).run(len, "x")
    assert fake.handler == signal.SIG_DFL


@pytest.mark.parametrize(
    ("outer", "took", "rearmed"),
    [(2.0, 0.5, 1.5), (0.25, 0.5, 0.001)],
    ids=["time-left", "outer-already-due"],
)
def test_an_outer_timer_gets_back_what_was_left_of_it(
    fake_signal: Callable[..., FakeSignal], outer: float, took: float, rearmed: float
) -> None:
    """A caller's own timer is re-armed after the call with its time less the call's
    (1 ms at least, so that it still fires)."""
    fake = fake_signal(None, outer, took)
    Budget(1.0).run(len, "x")
    assert fake.timers == [1.0, 0, rearmed]


def test_an_overrun_abandons_the_pattern_for_every_later_call(
    fake_signal: Callable[..., FakeSignal],
) -> None:
    """When the alarm stops the call (``Overran`` raised inside it) the budget is marked
    overran, its handler put back, and every later call is refused without running."""
    fake = fake_signal(signal.default_int_handler, 0.0, 1.0)

    def runaway() -> None:
        raise Overran()

    budget = Budget(1.0)
    with pytest.raises(Overran):
        budget.run(runaway)
    assert budget.overran is True
    assert fake.handler is signal.default_int_handler
    ran: list[int] = []
    with pytest.raises(Overran):
        budget.run(ran.append, 1)
    assert ran == []


def test_a_spent_total_refuses_at_once() -> None:
    """A total already spent (none left to allow) refuses the call without running it,
    and the pattern is abandoned from then on."""
    budget = Budget(1.0, total=0.5)
    budget.used = 0.5
    ran: list[int] = []
    with pytest.raises(Overran):
        budget.run(ran.append, 1)
    assert ran == [] and budget.overran is True


def test_the_calls_own_error_goes_through_and_is_no_overrun(
    fake_signal: Callable[..., FakeSignal],
) -> None:
    """An exception the call raises itself reaches the caller as it is; the handler is
    put back and the pattern is not abandoned."""
    fake = fake_signal(signal.default_int_handler, 0.0, 0.125)
    budget = Budget(1.0)
    with pytest.raises(ValueError, match="invalid literal for int"):
        budget.run(int, "x")
    assert budget.overran is False
    assert fake.handler is signal.default_int_handler
    assert fake.timers == [1.0, 0]
