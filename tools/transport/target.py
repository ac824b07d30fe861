"""A target: a transport plus the container hops in front of the command.

``Target`` satisfies the ``Transport`` contract itself, so probes never know whether they
run locally, over SSH, inside ``pct exec`` or all three.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from tools.errors import CommandTimeout
from tools.log import get_logger
from tools.transport.base import CommandResult, Transport, digest
from tools.transport.hops import Hop

log = get_logger(__name__)

# Seconds between the remote `timeout` sending TERM and KILL, and the extra time the
# client waits so that the remote side, which knows best, gets to stop the command first.
_KILL_AFTER = 5
_CLIENT_GRACE = _KILL_AFTER + 5


class Target:
    def __init__(
        self,
        transport: Transport,
        hops: Sequence[Hop] = (),
        *,
        uri: str | None = None,
        remote_timeout: bool | None = None,
    ) -> None:
        self.transport = transport
        self.hops = tuple(hops)
        self.name = uri or "/".join([transport.name, *(str(h) for h in self.hops)])
        # Wrap in coreutils `timeout` wherever the client cannot kill the process itself:
        # a dropped SSH channel or a killed `pct exec` leaves the command running.
        self.remote_timeout = (
            remote_timeout
            if remote_timeout is not None
            else bool(self.hops) or transport.name != "local"
        )

    def wire_argv(self, argv: Sequence[str], timeout: float | None = None) -> list[str]:
        """The argv as it leaves this machine: remote timeout innermost, hops outside it."""
        wired = list(argv)
        if timeout is not None and self.remote_timeout:
            wired = ["timeout", "-k", str(_KILL_AFTER), f"{math.ceil(timeout)}", *wired]
        for hop in reversed(self.hops):
            wired = hop.wrap(wired)
        return wired

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        argv = tuple(argv)
        wired = self.wire_argv(argv, timeout)
        client_timeout = None
        if timeout is not None:
            client_timeout = timeout + _CLIENT_GRACE if self.remote_timeout else timeout
        started = time.monotonic()
        said = " ".join(argv).encode("utf-8", "surrogateescape")  # argv may hold any bytes
        bound = log.bind(target=self.name, argv_digest=digest(said)[:12])
        try:
            raw = self.transport.run(wired, stdin=stdin, timeout=client_timeout)
        except Exception as exc:
            bound.info("command_failed", error=str(exc), duration=time.monotonic() - started)
            raise
        if (
            timeout is not None
            and self.remote_timeout
            and raw.rc in (124, 137)
            and raw.duration >= timeout
        ):
            # coreutils `timeout` exits 124 (TERM worked) or 137 (KILL was needed).
            bound.warning("command_timeout", rc=raw.rc, duration=raw.duration)
            raise CommandTimeout(
                f"{argv[0]!r} ran past its {timeout:g}s limit and was stopped on the target",
                target=self.name,
            )
        bound.info("command", rc=raw.rc, duration=round(raw.duration, 4))
        return CommandResult(
            argv, raw.rc, raw.stdout, raw.stderr, raw.duration, self.name, raw.stdin_digest
        )

    def close(self) -> None:
        self.transport.close()
