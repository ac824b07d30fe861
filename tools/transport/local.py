"""Run commands on this machine: subprocess with an argv, never a shell."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence

from tools.errors import CommandTimeout, TransportError
from tools.transport.base import CommandResult, digest


class LocalTransport:
    name = "local"

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        argv = tuple(argv)
        started = time.monotonic()
        try:
            # A new session so a timeout kills the whole process group, not just the
            # first process: `sh -c 'sleep 100 & wait'` must not leave the sleep behind.
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError:
            # Same convention as a shell: command not found is exit 127, and that is data.
            message = f"{argv[0]}: command not found\n".encode()
            return CommandResult(
                argv, 127, b"", message, time.monotonic() - started, self.name, digest(stdin)
            )
        except OSError as exc:
            raise TransportError(
                f"cannot start {argv[0]!r}: {exc.strerror}", target=self.name
            ) from exc
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            _kill_group(proc)
            raise CommandTimeout(
                f"command {argv[0]!r} still running after {timeout:g}s; killed", target=self.name
            ) from exc
        # A signal death is -N from subprocess; report it as a shell would (128 + N), the
        # same number an SSH target's shell gives, so exit codes compare across transports.
        rc = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
        return CommandResult(
            argv, rc, out, err, time.monotonic() - started, self.name, digest(stdin)
        )

    def close(self) -> None:
        pass


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # it may have exited just now
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
