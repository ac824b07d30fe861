"""File and process operations on a target, each one command through its transport.

A playbook changes a target only through these, so every change crosses the same
transport (local, SSH, container hops) and lands in the session's transcript like any
other command. Each operation is one run of ``_remote_ops.py`` (standard library only,
Python 3.8 and later) by the target's interpreter, sent with ``-c`` and the operation's
JSON as its argument; it answers one JSON line. A failed operation raises ``ApplyError``
with what failed and where.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tools.errors import ApplyError, ApplyRefused
from tools.transport.base import Transport

# The operations' program, sent as it is to the target's Python (``-c``): a real module
# beside this one, so that ruff and mypy read it.
_PROGRAM = Path(__file__).with_name("_remote_ops.py").read_text(encoding="utf-8")


# The operations that write: each is confined under the workspace (``Remote.confined``).
_WRITES = frozenset({"write", "lock", "unlock", "start", "break", "remove"})


class Remote:
    """The operations, on one target. ``root``: the workspace every write is confined to
    (``confined``); a Remote without one reads and never writes."""

    def __init__(
        self, transport: Transport, interpreter: str = "python3", root: str | None = None
    ) -> None:
        self.transport = transport
        self.interpreter = interpreter
        self.root = root

    def confined(self, root: str) -> Remote:
        """This target's operations, every write confined under ``root``: reached from it
        one directory at a time with no symlink followed, created with ``O_EXCL``."""
        bound = copy.copy(self)  # a subclass (a test's) stays itself
        bound.root = root
        return bound

    def _op(self, *, limit_s: float = 60.0, **op: Any) -> dict[str, Any]:
        if op["op"] in _WRITES and self.root is None:
            where = op.get("path") or op.get("log")
            raise ApplyError(f"{op['op']} {where}: no workspace to confine it to")
        if self.root is not None:
            op["root"] = self.root  # a heartbeat (``beat``) is confined the same way
        # -B: the operations write no bytecode on the target.
        argv = [self.interpreter, "-B", "-c", _PROGRAM, json.dumps(op)]
        result = self.transport.run(argv, timeout=limit_s)
        try:
            answer = json.loads(result.stdout.decode().strip().splitlines()[-1])
        except (ValueError, IndexError):
            stderr = result.stderr.decode(errors="replace").strip()[-300:]
            raise ApplyError(
                f"{op['op']} on {self.transport.name}: no answer (rc {result.rc}): {stderr}"
            ) from None
        if not answer.get("ok"):
            # A refusal (a symlink, a FIFO, a path outside the workspace) changed nothing:
            # the target's state is what must change, hence exit 2.
            error = ApplyRefused if answer.get("refused") else ApplyError
            raise error(
                f"{op['op']} {op.get('path', '')} on {self.transport.name}: {answer.get('error')}"
            )
        return dict(answer)

    def kinds(self, *paths: str) -> list[str]:
        """What each of ``paths`` is, its link not followed: missing, file, link,
        directory or special (one round trip for all of them)."""
        return [str(k) for k in self._op(op="kinds", paths=list(paths))["kinds"]]

    def read(self, path: str) -> bytes:
        return base64.b64decode(self._op(op="read", path=path)["data"])

    def write(self, path: str, data: bytes, *, follow_link: bool = False) -> str:
        """Write ``path`` whole (a temporary file in its directory, fsynced, renamed over
        it, the directory fsynced), keeping its mode and owner; its sha256 after.
        ``follow_link``: a ``path`` that is a symlink is written where it points (inside
        the workspace too), so the link stays a link."""
        return str(
            self._op(
                op="write", path=path, data=base64.b64encode(data).decode(), follow=follow_link
            )["sha256"]
        )

    def remove(self, path: str) -> None:
        """Remove the regular file ``path`` (a file a fix created), if it is there."""
        self._op(op="remove", path=path)

    def sha256(self, path: str) -> str | None:
        answer = self._op(op="stat", path=path)
        return answer.get("sha256") if answer["exists"] else None

    def lock(self, path: str, owner: str) -> tuple[bool, str]:
        locked, holder, _ = self.try_lock(path, owner)
        return locked, holder

    def try_lock(self, path: str, owner: str) -> tuple[bool, str, float | None]:
        """Take the lock ``path`` for ``owner``; else who holds it and how long ago its
        heartbeat (the lock's mtime, target clock) was last touched."""
        answer = self._op(op="lock", path=path, owner=owner)
        age = answer.get("age")
        return (
            bool(answer["locked"]),
            str(answer.get("owner", "")),
            float(age) if isinstance(age, int | float) else None,
        )

    def break_lock(self, path: str) -> None:
        """Move a stale lock out of the way (renamed beside it, kept for the record)."""
        self._op(op="break", path=path)

    def started_at(self, pid: int) -> str | None:
        """The process's start time (clock ticks since boot), to tell it from a later
        process given the same pid; None when there is no such process."""
        start = self._op(op="proc", pid=pid).get("start")
        return None if start is None else str(start)

    def unlock(self, path: str) -> None:
        self._op(op="unlock", path=path)

    def running_pid(self, pid_file: str) -> int | None:
        answer = self._op(op="pid", path=pid_file)
        return int(answer["pid"]) if answer["alive"] else None

    def alive(self, pid: int) -> bool:
        return bool(self._op(op="alive", pid=pid)["alive"])

    def stdio(self, pid: int) -> dict[str, str | None]:
        """The files ``pid``'s stdout ("1") and stderr ("2") are written to, if files."""
        answer = self._op(op="stdio", pid=pid)
        return {fd: answer.get(fd) for fd in ("1", "2")}

    def knob(self, script: str, flag: str, value: str | None = None) -> str | None:
        """The file of the trainer's own code (``script`` and the modules it imports from
        its tree) that declares ``flag`` (with ``value`` among its literals), or None."""
        found = self._op(op="knob", script=script, flag=flag, value=value)["found"]
        return None if found is None else str(found)

    def knob_like(self, script: str, pattern: str) -> tuple[str, str] | None:
        """The file of the trainer's own code (as ``knob`` searches) holding a literal
        ``pattern`` matches whole, and that literal (the option's name as the trainer
        spells it), or None."""
        answer = self._op(op="knob", script=script, flag=None, pattern=pattern)
        if answer["found"] is None:
            return None
        return str(answer["found"]), str(answer["literal"])

    def stop(self, pid: int, timeout: float = 60.0, beat: str | None = None) -> bool:
        """SIGTERM (the trainer checkpoints and exits), SIGKILL after ``timeout``;
        ``beat``: a lock whose heartbeat is kept while it waits."""
        return bool(
            self._op(limit_s=timeout + 30, op="stop", pid=pid, timeout=timeout, beat=beat)["killed"]
        )

    def start(
        self, argv: Sequence[str], cwd: str, log: str, env: dict[str, str] | None = None
    ) -> int:
        return self.start_process(argv, cwd, log, env)[0]

    def start_process(
        self, argv: Sequence[str], cwd: str, log: str, env: dict[str, str] | None = None
    ) -> tuple[int, str | None]:
        """Start ``argv`` detached, its output appended to ``log``: its pid and start time."""
        answer = self._op(op="start", argv=list(argv), cwd=cwd, log=log, env=env or {})
        start = answer.get("start")
        return int(answer["pid"]), None if start is None else str(start)

    def wait(self, pid: int, timeout: float, beat: str | None = None) -> bool:
        """Whether ``pid`` ended within ``timeout`` seconds; ``beat`` as for ``stop``."""
        return bool(
            self._op(limit_s=timeout + 30, op="wait", pid=pid, timeout=timeout, beat=beat)["exited"]
        )

    def size(self, path: str) -> int:
        answer = self._op(op="stat", path=path)
        return int(answer["size"]) if answer["exists"] else 0

    def read_from(self, path: str, offset: int, limit: int = 64 << 20) -> bytes:
        """Bytes of ``path`` from ``offset`` (what a run appended since)."""
        return base64.b64decode(
            self._op(op="read_from", path=path, offset=offset, limit=limit)["data"]
        )
