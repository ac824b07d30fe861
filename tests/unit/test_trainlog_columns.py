"""A batch of train-log records as columns (tools/parsers/_trainlog/columns.py): one list
per field with None where a record has no number, and the few column operations the
summarizer builds on (present values, differences, the largest ones)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from tools.parsers._trainlog.columns import (
    Col,
    differences,
    drop_nonfinite,
    largest,
    numbers,
    picker,
)


@pytest.mark.parametrize(
    ("raw", "vals", "full"),
    [
        ([1, 2.5, -3], [1, 2.5, -3], True),
        ([], [], True),
        ([1, None, 2.0], [1, None, 2.0], False),
        ([1, "x", True, None, {"a": 1}, 4.5], [1, None, None, None, None, 4.5], False),
        ([False, "3"], [None, None], False),
    ],
    ids=["numbers", "empty", "with-none", "mixed", "bool-and-text"],
)
def test_numbers(raw: list[Any], vals: list[Any], full: bool) -> None:
    """Only ints and floats are numbers: bools, text and objects become None, and the
    column is full only when every record has a number."""
    assert numbers(raw) == Col(vals, full)


def test_present_of_a_full_column_is_all_of_it() -> None:
    """A full column's present values are all of them, with no index list."""
    col = Col([3.0, 1.0], True)
    assert col.present() == ([3.0, 1.0], None)


def test_present_of_a_gappy_column_says_where() -> None:
    """A column with gaps gives its numbers and the records they came from."""
    col = Col([None, 3.0, None, 0.0, 7.0], False)
    assert col.present() == ([3.0, 0.0, 7.0], [1, 3, 4])


def test_part_and_take_keep_fullness() -> None:
    """A slice of records and the records an index list picks are columns of their own,
    as full as the column they came from."""
    col = Col([10.0, 20.0, 30.0, 40.0], True)
    assert col.part(1, 3) == Col([20.0, 30.0], True)
    assert col.take(picker([0, 3])) == Col([10.0, 40.0], True)
    assert col.take(picker([2])) == Col([30.0], True)


@pytest.mark.parametrize(
    ("idx", "expected"),
    [([2], ("c",)), ([0, 2], ("a", "c")), ([3, 1, 0], ("d", "b", "a"))],
    ids=["one-index-still-a-tuple", "two", "any-order"],
)
def test_picker(idx: list[int], expected: tuple[str, ...]) -> None:
    """The items at the given indices, in their order, always as a tuple."""
    assert picker(idx)(["a", "b", "c", "d"]) == expected


def test_drop_nonfinite() -> None:
    """NaN and infinities are dropped and counted; a finite column comes back as it is."""
    clean = [1.0, 2.0]
    assert drop_nonfinite(clean)[0] is clean
    assert drop_nonfinite(clean)[1] == 0
    assert drop_nonfinite([1.0, math.nan, math.inf, 2.0, -math.inf]) == ([1.0, 2.0], 3)
    assert drop_nonfinite([]) == ([], 0)


@pytest.mark.parametrize(
    ("vals", "prev", "diffs", "base"),
    [
        ([1.0, 4.0, 3.0], None, [3.0, -1.0], 1),
        ([1.0, 4.0, 3.0], 0.5, [0.5, 3.0, -1.0], 0),
        ([5.0], None, [], 1),
        ([5.0], 2.0, [3.0], 0),
    ],
    ids=["first-batch", "after-a-batch", "one-value", "one-value-after-a-batch"],
)
def test_differences(vals: list[float], prev: float | None, diffs: list[float], base: int) -> None:
    """Successive differences, from the previous batch's last value when there is one
    (then the first difference belongs to value 0, else to value 1)."""
    assert differences(vals, prev) == (diffs, base)


@pytest.mark.parametrize(
    ("diffs", "floor", "expected"),
    [
        ([], -math.inf, []),
        ([1.0, 2.0], 2.0, []),
        ([1.0, 9.0, 3.0, 7.0, 5.0, 8.0, 2.0], 0.0, [1, 5, 3, 4, 2]),
        ([1.0, 9.0, 3.0, 7.0, 5.0, 8.0, 2.0], 4.0, [1, 5, 3, 4]),
    ],
    ids=["empty", "none-above-floor", "top-five", "above-floor-only"],
)
def test_largest(diffs: list[float], floor: float, expected: list[int]) -> None:
    """The indices of at most five differences above the floor, largest first."""
    assert largest(diffs, floor) == expected
