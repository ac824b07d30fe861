"""Error signatures in a trainer's stdout/stderr log (``train_stdout.log``).

Shipped in the probe bundle: stdlib only, Python >= 3.8.

Every signature is a row of ``signatures.SIGNATURES`` (the one source of their ids and
of torch's texts): an id the rules cite, a regex (bytes, multiline), and what a hit
means. Add a row there to teach the doctor a new failure; a target profile can add rows
of its own (``extra`` in ``scan``). For each signature the
scan reports how often it hit, the first and last line numbers, and the first and last
matching lines. Python tracebacks are followed to their final exception line and tied
to the thread that raised them (``Exception in thread NAME:`` just before). ``_hits``
keeps what each signature and cause hit, and finds their lines.

Each exception line (a traceback's last, or the ``what():`` of a C++ exception that
aborted the process) is also grouped by the cause it states, in ``exception_causes``: the
first of ``CAUSES`` whose signature it matches, else its exception's class. Per cause:
the lines, the threads it ended, how many lines it hit outside any thread, and how many
lines of the log follow its last one (None when the middle of the log was skipped and
it lay before the gap), which tells an exception that ended the run from one logged on
the way.

Progress bars (tqdm's meter, redrawn with ``\r``) are read as the trainer's own stated
speed, in ``progress`` (see ``_bars``); a bar whose updates make a line longer than
``max_line`` is not read (an epoch of a bar that nothing interrupts with a newline).

Reading is bounded like the JSONL summary (see ``_lines``): overlong lines are counted,
not held, and a file over ``max_scan`` is read as head and tail, with line numbers in
the tail unknown (offsets are always given).
"""

from __future__ import annotations

import ast
import functools
import io
import math
import os
import re
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from ._bars import Bars
from ._bounded import Budget, Overran
from ._hits import (
    MAX_KEYS,
    PREFIX,
    SAMPLE,
    Cause,
    Hit,
    clip,
    earliest,
    exception_line,
    lines_matching,
)
from ._lines import LineReader, plan_ranges
from ._torchlogs import TorchLogs
from .signatures import (
    CAUSES,
    CPP_TERMINATE,
    EXCEPTION_IGNORED,
    MIDRUN,
    RUN_SUMMARY,
    SIGNATURES,
    THREAD_EXCEPTION,
    TRACEBACK,
    Signature,
)

__all__ = ["compile_signatures", "scan"]


MAX_SUMMARIES = 50  # run summaries kept (one per train() call)
SUMMARY_BYTES = 4096  # a summary dict longer than this is not read
# A step number a log line prints: "step 690", "Step 690/1000", "global_step=690",
# "epoch_0_step_690", Lightning's "epoch=0-step=690.ckpt", "checkpoint-epoch0-step800",
# a printed dict's "'global_step': 690".
# A progress bar's "690/2000" is not read: tqdm redraws with \r, so it has no lines.
_STEP = re.compile(rb"(?i)(?:\b|_)(?:global[_ ])?step[ \t=:#_'\"-]*([0-9]{1,12})(?![0-9]|\.[0-9])")
_STEP_WORDS = (b"step", b"Step", b"STEP")
TB_LINES = 5000  # a traceback longer than this is reported without its exception line
_THREAD = re.compile(rb"(?:Exception in (?:thread|process) (.*?):?|Process (\S+):)\s*$")
_TB_HEAD = b"Traceback (most recent call last):"
PROFILE_PATTERN_SECONDS = 5.0  # a profile's signature, over the whole scan (``_bounded``)
_TERMINATE = re.compile(rb"terminate called after throwing an instance of '([^'\n]*)'")
_WHAT = b"what():"


@functools.lru_cache(maxsize=None)  # noqa: UP033 (functools.cache is 3.9+; this ships to 3.8)
def _regex(pattern: str) -> re.Pattern[bytes]:
    """A signature's pattern, compiled once: by the profile's check and by each scan."""
    return re.compile(pattern.encode(), re.M)


class _Scanner:
    def __init__(self, signatures: Sequence[Signature]) -> None:
        self.signatures = list(signatures)
        self.compiled = [
            (sig, _regex(sig.pattern), [n.encode() for n in sig.needles]) for sig in self.signatures
        ]
        self.hits = [Hit() for _ in self.signatures]
        # A profile's rows (after the table) search under a time budget each.
        self.budgets = {
            i: Budget(PROFILE_PATTERN_SECONDS, total=PROFILE_PATTERN_SECONDS)
            for i in range(len(SIGNATURES), len(self.signatures))
        }
        self.abandoned: dict[str, str] = {}
        self.cause_regexes = [
            (sig.id, regex) for sig, regex, _ in self.compiled if sig.id in CAUSES
        ]
        self.cause_regexes.sort(key=lambda pair: CAUSES.index(pair[0]))
        self.causes: dict[str, Cause] = {}
        self.seen = 0  # lines in the blocks already scanned (all ranges)
        self.range_index = 0  # which of the planned byte ranges is being read
        self.exceptions: dict[str, Hit] = {}
        self.threads: dict[str, Hit] = {}
        self.pending_thread: str | None = None  # "Exception in thread X:" just seen
        self.pending_thread_line: int | None = None
        self.ignored_line = -1  # where "Exception ignored in ..." was last seen
        self.pending_tb: dict[str, Any] | None = None  # traceback still open at block end
        self.tail: deque[str] = deque(maxlen=10)
        # The newest step marker of the blocks already scanned in this range.
        self.step_seen: dict[str, int | None] | None = None
        self.summaries: list[dict[str, Any]] = []  # Trainer's run summaries, in order

    def _step_before(
        self, data: bytes, end: int, first_line: int | None, newlines: int | None = None
    ) -> dict[str, int | None] | None:
        """The last step number printed in ``data[:end]`` (the line holding ``end``
        included up to ``end``), else the newest of earlier blocks. Searched backwards
        only when asked (a signature's first hit, a block's end), so a log that prints a
        step on every line costs a few lookups, not a regex per line."""
        pos = end
        while pos > 0:
            at = max(data.rfind(word, 0, pos) for word in _STEP_WORDS)
            if at < 0:
                break
            start = data.rfind(b"\n", 0, at) + 1
            stop = data.find(b"\n", at)
            stop = min(end, len(data) if stop < 0 else stop)
            found = None
            for match in _STEP.finditer(data, start, stop):
                found = match  # the line's last step number is the one that counts
            if found is not None:
                if first_line is None:
                    line = None
                elif newlines is not None:  # near the block's end: count what follows
                    line = first_line + newlines - data.count(b"\n", start)
                else:
                    line = first_line + data.count(b"\n", 0, start)
                return {"step": int(found.group(1)), "line": line}
            pos = start - 1 if start > 0 else 0
        return self.step_seen

    def _exception(
        self,
        line: int | None,
        offset: int,
        text: bytes,
        thread: str | None,
        index: int,
        name: str | None = None,
        ignored: bool = False,
    ) -> None:
        """One exception line (a traceback's last, or a C++ exception's what()); ``index``
        is its place among all lines read, ``name`` its class when the text lacks it. One
        Python said it ignored states no cause."""
        if name is None:  # a traceback's line: its prefix goes, the class leads
            m = PREFIX.match(text)
            if m:
                text = text[m.end() :]
            head = text.split(b":", 1)[0].strip()
            name = head.decode("utf-8", "replace")[:120] if head else "?"
        self.exceptions.setdefault(name, Hit()).add(line, offset, text)
        if thread is not None:
            key = f"{thread} -> {name}"
            self.threads.setdefault(key, Hit()).add(line, offset, text)
        if ignored:
            return
        cause = next((sid for sid, regex in self.cause_regexes if regex.search(text)), name)
        found = self.causes.setdefault(cause, Cause(name))
        found.add(line, offset, text)
        found.seen_in(thread, index, self.range_index)

    def _run_summary(self, line: int | None, offset: int, text: bytes) -> None:
        """One train() call's summary dict, its numbers read (Trainer prints them as
        strings since transformers 5); a training step's record (it has a loss) is not
        one."""
        if len(self.summaries) >= MAX_SUMMARIES:
            return
        start, end = text.find(b"{"), text.rfind(b"}")
        if start < 0 or end < start or end - start > SUMMARY_BYTES:
            return
        try:
            found = ast.literal_eval(text[start : end + 1].decode("utf-8", "replace"))
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            return
        if not isinstance(found, dict) or "loss" in found:
            return
        figures = {}
        for key, value in found.items():
            try:
                number = float(value)
            except (TypeError, ValueError):
                continue
            if isinstance(key, str) and not isinstance(value, bool) and math.isfinite(number):
                figures[key[:64]] = number
        if "train_runtime" in figures:
            self.summaries.append({"line": line, "offset": offset, "figures": figures})

    def _terminate(
        self, data: bytes, start: int, end: int, line: int | None, offset: int, index: int
    ) -> None:
        """libstdc++'s "terminate called after throwing an instance of 'T'", then the
        exception's text on its "  what():  " line: the process aborted with it."""
        t = _TERMINATE.search(data, start, end)
        name = t.group(1).decode("utf-8", "replace")[:120] if t else "?"
        nxt_end = data.find(b"\n", end + 1)
        if end < len(data) and nxt_end != end + 1:
            nxt = data[end + 1 : nxt_end if nxt_end >= 0 else len(data)]
            m = PREFIX.match(nxt)
            body = nxt[m.end() :].lstrip() if m else nxt.lstrip()
            if body.startswith(_WHAT):
                what_line = None if line is None else line + 1
                self._exception(
                    what_line, offset + end + 1, body[len(_WHAT) :].strip(), None, index + 1, name
                )
                return
        text = data[t.start() : end] if t else data[start:end]
        self._exception(line, offset + start, text, None, index, name)

    def candidates(self, data: bytes, offset: int = 0) -> list[tuple[int, int, int]]:
        """(line start, line end, signature index) of every matching line, in order; a
        profile's row under its time budget (``offset``: where ``data`` starts)."""
        found: list[tuple[int, int, int]] = []
        for index, (sig, regex, needles) in enumerate(self.compiled):
            budget = self.budgets.get(index)
            if budget is None:
                found += lines_matching(data, regex, needles, index)
                continue
            if budget.overran:
                continue
            try:
                found += budget.run(lines_matching, data, regex, needles, index)
            except Overran:
                self.abandoned[sig.id] = (
                    f"the profile's pattern ran past {budget.per_call:g} s in all, searching"
                    f" the {len(data):,} bytes from offset {offset:,} (a pattern whose time"
                    " grows exponentially with a line): not searched from there on"
                )
        found.sort()
        return found

    def block(self, first_line: int | None, offset: int, data: bytes) -> None:
        tb = self.pending_tb
        if tb is not None:
            self.pending_tb = None
            start, end, n = exception_line(data, 0, tb["prefix"], TB_LINES - tb["lines"])
            if start >= 0:
                local = data.count(b"\n", 0, start)
                line = None if first_line is None else first_line + local
                index = self.seen + local + 1
                self._exception(
                    line,
                    offset + start,
                    data[start:end],
                    tb["thread"],
                    index,
                    ignored=tb["ignored"],
                )
            elif tb["lines"] + n < TB_LINES:
                tb["lines"] += n
                self.pending_tb = tb
        cursor, local = 0, 0  # lines of this block before the candidate
        for start, end, index in self.candidates(data, offset):
            local += data.count(b"\n", cursor, start)
            cursor = start
            line = None if first_line is None else first_line + local
            at = self.seen + local + 1  # the candidate's place among all lines read
            text = data[start:end]
            hit = self.hits[index]
            if not hit.count:
                hit.first_after_step = self._step_before(data, end, first_line)
            hit.add(line, offset + start, text)
            sig = self.signatures[index].id
            if sig == RUN_SUMMARY:
                self._run_summary(line, offset + start, text)
            if sig in MIDRUN and hit.first_midrun is None:
                after = self._step_before(data, start, first_line)
                if after is not None:
                    hit.first_midrun = {
                        "line": line,
                        "offset": offset + start,
                        "text": clip(text),
                        "after_step": after,
                    }
            if sig == THREAD_EXCEPTION:
                t = _THREAD.search(text)
                self.pending_thread = clip(t.group(1) or t.group(2)) if t else "?"
                self.pending_thread_line = at
            elif sig == EXCEPTION_IGNORED:
                self.ignored_line = at
            elif sig == CPP_TERMINATE:
                self._terminate(data, start, end, line, offset, at)
            elif sig == TRACEBACK:
                thread = None
                if self.pending_thread is not None and self.pending_thread_line == at - 1:
                    thread = self.pending_thread
                self.pending_thread = None
                prefix = text[: text.find(_TB_HEAD)] if _TB_HEAD in text else b""
                ignored = self.ignored_line == at - 1
                tb_start, tb_end, n = exception_line(data, end + 1, prefix, TB_LINES)
                if tb_start >= 0:
                    below = data.count(b"\n", start, tb_start)
                    tb_line = None if line is None else line + below
                    self._exception(
                        tb_line,
                        offset + tb_start,
                        data[tb_start:tb_end],
                        thread,
                        at + below,
                        ignored=ignored,
                    )
                elif n < TB_LINES:
                    self.pending_tb = {
                        "thread": thread,
                        "prefix": prefix,
                        "lines": n,
                        "ignored": ignored,
                    }
        newlines = data.count(b"\n")
        self.step_seen = self._step_before(data, len(data), first_line, newlines)
        self.seen += newlines + 1

    def end(self, data_tail: Sequence[bytes]) -> None:
        for raw in data_tail:
            self.tail.append(clip(raw))

    def result(self) -> dict[str, Any]:
        return {
            "signatures": {
                sig.id: dict(
                    self.hits[i].summary(),
                    means=sig.means,
                    **({"abandoned": self.abandoned[sig.id]} if sig.id in self.abandoned else {}),
                )
                for i, sig in enumerate(self.signatures)
            },
            "exceptions": {k: v.summary() for k, v in earliest(self.exceptions)},
            "thread_exceptions": {k: v.summary() for k, v in earliest(self.threads)},
            "open_traceback_at_end": self.pending_tb is not None,
            "exception_causes": {k: self._cause(k, v) for k, v in self._listed_causes()},
            "exception_lines": sum(v.count for v in self.causes.values()),
            "run_summaries": self.summaries,
            "not_listed": {
                name: len(table) - MAX_KEYS
                for name, table in (
                    ("exceptions", self.exceptions),
                    ("thread_exceptions", self.threads),
                    ("exception_causes", {k: v for k, v in self.causes.items() if k not in CAUSES}),
                )
                if len(table) > MAX_KEYS
            },
        }

    def _listed_causes(self) -> list[tuple[str, Cause]]:
        """Every cause a signature names, and the earliest ``MAX_KEYS`` of the others."""
        named = {k: v for k, v in self.causes.items() if k in CAUSES}
        others = {k: v for k, v in self.causes.items() if k not in CAUSES}
        return sorted([*named.items(), *earliest(others)])

    def _cause(self, key: str, cause: Cause) -> dict[str, Any]:
        sig = next((s for s in self.signatures if s.id == key), None)
        # Lines after it are known when it was read in the last range (which runs to the
        # end of the file); in a head whose middle was skipped, they are not.
        last = self.range_index
        return dict(
            cause.summary(),
            exception=cause.exception,
            signature=sig.id if sig is not None else None,
            means=sig.means if sig is not None else None,
            threads=sorted(cause.threads),
            outside_threads=cause.outside_threads,
            lines_after=self.seen - cause.last_index if cause.last_range == last else None,
        )


def compile_signatures(extra: Sequence[Mapping[str, Any]] = ()) -> list[Signature]:
    """The table plus a profile's own rows; a bad row raises ValueError naming it."""
    rows = list(SIGNATURES)
    known = {s.id for s in rows}
    for row in extra:
        sid, pattern = row.get("id"), row.get("pattern")
        if not sid or not pattern or sid in known:
            raise ValueError(f"signature {sid!r}: needs a new id and a pattern")
        try:
            _regex(pattern)
        except re.error as exc:
            raise ValueError(f"signature {sid!r}: bad regex: {exc}") from None
        needles = tuple(row.get("needles", ()))
        rows.append(Signature(sid, pattern, row.get("means", ""), needles))
        known.add(sid)
    return rows


def scan(
    f: io.FileIO,
    *,
    extra: Sequence[Mapping[str, Any]] = (),
    max_scan: int = 512 << 20,
    head: int = 8 << 20,
    max_line: int = 1 << 20,
    tail_lines: int = 10,
) -> dict[str, Any]:
    """Scan the log open in ``f`` (binary) for every signature."""
    signatures = compile_signatures(extra)
    size = os.fstat(f.fileno()).st_size
    ranges = plan_ranges(size, max_scan, head)
    scanner = _Scanner(signatures)
    bars = Bars()
    torch_logs = TorchLogs()
    lines = overlong = bytes_read = 0
    cut = False
    last_lines: deque[bytes] = deque(maxlen=tail_lines)
    for i, (start, end) in enumerate(ranges):
        scanner.range_index = i
        if i:
            scanner.pending_tb = None
            scanner.pending_thread = None
            scanner.step_seen = None  # the skipped middle may have printed later steps
            last_lines.clear()
            bars.gap()
            torch_logs.gap()
        reader = LineReader(
            f,
            start,
            end,
            max_line=max_line,
            first_line=1 if start == 0 else None,
            at_eof=end == size,
        )
        for b in reader:
            scanner.block(b.first_line, b.offset, b.data)
            bars.feed(b.data, b.first_line, b.offset)
            torch_logs.feed(b.data, b.first_line, b.offset)
            # Only the end of the last block matters for the tail; keep it cheap.
            last_lines.extend(b.data[-tail_lines * (SAMPLE + 1) :].split(b"\n")[-tail_lines:])
        lines += reader.lines
        overlong += reader.overlong
        bytes_read += reader.bytes_read
        cut = cut or reader.cut_last_line
    scanner.end(list(last_lines))
    out = scanner.result()
    out.update(
        {
            "size": size,
            "lines_read": lines,
            "overlong_lines": overlong,
            "unterminated_last_line": cut,
            "tail": list(scanner.tail),
            "progress": bars.result(),
            "torch_logs": torch_logs.result(),
            "coverage": {
                "mode": "full" if len(ranges) == 1 else "head+tail",
                "ranges": [[s, e] for s, e in ranges],
                "bytes_read": bytes_read,
                "skipped_bytes": size - sum(e - s for s, e in ranges),
            },
        }
    )
    return out
