"""What the train-log summarizer keeps per series (tools/parsers/_trainlog/group.py): the
series' steps, throughput with its stated "recent" figure, and loss; and where a column's
numbers first stopped being finite."""

from __future__ import annotations

import math

import pytest

from tools.parsers._trainlog.columns import Col
from tools.parsers._trainlog.group import Group, first_nonfinite


@pytest.mark.parametrize(
    ("vals", "steps", "expected"),
    [
        ([2.0, 1.5, 1.0], [1.0, 2.0, 3.0], None),
        ([None, None], [1.0, 2.0], None),
        (
            [2.0, None, math.nan, math.inf],
            [1.0, 2.0, 3.0, 4.0],
            {"line": 12, "step": 3.0, "value": "nan"},
        ),
        ([-math.inf, 1.0], [None, 2.0], {"line": 10, "step": None, "value": "-inf"}),
    ],
    ids=["all-finite", "no-numbers", "first-of-several", "without-a-step"],
)
def test_first_nonfinite(
    vals: list[float | None], steps: list[float | None], expected: dict[str, object] | None
) -> None:
    """The first NaN or infinity of a column, with its line, its record's step and the
    value as Python writes it (JSON has no NaN); None when every number is finite."""
    lines: list[int | None] = list(range(10, 10 + len(vals)))
    col = Col(vals, None not in vals)
    assert first_nonfinite(col, Col(steps, None not in steps), lines) == expected


def _filled(n: int) -> Group:
    """A series whose throughput was 1, 2, ... n, added as the summarizer adds it."""
    grp = Group(100_000)
    vals = [float(v) for v in range(1, n + 1)]
    grp.tok.extend(vals)
    grp.recent_tok.extend(vals)
    return grp


@pytest.mark.parametrize(
    ("n", "records", "median"),
    [(2, 2, 1.5), (10, 3, 9.0), (100, 25, 88.0), (400, 50, 375.5)],
    ids=["fewer-than-the-minimum", "at-least-three", "a-quarter", "at-most-fifty"],
)
def test_recent_throughput_is_a_stated_window(n: int, records: int, median: float) -> None:
    """The recent throughput is the median of the series' last quarter of values, at
    least 3 and at most 50 of them (all of them when there are fewer), and says so."""
    tok = _filled(n).summary()["throughput"]
    assert (tok["recent_records"], tok["recent_median"]) == (records, median)
    assert tok["recent_how"] == (
        f"median of the last {records} values (a quarter of the {n}, at least 3, at most 50)"
    )


def test_summary_of_an_empty_series() -> None:
    """A series with no values says so, with no recent figure."""
    out = Group(10).summary()
    assert out["records"] == 0
    assert out["loss"] == {"count": 0}
    assert out["steps"]["count"] == 0
    assert (out["throughput"]["count"], out["throughput"]["recent_median"]) == (0, None)


@pytest.mark.parametrize(
    ("continuous", "restarts"), [(True, 1), (False, 0)], ids=["continuous", "unread-part-between"]
)
def test_absorb_appends_the_later_part(continuous: bool, restarts: int) -> None:
    """Absorbing the same series' later part adds its records and values, and the recent
    figure comes from the later values; a step going back where they meet is a restart
    only when nothing lies between."""
    first, later = _filled(8), Group(100_000)
    first.records = 8
    first.steps.add(Col([5.0, 6.0], True), [1, 2], [0, 10])
    later.records = 4
    later.tok.extend([100.0, 200.0, 300.0, 400.0])
    later.recent_tok.extend([100.0, 200.0, 300.0, 400.0])
    later.loss.extend([2.0])
    later.steps.add(Col([1.0, 2.0], True), [1, 2], [20, 30])
    first.absorb(later, continuous)
    out = first.summary()
    assert out["records"] == 12
    assert out["steps"]["restarts"] == restarts
    tok = out["throughput"]
    assert (tok["count"], tok["max"], tok["last"]) == (12, 400.0, 400.0)
    assert (tok["recent_records"], tok["recent_median"]) == (3, 300.0)
    assert out["loss"]["count"] == 1
