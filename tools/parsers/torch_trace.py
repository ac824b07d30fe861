"""torch's structured trace (``TORCH_TRACE=DIR``, what tlparse reads), read streaming.

torch writes one file per process, ``dedicated_log_torch_trace_[rank_<R>_]<random>.log``
(torch/_logging/_internal.py, ``LOG_PREFIX``). Each record is one line: glog's prefix
(``V1202 20:30:32.414000 4987 torch/_dynamo/guards.py:5400]``) and a JSON object; a record
with a payload (``has_payload``) is followed by its payload's lines, each starting with a
tab. This reader keeps, from torch 2.13's records:

- ``compilation_metrics``: one per compile id (``frame/attempt``): the function
  (``co_name``, ``co_filename``, ``co_firstlineno``), ``cache_size`` and
  ``accumulated_cache_size`` (entries the frame already had), ``fail_type`` and
  ``fail_reason`` (a compile that failed: dynamo's ``Dynamo recompile limit exceeded``
  among them), ``restart_reasons``, ``entire_frame_compile_time_s``;
- the ``recompile_reasons`` artifact: its payload lists the guard failures behind a
  recompile, newest first (a bare line for one, a JSON list for several);
- the ``torch_version`` artifact.

Bounded: lines over ``max_line`` bytes are skipped (counted), at most ``max_bytes`` read,
``MAX_ROWS`` compile ids kept (the first and last halves), ``MAX_FUNCTIONS`` functions.
"""

from __future__ import annotations

import json
import re
from typing import IO, Any

from ..figures import finite_number

MAX_ROWS = 400
MAX_FUNCTIONS = 64
MAX_TEXT = 300
_PREFIX = re.compile(rb"^(?:\[rank\d+\]:)?[A-Z]\d{4} \S+ \d+ \S+\] ")
_RANK = re.compile(r"rank_(\d+)_")


def _clip(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    return value.strip().splitlines()[0][:MAX_TEXT] if value.strip() else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def rank_of(name: str) -> int | None:
    found = _RANK.search(name)
    return int(found.group(1)) if found else None


class _Reader:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.dropped = 0
        self.functions: dict[str, dict[str, Any]] = {}  # frame id -> its function
        self.version: str | None = None
        self.pending: dict[str, Any] | None = None  # a record whose payload follows
        self.payload: list[bytes] = []
        self.reasons: dict[str, str] = {}  # compile id -> the newest guard failure

    def record(self, line: bytes, number: int) -> None:
        self.flush()
        body = _PREFIX.sub(b"", line, count=1)
        if not body.startswith(b"{"):
            return
        try:
            rec = json.loads(body)
        except ValueError:
            return
        if not isinstance(rec, dict):
            return
        if "compilation_metrics" in rec:
            self.metrics(rec["compilation_metrics"], number)
        artifact = rec.get("artifact")
        if (
            isinstance(artifact, dict)
            and rec.get("has_payload")
            and artifact.get("name") in ("recompile_reasons", "torch_version")
        ):
            self.pending = rec

    def payload_line(self, line: bytes) -> None:
        if self.pending is not None and len(self.payload) < 2000:
            self.payload.append(line[1:])

    def flush(self) -> None:
        """The payload of the record before, now that it has ended."""
        rec, lines = self.pending, self.payload
        self.pending, self.payload = None, []
        if rec is None:
            return
        text = b"\n".join(lines).decode("utf-8", "replace")
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        name = rec["artifact"].get("name")
        if name == "torch_version" and isinstance(value, dict):
            self.version = _clip(value.get("pytorch_version"))
        elif name == "recompile_reasons":
            first = value[0] if isinstance(value, list) and value else value
            cid = f"{rec.get('frame_id')}/{rec.get('frame_compile_id')}"
            reason = _clip(first)
            if reason:
                self.reasons[cid] = reason

    def metrics(self, m: object, number: int) -> None:
        if not isinstance(m, dict):
            return
        cid = str(m.get("compile_id") or "?")
        frame = cid.split("/")[0]
        name = m.get("co_name")
        if isinstance(name, str):
            self.functions.setdefault(
                frame,
                {
                    "function": name,
                    "file": _clip(m.get("co_filename")),
                    "line": _int(m.get("co_firstlineno")),
                },
            )
        restarts = m.get("restart_reasons")
        row = {
            "compile_id": cid,
            "line": number,
            "frame": frame,
            "cache_size": _int(m.get("cache_size")),
            "accumulated_cache_size": _int(m.get("accumulated_cache_size")),
            "compile_time_s": finite_number(m.get("entire_frame_compile_time_s")),
            "fail_type": _clip(m.get("fail_type")),
            "fail_reason": _clip(m.get("fail_reason")),
            "restarts": len(restarts) if isinstance(restarts, list) else 0,
            "restart_reason": _clip(restarts[0])
            if isinstance(restarts, list) and restarts
            else None,
        }
        if len(self.rows) < MAX_ROWS:
            self.rows.append(row)
        else:
            # Keep the first half and the newest half: the start and where it ended.
            self.rows.pop(MAX_ROWS // 2)
            self.rows.append(row)
            self.dropped += 1

    def result(self) -> dict[str, Any]:
        self.flush()
        for row in self.rows:
            fn = self.functions.get(row["frame"]) or {}
            row["function"] = fn.get("function")
            row["guard_failure"] = self.reasons.get(row["compile_id"])
        per: dict[str, dict[str, Any]] = {}
        for row in self.rows:
            known = self.functions.get(row["frame"])
            if known is None or (row["frame"] not in per and len(per) >= MAX_FUNCTIONS):
                continue
            entry = per.setdefault(
                row["frame"],
                {**known, "frame": row["frame"], "compiles": 0, "failed": 0, "compile_time_s": 0.0},
            )
            entry["compiles"] += 1
            entry["failed"] += 1 if row["fail_type"] else 0
            entry["compile_time_s"] = round(
                entry["compile_time_s"] + (row["compile_time_s"] or 0), 6
            )
            # A compile with N entries in the frame's cache is its N-th recompile.
            entry["recompiles"] = max(entry.get("recompiles", 0), row["cache_size"] or 0)
            if row["fail_type"] and "first_failure" not in entry:
                entry["first_failure"] = {
                    "compile_id": row["compile_id"],
                    "fail_type": row["fail_type"],
                    "fail_reason": row["fail_reason"],
                }
        return {
            "torch_version": self.version,
            "compiles": self.rows,
            "compiles_dropped": self.dropped,
            "functions": sorted(per.values(), key=lambda f: -f["compiles"]),
            "failed": [r for r in self.rows if r["fail_type"]][:20],
        }


def read_trace(
    f: IO[bytes], *, max_bytes: int = 256 << 20, max_line: int = 4 << 20
) -> dict[str, Any]:
    """One trace file, read line by line: what it says, and how much was read."""
    reader = _Reader()
    read = lines = skipped = 0
    cut = False
    while read < max_bytes:
        line = f.readline(max_line + 1)
        if not line:
            break
        read += len(line)
        lines += 1
        if len(line) > max_line and not line.endswith(b"\n"):
            skipped += 1
            while True:  # the rest of an over-long line
                more = f.readline(max_line + 1)
                read += len(more)
                if not more or more.endswith(b"\n") or read >= max_bytes:
                    break
            continue
        line = line.rstrip(b"\n")
        if line.startswith(b"\t"):
            reader.payload_line(line)
        else:
            reader.record(line, lines)
    else:
        # The bound reached is a cut only where the file goes on past it.
        cut = bool(f.read(1))
    out = reader.result()
    out.update(bytes_read=read, lines=lines, overlong_lines=skipped, cut=cut)
    return out
