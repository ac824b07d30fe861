# Shipped to targets running Python 3.8: zip(strict=) and itertools.pairwise are 3.10+.
# ruff: noqa: B905
"""Streaming summary of a ``train_log.jsonl``: steps, throughput, loss, time, damage.

Shipped in the probe bundle: stdlib only, Python >= 3.8.

One pass, bounded memory whatever the file's size (see ``_lines``): the throughput and
loss series are kept as windowed medians (about ``windows`` of them), the overall
quantiles come from at most ``max_values`` values (a systematic sample past that, and
the summary says so), restarts and gaps keep their first/largest few. Real logs differ
in schema, so the step, loss, throughput and time fields are found among common names
(``FIELD_ALIASES``) unless the caller names them; throughput is normalised to tokens/s
(``ktok_s`` and friends are multiplied by 1000).

Malformed lines are counted by reason, with the first few kept as samples, and never
stop the summary: binary garbage, a line that is not a JSON object, a line over
``max_line`` bytes, a record nested deeper than the parser can follow (``too_deep``),
and a last line cut mid-write are all facts about the log. A number no float can hold
(a 400-digit integer) where a step, throughput, loss, time or token count belongs is
no usable number: the record counts, that value does not, and ``unusable_numbers``
counts and samples it (as it does an infinite or NaN step or time; a non-finite
throughput or loss is counted as ``nonfinite``). An integer past 2**64 is read as the
float it is near, as orjson reads it, so the arithmetic never meets a giant int.
"""

from __future__ import annotations

import heapq
import io
import json
import math
import os
import pickle
import sys
from bisect import bisect_left
from collections import Counter, deque
from collections.abc import Callable, Sequence
from datetime import datetime
from itertools import compress, repeat
from operator import is_not, itemgetter, sub
from typing import Any, NamedTuple

from . import logformats
from ._lines import LineReader, plan_ranges

# The fast path parses whole blocks; orjson (when the target happens to have it, as
# many ML environments do) does that ~2x faster than the stdlib. The result is the same
# Python objects; anything orjson refuses (NaN, huge ints) is re-read line by line by
# the stdlib parser, which also classifies the damage. Without orjson: stdlib only.
try:
    import orjson as _orjson

    _block_loads: Callable[[bytes], Any] = _orjson.loads
    DECODER = "orjson " + getattr(_orjson, "__version__", "?")
except ImportError:  # pragma: no cover - depends on the target
    _block_loads = json.loads
    DECODER = "json"

__all__ = ["FIELD_ALIASES", "THROUGHPUT_SCALE", "summarize"]

# Field names seen in real trainers' JSONL logs, most likely first.
# Token counts that only grow (a running total); any other count is one step's tokens.
_RUNNING_TOTALS = (
    "num_input_tokens_seen",
    "tokens_seen",
    "num_tokens_seen",
    "total_tokens",
    "consumed_tokens",
    "cumulative_tokens",
)
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "step": (
        "step",
        "global_step",
        "_step",
        "iteration",
        "iter",
        "train/step",
        "train/global_step",
        "trainer/global_step",
    ),
    "loss": (
        "loss",
        "train_loss",
        "train/loss",
        "train_loss_step",
        "lm_loss",
        "total_loss",
        "global_avg_loss",  # torchtitan's loss_metrics/global_avg_loss
    ),
    "throughput": (
        "tok/s",
        "tokens_per_sec",
        "tok_per_sec",
        "tokens_per_s",
        "tok_per_s",
        "tokens_per_second",
        "tokens_per_second_per_gpu",
        "tokens_per_sec_per_gpu",
        "tokens/s",
        "tok_s",
        "tps",
        "throughput(tps)",  # torchtitan
        "throughput",
        "train/tokens_per_sec",
        "train/tokens_per_second",
        "ktok_s",
        "ktok/s",
        "Ktok/s",
        "ktok_per_sec",
        "ktokens_per_sec",
    ),
    "time": ("time", "timestamp", "ts", "wall_time", "walltime", "_timestamp", "t"),
    # What throughput is derived from when no field holds it: a token count (running
    # total or per step) over seconds (timestamps, seconds since start, or a step time).
    "tokens": (
        *_RUNNING_TOTALS,
        "tokens",
        "num_tokens",
        "ntokens",
        "n_tokens",
        "batch_tokens",
        "tokens_per_step",
        "step_tokens",
    ),
    # Seconds since the start. (Trainer's ``train_tokens_per_second`` is no throughput
    # alias: it is the average since the start, which hides a slowdown for long after;
    # the rate is derived from ``num_input_tokens_seen`` over ``train_runtime`` instead.)
    "elapsed": (
        "_runtime",
        "train_runtime",
        "elapsed",
        "elapsed_s",
        "elapsed_time",
        "time_elapsed",
        "runtime",
    ),
    "step_time": ("step_time", "iter_time", "time_per_step", "batch_time", "iteration_time"),
}
CUMULATIVE_TOKENS = frozenset(_RUNNING_TOTALS)
# Roles also found by the last part of a nested name (``train/loss``, ``perf/throughput``)
# unless the name is an evaluation's (``eval/loss``).
BY_LAST_PART = ("step", "loss", "throughput", "tokens")
NOT_TRAINING = ("eval", "val", "valid", "validation", "test")
# Roles read on every record; the others only when throughput has to be derived.
ALWAYS = ("step", "loss", "throughput", "time")
# Multiplier to tokens/s for throughput fields whose unit is not tokens/s.
THROUGHPUT_SCALE: dict[str, float] = {
    "ktok_s": 1000.0,
    "ktok/s": 1000.0,
    "Ktok/s": 1000.0,
    "ktok_per_sec": 1000.0,
    "ktokens_per_sec": 1000.0,
}
UNIT_SCALE = {"tok/s": 1.0, "ktok/s": 1000.0, "mtok/s": 1e6}

# Fields that split one log into series (one per device and role): steps restart per
# series, and throughput is compared per series.
GROUP_ALIASES = ("role", "device", "rank", "local_rank", "global_rank")
MAX_GROUPS = 64
PARALLEL_MIN = 64 << 20  # below this a log is read in one process: forking costs more
SAMPLES = 5  # malformed-line samples, restarts, gaps kept
SAMPLE_BYTES = 160
TOO_DEEP = "too_deep"  # a record nested deeper than the parser's recursion limit
# Roles whose non-finite values are counted as ``nonfinite`` (a NaN loss is a training
# fact); in the others (step, time, token counts, seconds) an inf or NaN is unusable.
NONFINITE_COUNTED = ("throughput", "loss")
_INT_FLOAT = 1 << 64  # past this an int is read as a float (orjson does the same)
_FLOAT_MAX = int(sys.float_info.max)
# The message of the ValueError Python (>= 3.11, and 3.8.14+) raises for an int literal
# past its digit limit (``sys.get_int_max_str_digits``).
_DIGIT_LIMIT = "integer string conversion"


class _LongInt(str):
    """An integer literal past Python's digit limit, kept as its text: no usable number."""

    __slots__ = ()


def _parse_int(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        return _LongInt(text)


def _loads(data: bytes | str) -> Any:
    """``json.loads``, except that an integer past Python's digit limit is read as a
    ``_LongInt`` instead of failing the whole line (or document). RecursionError (too
    deep) is the caller's to classify."""
    try:
        return json.loads(data)
    except ValueError as exc:
        if _DIGIT_LIMIT not in str(exc):
            raise
    return json.loads(data, parse_int=_parse_int)


def _int_digits(v: int) -> str:
    try:
        return str(len(str(abs(v))))
    except ValueError:  # past the digit limit itself
        return f"about {int(abs(v).bit_length() * 0.30103) + 1}"


def _why_unusable(v: Any, finite: bool) -> str | None:
    """Why ``v`` is no usable number for a role (None: it is one, or not a number)."""
    t = type(v)
    if t is int:
        if -_FLOAT_MAX <= v <= _FLOAT_MAX:
            return None
        return f"integer of {_int_digits(v)} digits: beyond the float range"
    if t is _LongInt:
        return f"integer of {len(v.lstrip('-+'))} digits: beyond the float range"
    if t is float and finite and not math.isfinite(v):
        return f"{v} is not a finite number"
    return None


def _label(v: Any) -> Any:
    """A series' value as its label shows it (an integer no float holds, by its size)."""
    return _clip_value(v) if type(v) in (int, float) else v


def _key_text(v: Any) -> str:
    """A series' key as text, for a list or object where a device name belongs."""
    try:
        return json.dumps(v, sort_keys=True, default=str)
    except (RecursionError, ValueError):
        return f"<{type(v).__name__} nested too deep>"


def _clip_value(v: Any) -> Any:
    """A value of a record as a fact: nested values as (the start of) their JSON text,
    long text cut, an integer no float can hold named instead of written out."""
    if isinstance(v, (dict, list)):
        try:
            return json.dumps(v)[:SAMPLE_BYTES]
        except (RecursionError, ValueError):
            return f"<{type(v).__name__} nested too deep to write>"
    if isinstance(v, str) and len(v) > SAMPLE_BYTES:
        return json.dumps(v)[:SAMPLE_BYTES]
    if type(v) is int and _why_unusable(v, False) is not None:
        return f"<integer of {_int_digits(v)} digits>"
    if type(v) is float and not math.isfinite(v):
        # A fact is strict JSON (the runner refuses NaN): named, not written out.
        return f"<{v}: not a finite number>"
    return v


class _Series:
    """Quantiles from a bounded sample: every value until ``cap``, then every 2nd, 4th…"""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.values: list[float] = []
        self.stride = 1
        self.next_pos = 0  # index (among all values seen) of the next value to keep
        self.count = 0
        self.lo = math.inf
        self.hi = -math.inf
        self.first: float | None = None
        self.last: float | None = None

    def extend(self, vals: list[float]) -> None:
        if not vals:
            return
        n = len(vals)
        lo, hi = min(vals), max(vals)
        if lo < self.lo:
            self.lo = lo
        if hi > self.hi:
            self.hi = hi
        if self.first is None:
            self.first = vals[0]
        self.last = vals[-1]
        start = self.next_pos - self.count
        if start < n:
            kept = vals[start :: self.stride]
            self.values.extend(kept)
            self.next_pos += len(kept) * self.stride
        self.count += n
        while len(self.values) >= self.cap:
            # Halve the sample; the next value kept is one stride (the new one) after
            # the last value that survived the halving.
            last_survives = (len(self.values) - 1) % 2 == 0
            del self.values[1::2]
            if last_survives:
                self.next_pos += self.stride
            self.stride *= 2

    def absorb(self, other: _Series) -> None:
        """Append ``other`` (the values that came after these): both samples are
        brought to the coarser stride, then capped again."""
        if not other.count:
            return
        stride = max(self.stride, other.stride)
        mine = self.values[:: stride // self.stride]
        theirs = other.values[:: stride // other.stride]
        self.values = mine + theirs
        self.stride = stride
        self.count += other.count
        self.lo = min(self.lo, other.lo)
        self.hi = max(self.hi, other.hi)
        if self.first is None:
            self.first = other.first
        self.last = other.last
        while len(self.values) >= self.cap:
            del self.values[1::2]
            self.stride *= 2
        self.next_pos = self.count  # nothing is added after a merge

    def summary(self) -> dict[str, Any]:
        if not self.count:
            return {"count": 0}
        vals = sorted(self.values)
        return {
            "count": self.count,
            "first": self.first,
            "last": self.last,
            "min": self.lo,
            "max": self.hi,
            "p10": _quantile(vals, 0.1),
            "median": _quantile(vals, 0.5),
            "p90": _quantile(vals, 0.9),
            "exact": self.stride == 1,
            "sampled_every": self.stride,
        }


def _quantile(sorted_vals: Sequence[float], q: float) -> float | None:
    if not sorted_vals:
        return None
    pos = (len(sorted_vals) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def _median(vals: list[float]) -> float | None:
    return _quantile(sorted(vals), 0.5) if vals else None


def _to_time(v: Any) -> float | None:
    """Epoch seconds from a number (seconds or milliseconds) or an ISO-8601 string."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        t = float(v)
    elif isinstance(v, str):
        try:
            t = float(v)
        except ValueError:
            try:
                s = v[:-1] + "+00:00" if v.endswith("Z") else v
                return datetime.fromisoformat(s).timestamp()
            except ValueError:
                return None
    else:
        return None
    if not math.isfinite(t):
        return None
    return t / 1000.0 if t > 1e11 else t


_NUMERIC = frozenset((int, float))
_NUMERIC_OR_NONE = frozenset((int, float, type(None)))


class _Col(NamedTuple):
    """A column of one field over a batch of records: numbers, or None where a record has
    no number there; ``full`` when every record has one (the fast, common case)."""

    vals: list[float | None]
    full: bool

    def present(self) -> tuple[list[float], list[int] | None]:
        """The numbers that are there, and their indices (None when all are there)."""
        if self.full:
            return self.vals, None  # type: ignore[return-value]
        there = list(map(is_not, self.vals, repeat(None)))
        vals: list[Any] = list(compress(self.vals, there))
        return vals, list(compress(range(len(there)), there))

    def part(self, i: int, j: int) -> _Col:
        return _Col(self.vals[i:j], self.full)

    def take(self, pick: Any) -> _Col:
        """The values at the indices ``pick`` (an itemgetter) selects."""
        return _Col(list(pick(self.vals)), self.full)


def _numbers(col: list[Any]) -> _Col:
    """``col`` with everything that is not an int or float (None, bools, strings) as None."""
    types = set(map(type, col))
    if types <= _NUMERIC:
        return _Col(col, True)
    if types <= _NUMERIC_OR_NONE:
        return _Col(col, False)
    return _Col([v if type(v) in _NUMERIC else None for v in col], False)


def _finite(vals: list[Any]) -> tuple[list[float], int]:
    """Drop NaN and infinities; a finite sum proves there are none, at C speed."""
    if math.isfinite(sum(vals)):
        return vals, 0
    kept = [v for v in vals if math.isfinite(v)]
    return kept, len(vals) - len(kept)


def _picker(idx: list[int]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """``itemgetter(*idx)`` that returns a tuple even for one index."""
    if len(idx) == 1:
        i = idx[0]
        return lambda seq: (seq[i],)
    getter: Any = itemgetter(*idx)
    return getter  # type: ignore[no-any-return]


def _lookup(d: dict[str, Any], name: str) -> Any:
    """``d[name]``; a dotted name the profile gave also reaches into nested objects."""
    if name in d:
        return d[name]
    if "." in name:
        cur: Any = d
        for part in name.split("."):
            if not isinstance(cur, dict) or part not in cur:
                return None
            cur = cur[part]
        return cur
    return None


def _find_alias(role: str, d: dict[str, Any]) -> str | None:
    """The key of ``d`` that holds ``role``: a common name, else (for the roles of
    ``BY_LAST_PART``) a nested name whose last part is one (``train/loss``), never an
    evaluation's (``eval/loss``)."""
    aliases = FIELD_ALIASES[role]
    for a in aliases:
        if a in d:
            return a
    if role not in BY_LAST_PART:
        return None
    for k in d:
        if not isinstance(k, str) or "/" not in k:
            continue
        head, _, last = k.rpartition("/")
        if last in aliases and head.split("/")[0].lower() not in NOT_TRAINING:
            return k
    return None


def _scale_of(name: str) -> float:
    """The multiplier to tokens/s of a throughput field (``ktok_s``: 1000)."""
    if name in THROUGHPUT_SCALE:
        return THROUGHPUT_SCALE[name]
    return THROUGHPUT_SCALE.get(name.rpartition("/")[2], 1.0)


class _Window:
    """A run of consecutive records (``window_records`` of them) reduced to medians."""

    __slots__ = (
        "by_group",
        "first_line",
        "first_step",
        "last_step",
        "loss",
        "n",
        "t_first",
        "t_last",
        "tok",
    )

    def __init__(self) -> None:
        self.first_line: int | None = None
        self.first_step: float | None = None
        self.last_step: float | None = None
        self.n = 0
        self.t_first: float | None = None
        self.t_last: float | None = None
        self.tok: list[float] = []
        self.loss: list[float] = []
        self.by_group: dict[str, list[float]] = {}

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "first_line": self.first_line,
            "first_step": self.first_step,
            "last_step": self.last_step,
            "records": self.n,
            "t_first": self.t_first,
            "t_last": self.t_last,
            "tok_s_median": _median(self.tok),
            "loss_median": _median(self.loss),
        }
        if self.by_group:
            out["tok_s_median_by_group"] = {g: _median(v) for g, v in sorted(self.by_group.items())}
        return out


class _Top:
    """The ``k`` largest items seen, by a numeric key."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.heap: list[tuple[float, int, dict[str, Any]]] = []
        self.seq = 0

    def floor(self) -> float:
        return self.heap[0][0] if len(self.heap) >= self.k else -math.inf

    def push(self, key: float, item: dict[str, Any]) -> None:
        self.seq += 1
        entry = (key, self.seq, item)
        if len(self.heap) < self.k:
            heapq.heappush(self.heap, entry)
        elif key > self.heap[0][0]:
            heapq.heapreplace(self.heap, entry)

    def items(self) -> list[dict[str, Any]]:
        return [e[2] for e in sorted(self.heap, key=lambda e: (-e[0], e[1]))]

    def absorb(self, other: _Top) -> None:
        for key, _, item in sorted(other.heap, key=lambda e: e[1]):
            self.push(key, item)


def _diffs(vals: list[float], prev: float | None) -> tuple[list[float], int]:
    """Successive differences, and the index in ``vals`` the first one belongs to."""
    if prev is not None:
        return list(map(sub, vals, [prev, *vals[:-1]])), 0
    return list(map(sub, vals[1:], vals[:-1])), 1


def _largest(diffs: list[float], floor: float) -> list[int]:
    """Indices of the few largest differences above ``floor``."""
    if not diffs or max(diffs) <= floor:
        return []
    return heapq.nlargest(
        SAMPLES, (k for k, dd in enumerate(diffs) if dd > floor), key=diffs.__getitem__
    )


class _Steps:
    """Step numbers of one series (one device, or the whole log when it has no devices):
    range, restarts (the step went back), duplicates, the typical increment, the largest
    jumps."""

    def __init__(self) -> None:
        self.count = 0
        self.first: float | None = None
        self.first_at: tuple[int | None, int] = (None, 0)  # line and offset of ``first``
        self.last: float | None = None
        self.lo = math.inf
        self.hi = -math.inf
        self.restarts = 0
        self.restart_samples: list[dict[str, Any]] = []
        self.duplicates = 0
        self.increments: Counter[float] = Counter()
        self.jumps = _Top(SAMPLES)

    def add(self, steps: _Col, lines: list[int | None], offsets: list[int]) -> None:
        vals, idx = steps.present()
        if not vals:
            return
        self.count += len(vals)
        if self.first is None:
            self.first = vals[0]
            i0 = 0 if idx is None else idx[0]
            self.first_at = (lines[i0], offsets[i0])
        self.lo = min(self.lo, min(vals))
        self.hi = max(self.hi, max(vals))
        prev = self.last
        diffs, base = _diffs(vals, prev)
        self.last = vals[-1]

        def at(k: int) -> dict[str, Any]:
            i = k + base if idx is None else idx[k + base]
            before = vals[k + base - 1] if k + base > 0 else prev
            return {
                "line": lines[i],
                "offset": offsets[i],
                "from_step": before,
                "to_step": vals[k + base],
            }

        if not diffs:
            return
        if min(diffs) < 0:
            for k, dd in enumerate(diffs):
                if dd < 0:
                    self.restarts += 1
                    if len(self.restart_samples) < SAMPLES:
                        self.restart_samples.append(at(k))
        self.duplicates += diffs.count(0)
        if len(self.increments) < 1000:
            self.increments.update(diffs)
        for k in _largest(diffs, self.jumps.floor()):
            self.jumps.push(diffs[k], at(k))

    def absorb(self, other: _Steps, continuous: bool = True) -> None:
        """Append the steps of the part that followed; ``continuous`` when nothing of
        the log lies between the two parts (so a step going back there is a restart)."""
        if not other.count:
            return
        assert other.first is not None
        if continuous and self.last is not None:
            inc = other.first - self.last
            line, offset = other.first_at
            sample = {
                "line": line,
                "offset": offset,
                "from_step": self.last,
                "to_step": other.first,
            }
            if inc < 0:
                self.restarts += 1
                if len(self.restart_samples) < SAMPLES:
                    self.restart_samples.append(sample)
            elif inc == 0:
                self.duplicates += 1
            else:
                self.increments[inc] += 1
                self.jumps.push(inc, sample)
        if self.first is None:
            self.first, self.first_at = other.first, other.first_at
        self.count += other.count
        self.lo = min(self.lo, other.lo)
        self.hi = max(self.hi, other.hi)
        self.last = other.last
        self.restarts += other.restarts
        self.restart_samples = (self.restart_samples + other.restart_samples)[:SAMPLES]
        self.duplicates += other.duplicates
        if len(self.increments) < 1000:
            self.increments.update(other.increments)
        self.jumps.absorb(other.jumps)

    def summary(self) -> dict[str, Any]:
        positive = [(c, inc) for inc, c in self.increments.items() if inc > 0]
        typical = max(positive)[1] if positive else None
        jumps = self.jumps.items()
        if typical is not None:
            jumps = [j for j in jumps if j["to_step"] - j["from_step"] > typical]
        return {
            "count": self.count,
            "first": self.first,
            "last": self.last,
            "min": self.lo if self.count else None,
            "max": self.hi if self.count else None,
            "typical_increment": typical,
            "restarts": self.restarts,
            "restart_samples": self.restart_samples,
            "duplicates": self.duplicates,
            "largest_jumps": jumps,
        }


class _Group:
    """Everything kept per series (per device/role when the log has several)."""

    def __init__(self, max_values: int) -> None:
        self.records = 0
        self.steps = _Steps()
        self.tok = _Series(max_values)
        self.recent_tok: deque[float] = deque(maxlen=50)
        self.loss = _Series(max_values)

    def absorb(self, other: _Group, continuous: bool) -> None:
        self.records += other.records
        self.steps.absorb(other.steps, continuous)
        self.tok.absorb(other.tok)
        self.loss.absorb(other.loss)
        self.recent_tok.extend(other.recent_tok)

    def summary(self) -> dict[str, Any]:
        tok = self.tok.summary()
        tok["recent_median"] = _median(list(self.recent_tok))
        tok["recent_records"] = len(self.recent_tok)
        return {
            "records": self.records,
            "steps": self.steps.summary(),
            "throughput": tok,
            "loss": self.loss.summary(),
        }


class _Summarizer:
    """Accumulates blocks of records column by column: list comprehensions and builtins
    (``min``, ``sum``, ``map(sub)``) do the per-record work at C speed, and Python-level
    loops run only where something is off (a restart, a gap, a missing field)."""

    def __init__(
        self,
        fields: dict[str, Any],
        scale: float | None,
        window: int,
        max_values: int,
        fmt: str = "jsonl",
        header: list[str] | None = None,
    ) -> None:
        self.fmt = fmt
        self.header = header
        self.header_raw = ",".join(header) if header else None
        self.other_lines = 0  # text lines that hold no record (progress bars, warnings…)
        self.other_samples: list[dict[str, Any]] = []
        self.shapes: dict[str, int] = {}  # text records by the shape of their line
        self.derived: dict[str, Any] | None = None  # what throughput was derived from
        self.derive_prev: dict[str, tuple[float, float, float | None]] = {}
        self.derive_offsets: list[int] | None = None
        self.cumulative: bool | None = None
        group = fields.get("group")
        self.fixed_groups = group is not None
        self.group_keys: tuple[str, ...] | None = (
            None if group is None else tuple([group] if isinstance(group, str) else group)
        )
        self.fixed = {k: v for k, v in fields.items() if k in FIELD_ALIASES and v}
        self.keys: dict[str, str | None] = {k: self.fixed.get(k) for k in FIELD_ALIASES}
        self.fixed_scale = scale
        self.scale = scale if scale is not None else 1.0
        self.window_size = window
        self.max_values = max_values
        self.records = 0
        self.blank = 0
        self.malformed: dict[str, int] = {}
        self.malformed_samples: list[dict[str, Any]] = []
        self.unusable_count: dict[str, int] = {}  # numbers nobody can compute with, by role
        self.unusable_samples: list[dict[str, Any]] = []
        self.keys_seen: dict[str, int] = {}
        self.schema_changes: list[dict[str, Any]] = []
        self.alias_cache: dict[tuple[str, tuple[str, ...]], str | None] = {}
        self.all = _Group(max_values)
        self.groups: dict[str, _Group] = {}
        self.labels: dict[Any, str] = {}
        self.nonfinite = {"throughput": 0, "loss": 0}
        self.t_first: float | None = None
        self.t_first_at: tuple[int | None, int] = (None, 0)
        self.t_last: float | None = None
        self.prev_t: float | None = None
        self.t_count = 0
        self.t_backwards = 0
        self.t_unparsed = 0
        self.intervals = _Series(max_values)
        self.gaps = _Top(SAMPLES)
        self.windows: list[dict[str, Any]] = []
        self.win = _Window()
        self.last_records: deque[dict[str, Any]] = deque(maxlen=3)

    # -- damage -------------------------------------------------------------------
    def bad(self, reason: str, line: int | None, offset: int, raw: bytes) -> None:
        self.malformed[reason] = self.malformed.get(reason, 0) + 1
        if len(self.malformed_samples) < SAMPLES:
            self.malformed_samples.append(
                {
                    "line": line,
                    "offset": offset,
                    "reason": reason,
                    "sample": raw[:SAMPLE_BYTES].decode("utf-8", "replace"),
                }
            )

    def unusable(
        self, role: str, line: int | None, offset: int | None, field: str, why: str
    ) -> None:
        self.unusable_count[role] = self.unusable_count.get(role, 0) + 1
        if len(self.unusable_samples) < SAMPLES:
            self.unusable_samples.append(
                {"line": line, "offset": offset, "field": field, "role": role, "reason": why}
            )

    def usable(
        self, role: str, col: list[Any], lines: list[int | None], offsets: list[int] | None
    ) -> list[Any]:
        """``col`` without the numbers nobody can compute with: an integer beyond the
        float range (or past Python's digit limit), and an inf or NaN in the roles
        outside ``NONFINITE_COUNTED``; each is counted and sampled. An integer past
        2**64 becomes its float. A sum at C speed proves the common column clean."""
        types = set(map(type, col))
        ints = int in types or _LongInt in types
        finite = role not in NONFINITE_COUNTED
        if not ints and not (finite and float in types):
            return col
        if _LongInt not in types:
            nums = col if types <= _NUMERIC else [v for v in col if type(v) in _NUMERIC]
            try:
                # abs() of every number: no cancelling out, so the sum bounds each one.
                total = sum(map(abs, nums))
                if (not ints or total < _INT_FLOAT) and (not finite or math.isfinite(total)):
                    return col
            except OverflowError:  # an int no float can hold met a float
                pass
        out = list(col)
        field = self.keys[role] or role
        for i, v in enumerate(col):
            why = _why_unusable(v, finite)
            if why is not None:
                out[i] = None
                self.unusable(role, lines[i], offsets[i] if offsets else None, field, why)
            elif type(v) is int and not -_INT_FLOAT < v < _INT_FLOAT:
                out[i] = float(v)
        return out

    # -- columns ------------------------------------------------------------------
    def column(
        self,
        role: str,
        recs: list[dict[str, Any]],
        lines: list[int | None],
        offsets: list[int] | None = None,
    ) -> list[Any]:
        key = self.keys[role]
        if role in self.fixed:
            assert key is not None
            if "." in key:
                return self.usable(role, [_lookup(d, key) for d in recs], lines, offsets)
            return self.usable(role, [d.get(key) for d in recs], lines, offsets)
        col: list[Any]
        if key is not None:
            try:
                # itemgetter through map runs at C speed; a record without the key
                # raises, and the slower path below finds an alias for it.
                return self.usable(role, list(map(itemgetter(key), recs)), lines, offsets)
            except KeyError:
                col = [d.get(key) for d in recs]
        else:
            col = [None] * len(recs)
        # Some records lack the field under its current name: look for an alias, once
        # per distinct key layout (records of one trainer share their keys' order).
        scales: list[float] | None = None
        for i, d in enumerate(recs):
            if col[i] is not None:
                continue
            layout = (role, tuple(d))
            if layout in self.alias_cache:
                name = self.alias_cache[layout]
            else:
                name = _find_alias(role, d)
                if len(self.alias_cache) < 256:
                    self.alias_cache[layout] = name
            if name is None:
                continue
            if name != self.keys[role]:
                if self.keys[role] is not None and len(self.schema_changes) < SAMPLES:
                    self.schema_changes.append(
                        {"line": lines[i], "field": role, "from": self.keys[role], "to": name}
                    )
                self.keys[role] = name
            col[i] = d[name]
            if role == "throughput" and self.fixed_scale is None:
                if scales is None:
                    scales = [self.scale] * len(recs)
                scales[i] = _scale_of(name)
        col = self.usable(role, col, lines, offsets)
        if scales is not None:
            # Values read under an alias carry that alias' unit; batch() multiplies by
            # the current scale, so divide it out here.
            new_scale = _scale_of(self.keys[role] or "")
            col = [v * sc / new_scale if type(v) in _NUMERIC else v for v, sc in zip(col, scales)]
            self.scale = new_scale
        return col

    def times(
        self, recs: list[dict[str, Any]], lines: list[int | None], offsets: list[int]
    ) -> _Col:
        raw = self.column("time", recs, lines, offsets)
        col = _numbers(raw)
        if col.full:
            if col.vals and col.vals[0] > 1e11:  # type: ignore[operator]  # epoch ms
                return _Col([v / 1000.0 for v in col.vals], True)  # type: ignore[operator]
            return col
        out: list[float | None] = []
        for r in raw:
            t = _to_time(r)
            if t is None and r is not None:
                self.t_unparsed += 1
            out.append(t)
        return _Col(out, None not in out)

    def partition(self, recs: list[dict[str, Any]]) -> dict[str, list[int]] | None:
        """The batch's records by series: label (``role=drafter,device=cuda:5``) to
        record indices (an empty list: every record of the batch), or None when the log
        has one series. Without a profile, the grouping fields are the ones of
        ``GROUP_ALIASES`` that the first record has."""
        if self.group_keys is None:
            self.group_keys = tuple(k for k in GROUP_ALIASES if k in recs[0])
        keys = self.group_keys
        if not keys:
            return None
        try:
            raw = list(map(itemgetter(*keys), recs))
        except KeyError:
            raw = [tuple(d.get(k) for k in keys) if len(keys) > 1 else d.get(keys[0]) for d in recs]
        # One pass, one dict lookup per record: cheaper than a filtering pass per series.
        by_key: dict[Any, list[int]] = {}
        try:
            for i, key in enumerate(raw):
                found = by_key.get(key)
                if found is None:
                    by_key[key] = [i]
                else:
                    found.append(i)
        except TypeError:  # a list or object where a device name belongs
            raw = [_key_text(v) for v in raw]
            by_key = {}
            for i, key in enumerate(raw):
                by_key.setdefault(key, []).append(i)
        labels = self.labels
        parts: dict[str, list[int]] = {}
        for key, idx in by_key.items():
            label = labels.get(key)
            if label is None:
                vals = key if len(keys) > 1 else (key,)
                label = ",".join(f"{k}={_label(x)}" for k, x in zip(keys, vals))
                # Past MAX_GROUPS, further series share one bucket: memory stays bounded.
                if len(set(labels.values())) >= MAX_GROUPS:
                    label = "other"
                labels[key] = label
            parts[label] = sorted(parts[label] + idx) if label in parts else idx
        if len(parts) == 1:
            return {label: [] for label in parts}
        return parts

    # -- a batch of records ---------------------------------------------------------
    def batch(
        self, recs: list[dict[str, Any]], lines: list[int | None], offsets: list[int]
    ) -> None:
        n = len(recs)
        if not n:
            return
        self.records += n
        if len(self.keys_seen) < 64:
            for d in (recs[0], recs[-1]):
                for k in d:
                    self.keys_seen[k] = self.keys_seen.get(k, 0) + 1
        self.last_records.extend(recs[-3:])
        steps = _numbers(self.column("step", recs, lines, offsets))
        toks = _numbers(self.column("throughput", recs, lines, offsets))
        if self.scale != 1.0:
            toks = _Col([v * self.scale if v is not None else None for v in toks.vals], toks.full)
        losses = _numbers(self.column("loss", recs, lines, offsets))
        times = self.times(recs, lines, offsets)
        groups = self.partition(recs)
        if (
            "throughput" not in self.fixed
            and not toks.full
            and toks.vals.count(None) == n
            and (self.keys["throughput"] is None or self.derived is not None)
        ):
            self.derive_offsets = offsets
            derived = self.derive(recs, lines, steps, times, groups)
            if derived is not None:
                toks = derived
        self.time_batch(times, lines, offsets)
        self.series(self.all, steps if groups is None else None, toks, losses, lines, offsets)
        parts: dict[str, list[int]] = groups or {}
        for g, idx in parts.items():
            grp = self.groups.get(g)
            if grp is None:
                # Per-series quantiles need fewer values than the overall ones.
                grp = self.groups[g] = _Group(max(1000, self.max_values // 4))
            if not idx:
                self.series(grp, steps, toks, losses, lines, offsets)
            else:
                pick = _picker(idx)
                self.series(
                    grp,
                    steps.take(pick),
                    toks.take(pick),
                    losses.take(pick),
                    list(pick(lines)),
                    list(pick(offsets)),
                )
        i = 0
        while i < n:
            j = i + min(n - i, self.window_size - self.win.n)
            self.window(i, j, lines, steps, toks, losses, times, parts)
            if self.win.n >= self.window_size:
                self.close_window()
            i = j

    def derive(
        self,
        recs: list[dict[str, Any]],
        lines: list[int | None],
        steps: _Col,
        times: _Col,
        groups: dict[str, list[int]] | None,
    ) -> _Col | None:
        """Tokens/s from a token count and seconds, per series, when no field holds it:
        a running total over the time between records, or one step's tokens over its
        step time (else over the time since the record before, times the steps between)."""
        tokens = _numbers(self.column("tokens", recs, lines, self.derive_offsets))
        if tokens.vals.count(None) == len(recs):
            return None
        step_time = _numbers(self.column("step_time", recs, lines, self.derive_offsets))
        clock = times
        clock_name = self.keys["time"]
        if not times.vals or times.vals.count(None) == len(recs):
            clock = _numbers(self.column("elapsed", recs, lines, self.derive_offsets))
            clock_name = self.keys["elapsed"]
        name = self.keys["tokens"] or ""
        if self.cumulative is None:
            if name in CUMULATIVE_TOKENS:
                self.cumulative = True
            else:
                seen = [v for v in tokens.vals if v is not None][:8]
                # A count that grows at every record is a running total; a per-step
                # count repeats or wanders.
                self.cumulative = len(seen) >= 3 and all(b > a for a, b in zip(seen, seen[1:]))  # noqa: RUF007 (3.8)
        label_of: list[str] = [""] * len(recs)
        for g, idx in (groups or {}).items():
            for i in idx or range(len(recs)):
                label_of[i] = g
        out: list[float | None] = []
        prev = self.derive_prev
        for i in range(len(recs)):
            tok, t, st = tokens.vals[i], clock.vals[i], steps.vals[i]
            dt_step = step_time.vals[i]
            v: float | None = None
            if tok is None:
                out.append(None)
                continue
            before = prev.get(label_of[i])
            if not self.cumulative and dt_step:
                v = tok / dt_step
            elif t is not None and before is not None and t > before[1]:
                if self.cumulative:
                    v = (tok - before[0]) / (t - before[1]) if tok >= before[0] else None
                else:
                    span = st - before[2] if st is not None and before[2] is not None else 1
                    v = tok * max(1.0, span) / (t - before[1])
            if t is not None:
                prev[label_of[i]] = (tok, t, st)
            out.append(v)
        if self.derived is None and any(v is not None for v in out):
            over = (
                self.keys["step_time"] if not self.cumulative and self.keys["step_time"] else None
            )
            self.derived = {
                "tokens": name,
                "tokens_kind": "running total" if self.cumulative else "per step",
                "seconds": over or clock_name,
                "how": (
                    f"{name} / {over}"
                    if over
                    else f"difference of {name} over difference of {clock_name}"
                    if self.cumulative
                    else f"{name} x steps between records / difference of {clock_name}"
                ),
            }
        return _Col(out, False)

    def series(
        self,
        grp: _Group,
        steps: _Col | None,
        toks: _Col,
        losses: _Col,
        lines: list[int | None] | None = None,
        offsets: list[int] | None = None,
    ) -> None:
        grp.records += len(toks.vals)
        if steps is not None and lines is not None and offsets is not None:
            grp.steps.add(steps, lines, offsets)
        tok_vals, bad = _finite(toks.present()[0])
        loss_vals, bad_loss = _finite(losses.present()[0])
        if grp is self.all:
            self.nonfinite["throughput"] += bad
            self.nonfinite["loss"] += bad_loss
        grp.tok.extend(tok_vals)
        grp.recent_tok.extend(tok_vals[-50:])
        grp.loss.extend(loss_vals)

    def window(
        self,
        i: int,
        j: int,
        lines: list[int | None],
        steps: _Col,
        toks: _Col,
        losses: _Col,
        times: _Col,
        parts: dict[str, list[int]],
    ) -> None:
        w = self.win
        if not w.n:
            w.first_line = lines[i]
        w.n += j - i
        vals = steps.part(i, j).present()[0]
        if vals:
            if w.first_step is None:
                w.first_step = vals[0]
            w.last_step = vals[-1]
        vals = times.part(i, j).present()[0]
        if vals:
            if w.t_first is None:
                w.t_first = vals[0]
            w.t_last = vals[-1]
        tok_part = toks.part(i, j)
        w.tok.extend(_finite(tok_part.present()[0])[0])
        w.loss.extend(_finite(losses.part(i, j).present()[0])[0])
        for g, idx in parts.items():
            picked: list[Any]
            if idx:
                inside = idx[bisect_left(idx, i) : bisect_left(idx, j)]
                picked = [toks.vals[k] for k in inside]
            else:
                picked = tok_part.vals
            if not toks.full:
                picked = [v for v in picked if v is not None]
            w.by_group.setdefault(g, []).extend(_finite(picked)[0])

    def time_batch(self, times: _Col, lines: list[int | None], offsets: list[int]) -> None:
        vals, idx = times.present()
        if not vals:
            return
        self.t_count += len(vals)
        if self.t_first is None:
            self.t_first = vals[0]
            i0 = 0 if idx is None else idx[0]
            self.t_first_at = (lines[i0], offsets[i0])
        diffs, base = _diffs(vals, self.prev_t)
        self.prev_t = self.t_last = vals[-1]
        if not diffs:
            return
        if min(diffs) < 0:
            self.t_backwards += sum(1 for dd in diffs if dd < 0)
            self.intervals.extend([dd for dd in diffs if dd >= 0])
        else:
            self.intervals.extend(diffs)
        for k in _largest(diffs, self.gaps.floor()):
            i = k + base if idx is None else idx[k + base]
            t = vals[k + base]
            self.gaps.push(
                diffs[k],
                {
                    "line": lines[i],
                    "offset": offsets[i],
                    "seconds": diffs[k],
                    "from_t": t - diffs[k],
                    "to_t": t,
                },
            )

    def close_window(self) -> None:
        if self.win.n:
            self.windows.append(self.win.summary())
        self.win = _Window()

    def break_continuity(self) -> None:
        """Between head and tail: what lies between was not seen, so no restart/gap."""
        self.close_window()
        self.prev_t = None
        for grp in [self.all, *self.groups.values()]:
            grp.steps.last = None

    # -- parts read in parallel ---------------------------------------------------
    def shift_lines(self, delta: int | None) -> None:
        """Renumber a part read on its own (lines counted from 1) to its place in the
        file; ``delta`` None when that place is unknown (the tail of a huge log)."""

        def move(d: dict[str, Any], key: str = "line") -> None:
            if d.get(key) is not None:
                d[key] = None if delta is None else d[key] + delta

        for d in (
            self.malformed_samples
            + self.unusable_samples
            + self.schema_changes
            + self.windows
            + self.other_samples
        ):
            move(d)
            move(d, "first_line")
        if self.win.first_line is not None:
            self.win.first_line = None if delta is None else self.win.first_line + delta
        for grp in [self.all, *self.groups.values()]:
            st = grp.steps
            for d in st.restart_samples:
                move(d)
            for _, _, d in st.jumps.heap:
                move(d)
            if st.first_at[0] is not None:
                st.first_at = (None if delta is None else st.first_at[0] + delta, st.first_at[1])
        for _, _, d in self.gaps.heap:
            move(d)
        if self.t_first_at[0] is not None:
            self.t_first_at = (
                None if delta is None else self.t_first_at[0] + delta,
                self.t_first_at[1],
            )

    def absorb(self, other: _Summarizer, continuous: bool) -> None:
        """Append the summary of the part of the file that follows this one."""
        self.close_window()
        other.close_window()
        self.records += other.records
        self.blank += other.blank
        self.other_lines += other.other_lines
        self.other_samples = (self.other_samples + other.other_samples)[:SAMPLES]
        for k, v in other.shapes.items():
            self.shapes[k] = self.shapes.get(k, 0) + v
        if self.derived is None:
            self.derived = other.derived
        if self.cumulative is None:
            self.cumulative = other.cumulative
        for k, v in other.malformed.items():
            self.malformed[k] = self.malformed.get(k, 0) + v
        self.malformed_samples = (self.malformed_samples + other.malformed_samples)[:SAMPLES]
        for k, v in other.unusable_count.items():
            self.unusable_count[k] = self.unusable_count.get(k, 0) + v
        self.unusable_samples = (self.unusable_samples + other.unusable_samples)[:SAMPLES]
        for k, v in other.keys_seen.items():
            if k in self.keys_seen or len(self.keys_seen) < 64:
                self.keys_seen[k] = self.keys_seen.get(k, 0) + v
        self.schema_changes = (self.schema_changes + other.schema_changes)[:SAMPLES]
        for role, key in other.keys.items():
            if self.keys[role] is None:
                self.keys[role] = key
            elif key is not None and key != self.keys[role] and len(self.schema_changes) < SAMPLES:
                line, _ = other.t_first_at
                self.schema_changes.append(
                    {"line": line, "field": role, "from": self.keys[role], "to": key}
                )
                self.keys[role] = key
        if other.records:
            self.scale = other.scale
        self.all.absorb(other.all, continuous)
        for g, grp in other.groups.items():
            if g in self.groups:
                self.groups[g].absorb(grp, continuous)
            else:
                self.groups[g] = grp
        if self.group_keys is None:
            self.group_keys = other.group_keys
        for k, v in other.nonfinite.items():
            self.nonfinite[k] += v
        if other.t_count:
            assert other.t_first is not None
            if continuous and self.t_last is not None:
                dt = other.t_first - self.t_last
                if dt < 0:
                    self.t_backwards += 1
                else:
                    self.intervals.extend([dt])
                    line, offset = other.t_first_at
                    self.gaps.push(
                        dt,
                        {
                            "line": line,
                            "offset": offset,
                            "seconds": dt,
                            "from_t": self.t_last,
                            "to_t": other.t_first,
                        },
                    )
            if self.t_first is None:
                self.t_first, self.t_first_at = other.t_first, other.t_first_at
            self.t_last = self.prev_t = other.t_last
        self.t_count += other.t_count
        self.t_backwards += other.t_backwards
        self.t_unparsed += other.t_unparsed
        self.intervals.absorb(other.intervals)
        self.gaps.absorb(other.gaps)
        self.windows.extend(other.windows)
        if other.last_records:
            self.last_records = other.last_records

    # -- blocks -------------------------------------------------------------------
    def block(self, first_line: int | None, offset: int, data: bytes, overlong: list[int]) -> None:
        if self.fmt == "jsonl" and not overlong:
            try:
                # One C call for a whole block of well-formed lines is ~2x faster than a
                # json.loads per line. A blank or bad line makes it fail (",," is not
                # JSON), and two values on one line make the count differ: either way
                # the block goes down the slow path, line by line.
                parsed = _block_loads(b"[" + data.replace(b"\n", b",") + b"]")
            except (ValueError, RecursionError):  # the stdlib's json on a deep record
                parsed = None
            if (
                parsed is not None
                and len(parsed) == data.count(b"\n") + 1
                and set(map(type, parsed)) == {dict}
            ):
                n = len(parsed)
                nums: list[int | None] = (
                    [None] * n if first_line is None else list(range(first_line, first_line + n))
                )
                # Offsets per record would cost a pass over the lines; the block's offset
                # locates every record of the block to within a megabyte.
                self.batch(parsed, nums, [offset] * n)
                return
        lines = data.split(b"\n")
        bad_lines = set(overlong)
        recs: list[dict[str, Any]] = []
        rec_lines: list[int | None] = []
        rec_offsets: list[int] = []
        pos = offset
        for i, raw in enumerate(lines):
            line = None if first_line is None else first_line + i
            if line is not None and line in bad_lines:
                self.bad("overlong", line, pos, b"")
            elif not raw.strip():
                self.blank += 1
            else:
                d = self.parse_one(raw, line, pos)
                if d is not None:
                    recs.append(d)
                    rec_lines.append(line)
                    rec_offsets.append(pos)
            pos += len(raw) + 1
        self.batch(recs, rec_lines, rec_offsets)

    def last_line(self, line: int | None, offset: int, data: bytes, overlong: list[int]) -> bool:
        """The final line, with no newline after it; True if it was a whole record."""
        d = None
        if self.fmt != "jsonl":
            if not overlong:
                d = self.parse_other(data, line, offset, last=True)
            if d is None:
                if self.fmt == "text" and not overlong:
                    # Console logs end without a newline all the time (tqdm redraws its
                    # bar with a carriage return): a last line that holds no record is
                    # unterminated, not a record cut mid-write.
                    self.other_lines += 1
                    return True
                self.bad("cut_last_line", line, offset, data)
                return False
            self.batch([d], [line], [offset])
            return True
        if not overlong:
            try:
                d = _loads(data)
            except ValueError:
                d = None
            except RecursionError:
                # Too deep to follow: no sign of a cut, and no record either.
                self.bad(TOO_DEEP, line, offset, data)
                return True
        if not isinstance(d, dict):
            self.bad("cut_last_line", line, offset, data)
            return False
        self.batch([d], [line], [offset])
        return True

    def parse_other(
        self, raw: bytes, line: int | None, offset: int, last: bool = False
    ) -> dict[str, Any] | None:
        """A CSV row or a text line as a record (None: damage, or no record in it)."""
        binary = b"\x00" in raw
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            binary = True
        if binary:
            if not last:
                self.bad("binary", line, offset, raw)
            return None
        if self.fmt == "csv":
            assert self.header is not None
            if text.strip() == self.header_raw:
                return None
            d = logformats.parse_csv_row(text, self.header)
            if d is None and not last:
                self.bad("csv_cells", line, offset, raw)
            return d
        d, shape = logformats.parse_text_line(text)
        if d is not None and not self.recognised(d):
            d, shape = None, ""
        if d is None:
            if not last:
                self.other_lines += 1
                if len(self.other_samples) < SAMPLES:
                    sample = {"line": line, "sample": text[:SAMPLE_BYTES]}
                    self.other_samples.append(sample)
            return None
        self.shapes[shape] = self.shapes.get(shape, 0) + 1
        return d

    def recognised(self, d: dict[str, Any]) -> bool:
        """A text record counts when it holds a step, loss, throughput or token count
        (else ``lr=3e-4 warmup=100`` on a config line would be a training step)."""
        for role in ("step", "loss", "throughput", "tokens"):
            name = self.fixed.get(role)
            if (name in d) if name else _find_alias(role, d) is not None:
                return True
        return False

    def parse_one(self, raw: bytes, line: int | None, offset: int) -> dict[str, Any] | None:
        if self.fmt != "jsonl":
            return self.parse_other(raw, line, offset)
        try:
            d = _loads(raw)
        except RecursionError:
            self.bad(TOO_DEEP, line, offset, raw)
            return None
        except ValueError:
            # Both invalid UTF-8 and invalid JSON land here; binary garbage is the former
            # (or has NULs), which says something different about the disk than a typo.
            binary = b"\x00" in raw
            if not binary:
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    binary = True
            self.bad("binary" if binary else "not_json", line, offset, raw)
            return None
        if not isinstance(d, dict):
            self.bad("not_object", line, offset, raw)
            return None
        return d

    # -- result -------------------------------------------------------------------
    def schema(self) -> dict[str, Any]:
        """Which field plays which role, and why: part of the fact, so a report can say
        what was read and a profile can correct it."""
        why: dict[str, str] = {}
        for role, key in self.keys.items():
            if role in self.fixed:
                why[role] = "named by the profile"
            elif key is not None:
                why[role] = (
                    f"common name {key!r}"
                    if key in FIELD_ALIASES[role]
                    else f"{key!r} ends in a common name"
                )
        if self.derived is not None:
            why["throughput"] = "derived: " + str(self.derived["how"])
        elif self.keys["throughput"] is None:
            why["throughput"] = (
                "no field with a common throughput name, and no token count with"
                " seconds to derive it from"
            )
        if self.group_keys:
            why["group"] = (
                "named by the profile"
                if self.fixed_groups
                else "fields of " + ", ".join(GROUP_ALIASES) + " in the first record"
            )
        used = {k for k in self.keys.values() if k} | set(self.group_keys or ())
        unit = next((u for u, sc in UNIT_SCALE.items() if sc == self.scale), f"x{self.scale} tok/s")
        return {
            "format": self.fmt,
            "step": self.keys["step"],
            "loss": self.keys["loss"],
            "throughput": self.keys["throughput"] if self.derived is None else "derived",
            "throughput_unit": unit,
            "time": self.keys["time"],
            "elapsed": self.keys["elapsed"],
            "tokens": self.keys["tokens"],
            "derived": self.derived,
            "group": list(self.group_keys or ()),
            "ignored": sorted(k for k in self.keys_seen if k not in used)[:32],
            "shapes": dict(sorted(self.shapes.items())),
            "why": why,
        }

    def result(self) -> dict[str, Any]:
        self.close_window()
        interval = self.intervals.summary()
        median_dt = interval.get("median")
        threshold = max(120.0, 10.0 * median_dt) if median_dt is not None else 120.0
        gaps = [g for g in self.gaps.items() if g["seconds"] > threshold]
        overall = self.all.summary()
        groups = {g: grp.summary() for g, grp in sorted(self.groups.items())}
        if groups:
            # Steps only make sense per series; the overall view is their union.
            overall["steps"] = _merge_steps([grp["steps"] for grp in groups.values()])
        tok = overall["throughput"]
        tok["unit"] = "tok/s"
        tok["nonfinite"] = self.nonfinite["throughput"]
        early = _early_windows(self.windows)
        tok["early_median"] = _median(
            [w["tok_s_median"] for w in early if w["tok_s_median"] is not None]
        )
        for g, summ in groups.items():
            summ["throughput"]["early_median"] = _median(
                [
                    v
                    for w in early
                    for v in [(w.get("tok_s_median_by_group") or {}).get(g)]
                    if v is not None
                ]
            )
        return {
            "format": self.fmt,
            "schema": self.schema(),
            "other_lines": self.other_lines,
            "other_samples": self.other_samples,
            "early_window": {
                "windows": len(early),
                "first_step": early[0]["first_step"] if early else None,
                "last_step": early[-1]["last_step"] if early else None,
                "why": EARLY_WHY,
            },
            "aggregates": _aggregates(groups, tok, list(self.group_keys or ())),
            "records": self.records,
            "blank_lines": self.blank,
            "malformed": sum(self.malformed.values()),
            "malformed_by_reason": dict(sorted(self.malformed.items())),
            "malformed_samples": self.malformed_samples,
            "unusable_numbers": {
                "count": sum(self.unusable_count.values()),
                "by_field": dict(sorted(self.unusable_count.items())),
                "samples": sorted(
                    self.unusable_samples,
                    key=lambda d: (d["line"] is None, d["line"] or 0, d["offset"] or 0),
                ),
            },
            "fields": dict(self.keys),
            "group_fields": list(self.group_keys or ()),
            "throughput_scale": self.scale,
            "keys_seen": sorted(self.keys_seen),
            "schema_changes": self.schema_changes,
            "steps": overall["steps"],
            "throughput": tok,
            "loss": dict(overall["loss"], nonfinite=self.nonfinite["loss"]),
            "groups": groups,
            "time": {
                "count": self.t_count,
                "unparsed": self.t_unparsed,
                "first": self.t_first,
                "last": self.t_last,
                "span_s": (self.t_last - self.t_first)
                if self.t_first is not None and self.t_last is not None
                else None,
                "median_interval_s": median_dt,
                "backwards": self.t_backwards,
                "gap_threshold_s": threshold,
                "gaps": gaps,
            },
            "window_records": self.window_size,
            "decoder": DECODER,
            "windows": self.windows,
            "last_records": [_clip_record(d) for d in self.last_records],
        }


# The log's own baseline when nothing else records one: the run's early steady state.
# The first window is left out (compilation and warm-up make it slow, and a baseline
# that low would hide any slowdown); the next quarter of the windows is the baseline.
EARLY_WHY = "windows 2 to 1+n/4 of the log's n windows (the first is warm-up)"


def _early_windows(windows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return windows[1 : 1 + max(1, len(windows) // 4)]


def _aggregates(
    groups: dict[str, dict[str, Any]], tok: dict[str, Any], keys: list[str]
) -> dict[str, dict[str, Any]]:
    """Throughput over several series: all of them, and each ``field=value`` the log's
    groups share (``role=drafter`` over three drafter devices). Per-series throughput
    adds up (devices work side by side), so an aggregate is the sum of its series'
    medians; a log of one series has the median over its records."""
    if not groups:
        return {
            "all": {
                "how": "median over the log's records (one series)",
                "groups": [],
                "recent_median": tok.get("recent_median"),
                "median": tok.get("median"),
                "early_median": tok.get("early_median"),
            }
        }
    subsets: dict[str, list[str]] = {"all": sorted(groups)}
    for k in keys:
        by_value: dict[str, list[str]] = {}
        for g in sorted(groups):
            for part in g.split(","):
                if part.partition("=")[0] == k:
                    by_value.setdefault(part, []).append(g)
        for label, members in by_value.items():
            if len(members) > 1:  # every group may share it (all drafters): named still
                subsets[label] = members
    out: dict[str, dict[str, Any]] = {}
    for label, members in subsets.items():
        entry: dict[str, Any] = {
            "how": "sum of the per-group medians",
            "groups": members,
        }
        for stat in ("recent_median", "median", "early_median"):
            vals = [groups[g]["throughput"].get(stat) for g in members]
            nums = [v for v in vals if isinstance(v, (int, float))]
            entry[stat] = sum(nums) if nums else None
            entry[stat + "_groups"] = len(nums)
        out[label] = entry
    return out


def _merge_steps(parts: list[dict[str, Any]]) -> dict[str, Any]:
    counted = [p for p in parts if p["count"]]
    samples = [s for p in counted for s in p["restart_samples"]]
    # Source order (lines unknown in a tail sort last, by offset).
    samples.sort(key=lambda s: (s["line"] is None, s["line"] or 0, s["offset"]))
    samples = samples[:SAMPLES]
    return {
        "count": sum(p["count"] for p in counted),
        "min": min((p["min"] for p in counted), default=None),
        "max": max((p["max"] for p in counted), default=None),
        "restarts": sum(p["restarts"] for p in counted),
        "restart_samples": samples,
        "duplicates": sum(p["duplicates"] for p in counted),
        "per_group": True,
    }


def _clip_record(d: dict[str, Any]) -> dict[str, Any]:
    """A last record as a fact, without letting one huge field bloat the summary."""
    return {str(k)[:64]: _clip_value(d[k]) for k in list(d)[:32]}


class _Piece(NamedTuple):
    start: int
    end: int
    aligned: bool  # starts at the start of a line
    numbered: bool  # its line numbers can be known (it is not in the tail of a huge log)
    after_gap: bool  # unread bytes lie between it and the piece before
    at_eof: bool


def _pieces(f: io.FileIO, ranges: list[tuple[int, int]], size: int, k: int) -> list[_Piece]:
    """The byte ranges cut into about ``k`` pieces that each start at a line's start."""
    total = sum(e - s for s, e in ranges) or 1
    out: list[_Piece] = []
    for r, (start, end) in enumerate(ranges):
        n = max(1, round(k * (end - start) / total))
        cuts = [start]
        for j in range(1, n):
            off = start + (end - start) * j // n
            f.seek(off)
            nl = f.read(1 << 20).find(b"\n")
            if nl >= 0 and cuts[-1] < off + nl + 1 < end:
                cuts.append(off + nl + 1)
        cuts.append(end)
        for i in range(len(cuts) - 1):
            out.append(
                _Piece(
                    cuts[i],
                    cuts[i + 1],
                    aligned=start == 0 or i > 0,
                    numbered=r == 0,
                    after_gap=r > 0 and i == 0,
                    at_eof=cuts[i + 1] == size,
                )
            )
    return out


class _Scan(NamedTuple):
    summ: _Summarizer
    lines: int
    bytes_read: int
    cut: bool
    unterminated: bool


def _scan(f: io.FileIO, pieces: list[_Piece], summ: _Summarizer, max_line: int) -> _Scan:
    """Read ``pieces`` in order into ``summ`` (line numbers counted from 1)."""
    lines = bytes_read = 0
    cut = unterminated = False
    for i, piece in enumerate(pieces):
        if i and piece.after_gap:
            summ.break_continuity()
        first = (lines + 1) if piece.numbered else None
        reader = LineReader(
            f,
            piece.start,
            piece.end,
            max_line=max_line,
            first_line=first,
            at_eof=piece.at_eof,
            aligned=piece.aligned,
        )
        for b in reader:
            if reader.cut_last_line:
                unterminated = summ.last_line(b.first_line, b.offset, b.data, b.overlong)
            else:
                summ.block(b.first_line, b.offset, b.data, b.overlong)
        bytes_read += reader.bytes_read
        lines += reader.lines
        cut = cut or reader.cut_last_line
    return _Scan(summ, lines, bytes_read, cut, unterminated)


def _scan_forked(
    f: io.FileIO, pieces: list[_Piece], new: Callable[[], _Summarizer], max_line: int
) -> _Scan | None:
    """Each piece in a forked child, merged here in file order; None if any child
    failed (the caller then reads sequentially)."""
    children: list[tuple[int, int]] = []
    for piece in pieces:
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            try:
                os.close(rfd)
                # A file of its own: forked processes share a descriptor's offset.
                # The very file the parent checked (a regular one), not whatever the path
                # names now: /proc/self/fd where there is one.
                name = f"/proc/self/fd/{f.fileno()}"
                if not os.path.exists(name):
                    name = f.name if isinstance(f.name, str) else name
                with io.FileIO(name, "r") as own:
                    data = pickle.dumps(_scan(own, [piece], new(), max_line), protocol=4)
                view = memoryview(data)
                while view:
                    view = view[os.write(wfd, view) :]
            finally:
                os._exit(0)
        os.close(wfd)
        children.append((pid, rfd))
    parts: list[_Scan | None] = []
    for pid, rfd in children:
        chunks = []
        while True:
            chunk = os.read(rfd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(rfd)
        os.waitpid(pid, 0)
        try:
            parts.append(pickle.loads(b"".join(chunks)))
        except Exception:
            parts.append(None)
    if any(p is None for p in parts):
        return None
    done: list[_Scan] = [p for p in parts if p is not None]
    merged = done[0]
    summ, lines = merged.summ, merged.lines
    numbered_lines = merged.lines if pieces[0].numbered else 0
    for piece, part in zip(pieces[1:], done[1:]):
        part.summ.shift_lines(numbered_lines if piece.numbered else None)
        summ.absorb(part.summ, continuous=not piece.after_gap)
        if piece.numbered:
            numbered_lines += part.lines
        lines += part.lines
    last = done[-1]
    return _Scan(summ, lines, sum(p.bytes_read for p in done), last.cut, last.unterminated)


def _trainer_state(
    f: io.FileIO,
    size: int,
    fields: dict[str, Any],
    scale: float | None,
    max_scan: int,
    windows: int,
    max_values: int,
) -> dict[str, Any]:
    """A ``trainer_state.json``: one JSON document, read whole (it holds one entry per
    logging step, so even a long run's is a few MB), its ``log_history`` the records."""
    steps: list[dict[str, Any]] = []
    summaries: list[dict[str, Any]] = []
    evals = 0
    state: dict[str, Any] = {}
    problem = None
    f.seek(0)
    data = f.read(max_scan + 1)
    if len(data) > max_scan:
        problem = "too_large"
    else:
        try:
            steps, summaries, evals, state = logformats.trainer_state_records(_loads(data))
        except RecursionError:
            problem = TOO_DEEP
        except json.JSONDecodeError as exc:
            # Ends inside the document: written only in part (a copy or a save cut off).
            at_end = exc.pos >= len(data.rstrip()) or exc.msg.startswith("Unterminated string")
            problem = "cut_document" if at_end else "not_json"
        except ValueError:
            problem = "not_trainer_state"
    window = max(1, math.ceil(len(steps) / max(1, windows)))
    summ = _Summarizer(fields, scale, window, max_values, "trainer_state")
    if problem is not None:
        summ.bad(problem, None, 0, data[:SAMPLE_BYTES])
    summ.batch(steps, [None] * len(steps), [0] * len(steps))
    out = summ.result()
    out["schema"]["why"]["format"] = "a JSON document with a log_history (Trainer's state)"
    out["trainer_state"] = {k: _clip_value(v) for k, v in state.items()}
    out["run_summaries"] = [_clip_record(d) for d in summaries[-SAMPLES:]]
    out["eval_records"] = evals
    out["size"] = size
    out["coverage"] = {
        "mode": "full" if problem != "too_large" else "none",
        "ranges": [[0, min(size, len(data))]],
        "bytes_read": len(data),
        "skipped_bytes": max(0, size - len(data)),
        "lines_read": None,
    }
    out["unterminated_last_line"] = False
    out["cut_last_line"] = problem == "cut_document"
    return out


def _idle_cpus() -> int:
    """CPUs nobody is using right now, at most 4: on a box busy with training, reading
    in parallel only competes with the trainer (and with itself)."""
    cpus = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except OSError:
        busy = 0.0
    return max(1, min(4, int(cpus - busy + 0.5)))


def summarize(
    f: io.FileIO,
    *,
    fields: dict[str, Any] | None = None,
    throughput_unit: str | None = None,
    max_scan: int = 512 << 20,
    head: int = 8 << 20,
    max_line: int = 1 << 20,
    windows: int = 200,
    max_values: int = 100_000,
    workers: int | None = None,
) -> dict[str, Any]:
    """Summarise the JSONL log open in ``f`` (binary, unbuffered is fine).

    ``fields`` maps roles (``step``, ``loss``, ``throughput``, ``time``) to the log's
    own field names, and ``group`` to the fields that split it into series (a list; an
    empty list for one series); ``throughput_unit`` (``tok/s``, ``ktok/s``, ``mtok/s``)
    overrides the unit guessed from the field name. ``workers``: processes that read
    pieces of a large log side by side (default: one per idle CPU, at most 4, for logs
    over ``PARALLEL_MIN`` bytes; 1 reads in this process).
    """
    size = os.fstat(f.fileno()).st_size
    ranges = plan_ranges(size, max_scan, head)
    scale = None
    if throughput_unit is not None:
        scale = UNIT_SCALE.get(throughput_unit.lower())
        if scale is None:
            known = ", ".join(sorted(UNIT_SCALE))
            raise ValueError(f"unknown throughput unit {throughput_unit!r} (know {known})")
    # Size the windows from a first look at the line length, so a log of any length
    # gives about ``windows`` of them.
    f.seek(0)
    sample = f.read(64 << 10)
    name = f.name if isinstance(f.name, str) else ""
    fmt, fmt_why = logformats.sniff(name, sample, (fields or {}).get("format") or None)
    if fmt == "trainer_state":
        return _trainer_state(f, size, dict(fields or {}), scale, max_scan, windows, max_values)
    header = None
    if fmt == "csv":
        header = logformats.csv_header(sample.split(b"\n", 1)[0])
        if header is None:
            fmt, fmt_why = "text", "no CSV header row: read as text lines"
    avg = max(1.0, len(sample) / max(1, sample.count(b"\n")))
    scanned = sum(e - s for s, e in ranges)
    window = max(1, math.ceil(scanned / avg / max(1, windows)))

    def new() -> _Summarizer:
        return _Summarizer(dict(fields or {}), scale, window, max_values, fmt, header)

    if workers is None:
        workers = _idle_cpus() if scanned >= PARALLEL_MIN else 1
    whole = _pieces(f, ranges, size, 1)
    scan = None
    if workers > 1 and hasattr(os, "fork"):
        scan = _scan_forked(f, _pieces(f, ranges, size, workers), new, max_line)
    if scan is None:
        scan = _scan(f, whole, new(), max_line)
    out = scan.summ.result()
    out["schema"]["why"]["format"] = fmt_why
    out["size"] = size
    out["coverage"] = {
        "mode": "full" if len(ranges) == 1 else "head+tail",
        "ranges": [[s, e] for s, e in ranges],
        "bytes_read": scan.bytes_read,
        "skipped_bytes": size - scanned,
        "lines_read": scan.lines,
    }
    # A last line without its newline that still parses is a complete record whose
    # writer has not finished the line (a live log); one that does not parse was cut.
    out["unterminated_last_line"] = scan.cut and scan.unterminated
    out["cut_last_line"] = scan.cut and not scan.unterminated
    return out
