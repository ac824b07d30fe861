"""What a restarted trainer wrote to its logs, and what those lines say: a fix is judged
by the new window of the train log and of the console log, read with the parsers the
diagnosis read the whole logs with."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

from playbooks.remote import Remote
from tools.parsers import stdoutlog
from tools.parsers.trainlog import summarize_log

_HEAD = 4096  # bytes of a log compared to tell whether a restart began it afresh

# Where a log ended before the restart, and its first bytes.
LogMark = tuple[int, bytes]


def mark_end(remote: Remote, path: str) -> LogMark:
    """Where ``path`` ends now, and its first bytes (to tell a file started afresh)."""
    size = remote.size(path)
    return size, remote.read_from(path, 0, _HEAD) if size else b""


def written_since(remote: Remote, path: str, mark: LogMark) -> bytes:
    """What the restarted run wrote to ``path``: past the mark, or the whole file when
    the run started it afresh (truncated or replaced: its first bytes differ). A log
    the run never opened (a trainer that died first) holds nothing it wrote: empty, not
    an error that would hide why the fix failed."""
    offset, head = mark
    if not remote.size(path):
        return b""
    if offset and remote.read_from(path, 0, len(head)) != head:
        offset = 0
    return remote.read_from(path, offset)


def window_summary(
    data: bytes,
    log_path: str,
    *,
    fields: dict[str, Any] | None = None,
    throughput_unit: str | None = None,
) -> dict[str, Any]:
    """The train-log summary of the records a restarted run wrote: the trainlog probe's
    own parser with the profile's field names and unit, as the diagnosis read the log;
    ``log_path`` names the format."""
    return _parsed(
        data,
        log_path,
        lambda raw: summarize_log(raw, fields=fields or None, throughput_unit=throughput_unit),
    )


def console_summary(data: bytes, extra: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    """The console-log scan of the lines a restarted run printed: the stdoutlog probe's
    parser with the profile's extra signatures (tracebacks, threads, every signature)."""
    return _parsed(data, "stdout.log", lambda raw: stdoutlog.scan(raw, extra=extra))


def signature_hits(console: dict[str, Any], signature: str) -> int:
    """How many times the console scan saw ``signature`` (an id)."""
    hit = (console.get("signatures") or {}).get(signature) or {}
    count = hit.get("count")
    return count if isinstance(count, int) else 0


def _parsed(data: bytes, name: str, parse: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    # The parsers read a file (fstat, seek); the window is written to one, named like
    # the log since the train-log parser tells formats by the name.
    with tempfile.NamedTemporaryFile(suffix=f"-{os.path.basename(name)}") as fh:
        fh.write(data)
        fh.flush()
        with open(fh.name, "rb", buffering=0) as raw:
            return parse(raw)
