"""Read-only mode: a transport that carries only commands registered as read-only.

Unattended health checks must never change a target, and "the code path that would
change it is not wired in" is a promise about today's code. This wrapper makes it a
property of the transport: a command runs only when its exact ``(argv, sha256 of stdin)``
was registered before. What is registered is the caller's to decide (a health check
registers its probe bundles, ``agent.health.check.probe_bundles``); this module knows
nothing of what the commands are. Anything else, an ``rm`` or the same ``<python> -``
with other code on stdin, raises ``ReadOnlyViolation`` before a byte leaves this machine.

The key is the digest of the stdin *content*, never a replay key a caller attaches to it
(``KeyedStdin``): a key names a question, the content is what would run.

Public API::

    allowed = ReadOnlyCommand.of(argv, stdin_bytes, "probe bundle (host)")
    guard = ReadOnlyTransport(target, [allowed], on_refused=record)
    guard.run(argv, stdin=stdin_bytes)           # runs
    guard.run(["rm", "-f", "/workspace/x"])      # ReadOnlyViolation; nothing ran
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from tools.errors import ReadOnlyViolation
from tools.log import get_logger
from tools.transport.base import CommandResult, Transport

log = get_logger(__name__)

__all__ = ["ReadOnlyCommand", "ReadOnlyTransport"]


def _content_digest(stdin: bytes | None) -> str:
    # bytes(...) drops any subclass (KeyedStdin): the digest is of what would be sent.
    return "" if stdin is None else hashlib.sha256(bytes(stdin)).hexdigest()


@dataclass(frozen=True)
class ReadOnlyCommand:
    """One command known to be read-only: its argv and the sha256 of its stdin."""

    argv: tuple[str, ...]
    stdin_digest: str
    why: str

    @classmethod
    def of(cls, argv: Sequence[str], stdin: bytes | None, why: str) -> ReadOnlyCommand:
        """The command ``argv`` with ``stdin`` (its content, whatever key it carries)."""
        return cls(tuple(argv), _content_digest(stdin), why)

    @property
    def key(self) -> tuple[tuple[str, ...], str]:
        return self.argv, self.stdin_digest


class ReadOnlyTransport:
    """Carries registered read-only commands to ``inner``; refuses everything else.

    ``on_refused`` hears of every refusal (argv, stdin digest) before the exception is
    raised, so a session can write the attempt into its transcript: a refused command is
    evidence of a bug, and it must not vanish with the exception.
    """

    def __init__(
        self,
        inner: Transport,
        allowed: Iterable[ReadOnlyCommand] = (),
        *,
        on_refused: Callable[[tuple[str, ...], str], None] | None = None,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self._allowed = {c.key: c for c in allowed}
        self._on_refused = on_refused

    @property
    def allowed(self) -> list[ReadOnlyCommand]:
        return list(self._allowed.values())

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        key = (tuple(argv), _content_digest(stdin))
        if key not in self._allowed:
            self._refuse(*key)
        return self.inner.run(argv, stdin=stdin, timeout=timeout)

    def close(self) -> None:
        self.inner.close()

    def _refuse(self, argv: tuple[str, ...], stdin_digest: str) -> None:
        log.error("read_only_refused", target=self.name, argv=list(argv), stdin=stdin_digest[:12])
        if self._on_refused is not None:
            self._on_refused(argv, stdin_digest)
        same_argv = [c for c in self._allowed.values() if c.argv == argv]
        if same_argv:
            detail = (
                f"its stdin (sha256 {stdin_digest[:12] or 'none'}) is not the registered "
                f"{same_argv[0].why} (sha256 {same_argv[0].stdin_digest[:12]})"
            )
        else:
            allowed = "; ".join(
                f"{shlex.join(c.argv)} with the {c.why}" for c in self._allowed.values()
            )
            detail = f"not registered as read-only (allowed: {allowed or 'nothing'})"
        raise ReadOnlyViolation(
            f"read-only mode refused {shlex.join(argv)!r}: {detail}; nothing was run",
            target=self.name,
        )
