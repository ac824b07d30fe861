"""What torch's own logs say in the console, read as the console scan reads its blocks.

- ``TORCH_LOGS=recompiles``: torch/_dynamo/guards.py logs, per recompile, ``Recompiling
  function <name> in <file>:<line>``, then ``triggered by the following guard
  failure(s):`` and one ``- <compile id>: <reason>`` line per cache entry it failed
  against (torch 2.13: ``tensor 'x' size mismatch at index 0. expected 8, actual 9``).
- ``TORCH_LOGS=graph_breaks``: torch/_dynamo/symbolic_convert.py logs ``Graph break
  [(user stack suppressed …)] in user code at <file>:<line>`` and then ``Graph Break
  Reason: <reason>``.
- dynamo's recompile-limit warning (torch/_dynamo/convert_frame.py, logged whatever
  TORCH_LOGS says): ``torch._dynamo hit config.<limit> (<value>)`` with its continuation
  lines ``function: '<name>' (<file>:<line>)`` and ``last reason: <id>: <reason>``; the
  limit is ``recompile_limit``, ``cache_size_limit`` (older builds) or an
  ``accumulated_`` one.

- the NCCL watchdog (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, printed whatever
  TORCH_LOGS says): ``[Rank R] Watchdog caught collective operation timeout:
  WorkNCCL(SeqNum=S, OpType=OP, …, Timeout(ms)=T) ran for M milliseconds before timing
  out.``, and the watchdog's progress line, ``… Rank R] Exception (either an error or
  timeout) detected by watchdog at work: S, last enqueued NCCL work: E, last completed
  NCCL work: C.`` (``Last enqueued …`` where a dump signal came from another rank).

Each TORCH_LOGS line carries torch's prefix: ``V1202 20:02:54.205000 8330
torch/_dynamo/guards.py:5396] [0/5] [__recompiles] …`` (level and date, time, process id,
source, compile id, artifact), after torchrun's ``[rank0]:`` where a launcher adds one.
Everything is bounded: at most ``MAX_KEYS`` functions or locations, ``MAX_FAILURES``
distinct guard failures each, ``MAX_SIZES`` distinct new sizes.
"""

from __future__ import annotations

import re
from typing import Any

MAX_KEYS = 64
MAX_FAILURES = 20
MAX_SIZES = 256
MAX_TEXT = 300

_LOGGED = re.compile(
    rb"(?m)^(?:\[rank(?P<rank>\d+)\]:)?[A-Z]\d{4} \S+ (?P<pid>\d+) \S+\] "
    rb"\[(?P<cid>[^\]\n]*)\] \[__(?P<kind>recompiles|graph_breaks)\] ?(?P<msg>[^\n]*)$"
)
_RECOMPILING = re.compile(r"^Recompiling function (?P<fn>\S+) in (?P<file>.+):(?P<line>\d+)\s*$")
_FAILURE = re.compile(r"^\s*- (?P<cid>[^:\s]+): (?P<reason>.+)$")
_SIZE = re.compile(
    r"tensor '(?P<tensor>[^']+)' size mismatch at index (?P<index>\d+)\. "
    r"expected (?P<expected>\d+), actual (?P<actual>\d+)"
)
_BREAK = re.compile(r"^Graph break(?: \([^)]*\))? in user code at (?P<file>.+):(?P<line>\d+)\s*$")
_REASON = re.compile(r"^Graph Break Reason: (?P<reason>.+)$")
_LIMIT = re.compile(
    rb"(?m)^(?:\[rank(?P<rank>\d+)\]:)?[^\n]*?torch\._dynamo hit config\."
    rb"(?P<limit>\w+) \((?P<value>\d+)\)[^\n]*$"
)
# torch's formatter repeats its prefix on each line of a message; plain logging does not.
_PREFIX = rb"(?:\[rank\d+\]:)?(?:[A-Z]\d{4} \S+ \d+ \S+\] (?:\[[^\]\n]*\] ?)?)?"
_LIMIT_FUNCTION = re.compile(_PREFIX + rb"\s*function: '(?P<fn>[^']+)' \((?P<where>[^)\n]*)\)")
_LIMIT_REASON = re.compile(_PREFIX + rb"\s*last reason: (?P<reason>[^\n]+)")


_WATCHDOG = re.compile(
    rb"(?:\[Rank (?P<rank>\d+)\] )?Watchdog caught collective operation timeout: "
    rb"WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)[^\n)]*?Timeout\(ms\)=(?P<timeout>\d+)\)"
    rb" ran for (?P<ran>\d+) milliseconds"
)
_WORK = re.compile(
    rb"Rank (?P<rank>\d+)\] [^\n]*?[Ll]ast enqueued NCCL work: (?P<enqueued>-?\d+), "
    rb"last completed NCCL work: (?P<completed>-?\d+)"
)


def _text(raw: str | bytes) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return text.strip()[:MAX_TEXT]


class _Function:
    """One recompiled function: its recompiles and the guard failures behind them."""

    def __init__(self, name: str, file: str, line: int) -> None:
        self.name, self.file, self.line = name, file, line
        self.count = 0
        self.first_line: int | None = None
        self.last_line: int | None = None
        self.compile_ids: list[str] = []
        # Each recompile lists a failure per cache entry it was checked against, newest
        # first: its first is why it recompiled (the others repeat it against older
        # entries), and is the one kept; every line is counted.
        self.failures: dict[str, dict[str, Any]] = {}
        self.more_failures = 0
        self.failure_lines = 0
        self.sizes: dict[str, list[int]] = {}  # tensor -> distinct new sizes (``actual``)

    def failed(self, reason: str, at: int | None, first: bool) -> None:
        self.failure_lines += 1
        if not first:
            return
        seen = self.failures.get(reason)
        if seen is not None:
            seen["count"] += 1
        elif len(self.failures) < MAX_FAILURES:
            entry: dict[str, Any] = {"reason": reason, "count": 1, "first_line": at}
            size = _SIZE.search(reason)
            if size:
                entry.update(
                    tensor=size["tensor"],
                    index=int(size["index"]),
                    expected=int(size["expected"]),
                    actual=int(size["actual"]),
                )
            self.failures[reason] = entry
        else:
            self.more_failures += 1
        size = _SIZE.search(reason)
        if size:
            sizes = self.sizes.setdefault(f"{size['tensor']}[{size['index']}]", [])
            actual = int(size["actual"])
            if actual not in sizes and len(sizes) < MAX_SIZES:
                sizes.append(actual)

    def summary(self) -> dict[str, Any]:
        return {
            "function": self.name,
            "file": self.file,
            "line": self.line,
            "recompiles": self.count,
            "first_line": self.first_line,
            "last_line": self.last_line,
            "compile_ids": self.compile_ids,
            "guard_failures": list(self.failures.values()),
            "more_guard_failures": self.more_failures,
            "guard_failure_lines": self.failure_lines,
            "new_sizes": {k: sorted(v) for k, v in self.sizes.items()},
            "distinct_new_sizes": max((len(v) for v in self.sizes.values()), default=0),
        }


class TorchLogs:
    """Reads torch's recompile, graph-break and recompile-limit lines from every block
    the console scan reads (``feed``), in order."""

    def __init__(self) -> None:
        self.functions: dict[tuple[str, str, int], _Function] = {}
        self.breaks: dict[tuple[str, int], dict[str, Any]] = {}
        self.limits: list[dict[str, Any]] = []
        self.overflow = 0
        self.ranks: set[int] = set()
        # Per (rank, pid): the recompile whose failures follow, the break whose reason does.
        self.open_recompile: dict[tuple[str, str], _Function] = {}
        self.failures_seen: dict[tuple[str, str], int] = {}  # of the open recompile
        self.open_break: dict[tuple[str, str], dict[str, Any]] = {}
        self.open_limit: dict[str, Any] | None = None
        self.timeouts: list[dict[str, Any]] = []
        self.work: dict[int, dict[str, int | None]] = {}  # rank -> its last such line

    def gap(self) -> None:
        """The scan skipped part of the log: nothing continues across it."""
        self.open_recompile.clear()
        self.failures_seen.clear()
        self.open_break.clear()
        self.open_limit = None

    def feed(self, data: bytes, first_line: int | None, offset: int) -> None:
        if b"[__" in data:
            self._logged(data, first_line)
        if self.open_limit is not None or b"hit config." in data:
            self._limits(data, first_line)
        if b"Watchdog caught" in data or b"ast enqueued NCCL work" in data:
            self._watchdog(data, first_line)

    def _watchdog(self, data: bytes, first_line: int | None) -> None:
        for m in _WATCHDOG.finditer(data):
            rank = int(m["rank"]) if m["rank"] is not None else None
            said = next(
                (t for t in self.timeouts if (t["rank"], t["seq"]) == (rank, int(m["seq"]))), None
            )
            if said is not None:  # the same timeout again (glog's line, then what())
                said["mentions"] += 1
                continue
            if len(self.timeouts) >= MAX_KEYS:
                self.overflow += 1
                break
            self.timeouts.append(
                {
                    "rank": rank,
                    "seq": int(m["seq"]),
                    "op": m["op"].decode(),
                    "timeout_ms": int(m["timeout"]),
                    "ran_ms": int(m["ran"]),
                    "line": self._line_at(data, m.start(), first_line),
                    "mentions": 1,
                }
            )
        for m in _WORK.finditer(data):
            if len(self.work) < MAX_KEYS or int(m["rank"]) in self.work:
                self.work[int(m["rank"])] = {
                    "last_enqueued": int(m["enqueued"]),
                    "last_completed": int(m["completed"]),
                    "work_line": self._line_at(data, m.start(), first_line),
                }

    def _line_at(self, data: bytes, pos: int, first_line: int | None) -> int | None:
        return None if first_line is None else first_line + data.count(b"\n", 0, pos)

    def _logged(self, data: bytes, first_line: int | None) -> None:
        for m in _LOGGED.finditer(data):
            at = self._line_at(data, m.start(), first_line)
            if m["rank"] is not None:
                self.ranks.add(int(m["rank"]))
            who = ((m["rank"] or b"").decode(), m["pid"].decode())
            msg = m["msg"].decode("utf-8", "replace")
            cid = m["cid"].decode("utf-8", "replace")
            if m["kind"] == b"recompiles":
                self._recompile(who, cid, msg, at)
            else:
                self._graph_break(who, msg, at)

    def _full(
        self, table: dict[Any, Any], who: tuple[str, str], open_for: dict[tuple[str, str], Any]
    ) -> bool:
        """Whether ``table`` has no room for a new key. Then the line is counted as
        overflow, and what ``who`` had open is closed: the lines that follow belong to the
        entry that was not kept, not to it."""
        if len(table) < MAX_KEYS:
            return False
        self.overflow += 1
        open_for.pop(who, None)
        return True

    def _recompile(self, who: tuple[str, str], cid: str, msg: str, at: int | None) -> None:
        started = _RECOMPILING.match(msg)
        if started:
            key = (started["fn"], started["file"], int(started["line"]))
            fn = self.functions.get(key)
            if fn is None:
                if self._full(self.functions, who, self.open_recompile):
                    return
                fn = self.functions[key] = _Function(*key)
            fn.count += 1
            fn.first_line = fn.first_line if fn.first_line is not None else at
            fn.last_line = at
            if len(fn.compile_ids) < MAX_FAILURES:
                fn.compile_ids.append(cid)
            self.open_recompile[who] = fn
            self.failures_seen[who] = 0
            return
        failure = _FAILURE.match(msg)
        fn = self.open_recompile.get(who)
        if failure and fn is not None:
            fn.failed(_text(failure["reason"]), at, self.failures_seen[who] == 0)
            self.failures_seen[who] += 1

    def _graph_break(self, who: tuple[str, str], msg: str, at: int | None) -> None:
        started = _BREAK.match(msg)
        if started:
            key = (started["file"], int(started["line"]))
            entry = self.breaks.get(key)
            if entry is None:
                if self._full(self.breaks, who, self.open_break):
                    return
                entry = self.breaks[key] = {
                    "file": key[0],
                    "line": key[1],
                    "count": 0,
                    "reason": None,
                    "first_line": at,
                }
            entry["count"] += 1
            self.open_break[who] = entry
            return
        reason = _REASON.match(msg)
        entry = self.open_break.pop(who, None) if reason else None
        if entry is not None and reason is not None and entry["reason"] is None:
            entry["reason"] = _text(reason["reason"])

    def _limits(self, data: bytes, first_line: int | None) -> None:
        pos = 0
        if self.open_limit is not None:
            pos = self._continue_limit(data, 0)
        for m in _LIMIT.finditer(data, pos):
            if len(self.limits) >= MAX_KEYS:
                self.overflow += 1
                return
            self.open_limit = {
                "limit": m["limit"].decode(),
                "value": int(m["value"]),
                "rank": int(m["rank"]) if m["rank"] is not None else None,
                "line": self._line_at(data, m.start(), first_line),
                "function": None,
                "where": None,
                "last_reason": None,
            }
            self.limits.append(self.open_limit)
            self._continue_limit(data, m.end() + 1)

    def _continue_limit(self, data: bytes, pos: int) -> int:
        """The warning's continuation lines from ``pos``: its function and last reason.
        Returns where they end."""
        limit = self.open_limit
        while limit is not None and pos < len(data):
            end = data.find(b"\n", pos)
            end = len(data) if end < 0 else end
            line = data[pos:end]
            fn, reason = _LIMIT_FUNCTION.match(line), _LIMIT_REASON.match(line)
            if fn:
                limit["function"], limit["where"] = _text(fn["fn"]), _text(fn["where"])
            elif reason:
                limit["last_reason"] = _text(reason["reason"])
                self.open_limit = limit = None
            else:
                self.open_limit = limit = None
                return pos
            pos = end + 1
        return pos

    def result(self) -> dict[str, Any]:
        functions = sorted(self.functions.values(), key=lambda f: -f.count)
        breaks = sorted(self.breaks.values(), key=lambda b: -int(b["count"]))
        return {
            "recompiles": {
                "count": sum(f.count for f in functions),
                "functions": [f.summary() for f in functions],
            },
            "graph_breaks": {"count": sum(int(b["count"]) for b in breaks), "locations": breaks},
            "limit_hits": self.limits,
            "collective_timeouts": [{**t, **self.work.get(t["rank"], {})} for t in self.timeouts],
            "nccl_work": {str(r): w for r, w in sorted(self.work.items())},
            "ranks": sorted(self.ranks),
            "overflow": self.overflow,
        }
