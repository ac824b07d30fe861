"""A record's values as the summary may use them: the JSON decoders, numbers no float
can hold, times, and values clipped to fit in a fact.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any

# The fast path parses whole blocks; orjson (when the target happens to have it, as
# many ML environments do) does that ~2x faster than the stdlib. The result is the same
# Python objects; anything orjson refuses (NaN, huge ints) is re-read line by line by
# the stdlib parser, which also classifies the damage. Without orjson: stdlib only.
# Read as ``values.block_loads`` / ``values.DECODER`` where used, so one assignment here
# switches the decoder everywhere (the tests run both).
# orjson before 3.9.15 follows nesting on the native stack with no limit: a record 60,000
# deep kills the process (CVE-2024-27454; 3.8.3 measured here). Those versions are left
# to the stdlib, which raises RecursionError instead.
ORJSON_SAFE = (3, 9, 15)


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for word in text.split(".")[:3]:
        digits = "".join(c for c in word if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


try:
    import orjson as _orjson

    if _version(getattr(_orjson, "__version__", "0")) < ORJSON_SAFE:
        raise ImportError("orjson without a depth limit")
    block_loads: Callable[[bytes], Any] = _orjson.loads
    DECODER = "orjson " + _orjson.__version__
except ImportError:  # pragma: no cover - depends on the target
    block_loads = json.loads
    DECODER = "json"

SAMPLES = 5  # malformed-line samples, restarts, gaps kept
SAMPLE_BYTES = 160
TOO_DEEP = "too_deep"  # a record nested deeper than the parser's recursion limit
# Roles whose non-finite values are counted as ``nonfinite`` (a NaN loss is a training
# fact); in the others (step, time, token counts, seconds) an inf or NaN is unusable.
NONFINITE_COUNTED = ("throughput", "loss", "grad_norm")
INT_FLOAT = 1 << 64  # past this an int is read as a float (orjson does the same)
FLOAT_MAX = int(sys.float_info.max)
# The message of the ValueError Python (>= 3.11, and 3.8.14+) raises for an int literal
# past its digit limit (``sys.get_int_max_str_digits``).
_DIGIT_LIMIT = "integer string conversion"
NUMERIC = frozenset((int, float))
NUMERIC_OR_NONE = frozenset((int, float, type(None)))


class LongInt(str):
    """An integer literal past Python's digit limit, kept as its text: no usable number."""

    __slots__ = ()


def _parse_int(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        return LongInt(text)


def loads(data: bytes | str) -> Any:
    """``json.loads``, except that an integer past Python's digit limit is read as a
    ``LongInt`` instead of failing the whole line (or document). RecursionError (too
    deep) is the caller's to classify."""
    try:
        return json.loads(data)
    except ValueError as exc:
        if _DIGIT_LIMIT not in str(exc):
            raise
    return json.loads(data, parse_int=_parse_int)


def int_digits(v: int) -> str:
    try:
        return str(len(str(abs(v))))
    except ValueError:  # past the digit limit itself
        return f"about {int(abs(v).bit_length() * 0.30103) + 1}"


def why_unusable(v: Any, finite: bool) -> str | None:
    """Why ``v`` is no usable number for a role (None: it is one, or not a number)."""
    t = type(v)
    if t is int:
        if -FLOAT_MAX <= v <= FLOAT_MAX:
            return None
        return f"integer of {int_digits(v)} digits: beyond the float range"
    if t is LongInt:
        return f"integer of {len(v.lstrip('-+'))} digits: beyond the float range"
    if t is float and finite and not math.isfinite(v):
        return f"{v} is not a finite number"
    return None


def label_value(v: Any) -> Any:
    """A series' value as its label shows it (an integer no float holds, by its size)."""
    return clip_value(v) if type(v) in (int, float) else v


def key_text(v: Any) -> str:
    """A series' key as text, for a list or object where a device name belongs."""
    try:
        return json.dumps(v, sort_keys=True, default=str)
    except (RecursionError, ValueError):
        return f"<{type(v).__name__} nested too deep>"


def clip_value(v: Any) -> Any:
    """A value of a record as a fact: nested values as (the start of) their JSON text,
    long text cut, an integer no float can hold named instead of written out."""
    if isinstance(v, (dict, list)):
        try:
            return json.dumps(v)[:SAMPLE_BYTES]
        except (RecursionError, ValueError):
            return f"<{type(v).__name__} nested too deep to write>"
    if isinstance(v, str) and len(v) > SAMPLE_BYTES:
        return json.dumps(v)[:SAMPLE_BYTES]
    if type(v) is int and why_unusable(v, False) is not None:
        return f"<integer of {int_digits(v)} digits>"
    if type(v) is float and not math.isfinite(v):
        # A fact is strict JSON (the runner refuses NaN): named, not written out.
        return f"<{v}: not a finite number>"
    return v


def clip_record(d: dict[str, Any]) -> dict[str, Any]:
    """A last record as a fact, without letting one huge field bloat the summary."""
    return {str(k)[:64]: clip_value(d[k]) for k in list(d)[:32]}


def to_time(v: Any) -> float | None:
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
