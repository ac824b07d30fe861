"""The transport contract: run an argv on a target, get bytes and an exit code back.

A non-zero exit is data (a ``CommandResult``); a target that cannot be reached is
an exception (a ``TransportError``), as in pytest-testinfra's backends.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

# The longest time limit accepted anywhere (a command, a connection, a probe): a week.
# Longer is a typo, or an attempt to disable the limit (inf, 1e300), and NaN compares
# false with everything, so it would disable it too.
MAX_TIMEOUT = 7 * 24 * 3600.0


def check_timeout(value: float, what: str) -> float:
    """``value`` if it is a usable time limit in seconds, else ValueError saying why."""
    if not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT:
        raise ValueError(
            f"{what} must be a number of seconds in (0, {MAX_TIMEOUT:g}], not {value!r}"
        )
    return value


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    rc: int
    stdout: bytes
    stderr: bytes
    duration: float
    target: str
    stdin_digest: str = field(default="")

    @property
    def ok(self) -> bool:
        return self.rc == 0


class KeyedStdin(bytes):
    """Stdin bytes that carry the identity of the question they ask.

    A probe bundle is this app's own code plus a plan; when the code changes, the plan
    (which probes, with which parameters) does not. Recording and replay key a command on
    ``replay_key`` when there is one, so a transcript still answers the same plan after
    the probes' implementation changed. Everything else sees plain bytes.
    """

    replay_key: str

    def __new__(cls, data: bytes, replay_key: str) -> KeyedStdin:
        obj = super().__new__(cls, data)
        obj.replay_key = replay_key
        return obj


def stdin_key(data: bytes | None) -> str:
    """How recording and replay name a command's stdin."""
    if isinstance(data, KeyedStdin):
        return f"key:{data.replay_key}"
    return digest(data)


def digest(data: bytes | None) -> str:
    """sha256 hex of ``data``; the empty string for "no stdin" so it differs from b""."""
    if data is None:
        return ""
    return hashlib.sha256(data).hexdigest()


@runtime_checkable
class Transport(Protocol):
    """Carries one argv to one place. ``name`` is how the place is written in a URI."""

    name: str

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        timeout: float | None = None,
    ) -> CommandResult: ...

    def close(self) -> None: ...
