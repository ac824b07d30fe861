"""A record's values as the train-log summary may use them
(tools/parsers/_trainlog/values.py): which orjson is safe to parse with, integers past
Python's digit limit, numbers no float holds, timestamps, and values clipped to fit in a
fact that ships as strict JSON."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import pytest

from tools.parsers._trainlog.values import (
    ORJSON_SAFE,
    SAMPLE_BYTES,
    LongInt,
    _version,
    clip_record,
    clip_value,
    int_digits,
    key_text,
    label_value,
    loads,
    to_time,
    why_unusable,
)

JAN_1_2026 = 1_767_225_600.0  # 2026-01-01T00:00:00Z in epoch seconds
NINES = "9" * 5000  # past Python's default digit limit of 4300


def _nested(depth: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(depth):
        out = [out]
    return out


@pytest.mark.parametrize(
    ("version", "safe"),
    [
        ("3.8.3", False),
        ("3.9.14", False),
        ("3.9.15", True),
        ("3.9.15.post1", True),
        ("3.10.0rc1", True),
        ("3.10", True),
        ("3.9", False),
        ("0", False),
    ],
    ids=[
        "old",
        "last-unsafe",
        "first-safe",
        "post-release",
        "release-candidate",
        "two-parts",
        "short-old",
        "unknown",
    ],
)
def test_orjson_versions_with_a_depth_limit(version: str, safe: bool) -> None:
    """orjson is used only from 3.9.15 on (earlier ones follow nesting with no limit and
    crash the process); a version's parts are read by their digits, whatever follows."""
    assert (_version(version) >= ORJSON_SAFE) is safe


def test_loads_keeps_an_integer_past_the_digit_limit_as_text() -> None:
    """An integer with more digits than Python converts is read as a LongInt (its text),
    and the rest of the line is read as usual; a sign stays part of the text."""
    out = loads('{"step": 3, "tok/s": ' + NINES + ', "loss": -' + NINES + "}")
    assert out == {"step": 3, "tok/s": NINES, "loss": "-" + NINES}
    assert type(out["tok/s"]) is LongInt and type(out["loss"]) is LongInt
    assert type(out["step"]) is int


def test_loads_reads_bytes_and_nan_like_json() -> None:
    """Bytes and text parse as ``json.loads`` does, NaN included."""
    out = loads(b'{"loss": NaN, "x": [1, 2.5]}')
    assert math.isnan(out["loss"]) and out["x"] == [1, 2.5]


def test_loads_raises_on_what_is_not_json() -> None:
    """What is not JSON raises the parser's own error, saying where."""
    with pytest.raises(json.JSONDecodeError, match=r"Expecting value: line 1 column 10"):
        loads('{"step": }')


@pytest.mark.parametrize(
    ("v", "digits"),
    [(12345, "5"), (-(10**400), "401"), (0, "1"), (10**5000, "about 5001")],
    ids=["small", "negative-huge", "zero", "past-the-digit-limit"],
)
def test_int_digits(v: int, digits: str) -> None:
    """An integer's decimal digits, sign left out; past the digit limit (where Python
    will not write it out) an estimate from its bits, said to be one."""
    assert int_digits(v) == digits


@pytest.mark.parametrize(
    ("v", "finite", "why"),
    [
        (1, True, None),
        (int(sys.float_info.max), True, None),
        (10**309, True, "integer of 310 digits: beyond the float range"),
        (-(10**309), False, "integer of 310 digits: beyond the float range"),
        (LongInt("-" + NINES), False, "integer of 5000 digits: beyond the float range"),
        (math.inf, True, "inf is not a finite number"),
        (-math.inf, True, "-inf is not a finite number"),
        (math.nan, True, "nan is not a finite number"),
        (math.inf, False, None),
        ("fast", True, None),
        (True, True, None),
        (None, True, None),
    ],
    ids=[
        "small",
        "largest-float",
        "beyond-float",
        "negative-beyond-float",
        "past-digit-limit",
        "inf",
        "minus-inf",
        "nan",
        "inf-allowed",
        "text",
        "bool",
        "none",
    ],
)
def test_why_unusable(v: Any, finite: bool, why: str | None) -> None:
    """A number nobody can compute with says why: an integer beyond the float range by
    its digits, and, where the role needs finite numbers, an inf or NaN; anything that
    is no number (text, a bool, None) is not this function's concern."""
    assert why_unusable(v, finite) == why


@pytest.mark.parametrize(
    ("v", "label"),
    [
        (3, 3),
        (2.5, 2.5),
        (10**400, "<integer of 401 digits>"),
        (math.nan, "<nan: not a finite number>"),
        ("x" * 300, "x" * 300),
        (True, True),
    ],
    ids=["int", "float", "huge-int", "nan", "long-text-as-is", "bool"],
)
def test_label_value(v: Any, label: Any) -> None:
    """A series' value is shown as it is, except a number no fact can hold, named."""
    assert label_value(v) == label


def test_key_text_of_a_list_or_object() -> None:
    """A list or object where a device name belongs becomes its JSON text, keys sorted,
    so equal values give equal keys; one nested past the recursion limit is named."""
    assert key_text(["a", {"b": 1, "a": 2}]) == '["a", {"a": 2, "b": 1}]'
    assert key_text({"b": 1, "a": 2}) == key_text({"a": 2, "b": 1})
    assert key_text(_nested(sys.getrecursionlimit() + 100)) == "<list nested too deep>"


@pytest.mark.parametrize(
    ("v", "clipped"),
    [
        (5, 5),
        (None, None),
        ("short", "short"),
        ("y" * 200, '"' + "y" * (SAMPLE_BYTES - 1)),
        ({"a": [1, 2]}, '{"a": [1, 2]}'),
        (list(range(100)), json.dumps(list(range(100)))[:SAMPLE_BYTES]),
        (10**400, "<integer of 401 digits>"),
        (2**70, 2**70),
        (math.inf, "<inf: not a finite number>"),
        (-math.inf, "<-inf: not a finite number>"),
    ],
    ids=[
        "int",
        "none",
        "short-text",
        "long-text",
        "object",
        "long-list",
        "huge-int",
        "int-a-float-holds",
        "inf",
        "minus-inf",
    ],
)
def test_clip_value(v: Any, clipped: Any) -> None:
    """A value becomes a fact: nested values as the start of their JSON text, text over
    160 characters cut (as JSON text), an integer no float holds and a non-finite float
    named instead of written; everything else as it is."""
    assert clip_value(v) == clipped


def test_clip_value_of_a_value_nested_too_deep() -> None:
    """A value nested past the recursion limit is named, not written."""
    deep = _nested(sys.getrecursionlimit() + 100)
    assert clip_value(deep) == "<list nested too deep to write>"
    assert clip_value({"x": deep}) == "<dict nested too deep to write>"


def test_clip_record_bounds_keys_and_values() -> None:
    """A record as a fact: its first 32 fields, names cut at 64 characters and made
    text, each value clipped."""
    rec: dict[Any, Any] = {f"k{i:02d}": i for i in range(40)}
    rec = {"n" * 100: math.nan, 7: "seven", **rec}
    out = clip_record(rec)
    assert len(out) == 32
    assert out["n" * 64] == "<nan: not a finite number>"
    assert out["7"] == "seven"
    assert list(out)[-1] == "k29"


@pytest.mark.parametrize(
    ("v", "t"),
    [
        (1.7e9, 1.7e9),
        (1_700_000_000, 1.7e9),
        (1.7e12, 1.7e9),
        (1e11, 1e11),
        ("1700000000.5", 1_700_000_000.5),
        ("1.7e12", 1.7e9),
        ("2026-01-01T00:00:00Z", JAN_1_2026),
        ("2026-01-01T01:30:00+01:30", JAN_1_2026),
        ("yesterday", None),
        ("nan", None),
        (math.inf, None),
        (True, None),
        (None, None),
        ([1.7e9], None),
    ],
    ids=[
        "seconds",
        "int-seconds",
        "milliseconds",
        "at-the-ms-threshold",
        "text-seconds",
        "text-ms",
        "iso-z",
        "iso-offset",
        "words",
        "nan-text",
        "inf",
        "bool",
        "none",
        "list",
    ],
)
def test_to_time(v: Any, t: float | None) -> None:
    """Epoch seconds from seconds, milliseconds (anything past 1e11), their text, or an
    ISO-8601 time with its zone; None for what is no time (words, non-finite numbers,
    bools, containers)."""
    assert to_time(v) == t
