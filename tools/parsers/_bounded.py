"""A profile's regular expression run under a time bound.

Shipped in the probe bundle: stdlib only, Python >= 3.8.

A pattern such as ``^(a+)+\\d+$`` takes time exponential in its input under Python's
backtracking engine: 40 ``a`` and a ``!`` took 121 s. The bundle runs on the trainer's
machine with the trainer's Python, so neither ``re2`` nor ``regex`` can be counted on
there. The stdlib's engine polls for signals every 4,096 steps of a match, so a
``SIGALRM`` handler that raises stops a runaway match within the bound: measured on
this machine, both patterns of issue 24 stop 0.50 s into a 0.5 s bound. Signals reach
only the main thread; elsewhere the pattern runs unbounded (``bounded`` says so).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Budget", "Overran", "bounded"]

T = TypeVar("T")


class Overran(Exception):
    """A bounded call ran past its time."""


def _raise(signum: int, frame: Any) -> None:
    raise Overran()


def bounded() -> bool:
    """Whether a bound can hold here: a main thread on a system with ``setitimer``."""
    return threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")


class Budget:
    """Seconds a pattern may spend: in each call (``per_call``), and in all its calls
    together (``total``, None for no sum). Once a call overran, every later call raises
    ``Overran`` at once: the pattern is abandoned, not tried again on the next input."""

    def __init__(self, per_call: float, total: float | None = None) -> None:
        self.per_call = per_call
        self.total = total
        self.used = 0.0
        self.overran = False

    def _allowed(self) -> float:
        if self.total is None:
            return self.per_call
        return min(self.per_call, self.total - self.used)

    def run(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)``, stopped with ``Overran`` past the time allowed."""
        allowed = self._allowed()
        if self.overran or allowed <= 0:
            self.overran = True
            raise Overran()
        if not bounded():
            return call(*args)
        started = time.monotonic()
        previous = signal.signal(signal.SIGALRM, _raise)
        outer, _ = signal.setitimer(signal.ITIMER_REAL, allowed)
        try:
            return call(*args)
        except Overran:
            self.overran = True
            raise
        finally:
            while True:  # an alarm that fires here, after the call returned, is no overrun
                try:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    break
                except Overran:
                    continue
            # None: the handler was not set from Python; the default is what it was.
            signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
            took = time.monotonic() - started
            self.used += took
            if outer:  # an outer timer keeps what was left of its own time
                signal.setitimer(signal.ITIMER_REAL, max(outer - took, 0.001))
