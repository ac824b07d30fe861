"""Where a series of window medians changes regime, and when a change is sustained or
only possible: the statistics under every throughput symptom, on series small enough to
work out by hand."""

from __future__ import annotations

import math

import pytest

from agent.analysis.change_points import (
    best_split,
    change_points,
    possible_drop,
    sustained_ratio,
    why_unconfirmed,
)


def test_the_best_split_is_where_each_side_is_flat() -> None:
    """The split leaving the least absolute deviation from each side's median lands on
    the change; a series too short to leave ``least`` on each side has none."""
    assert best_split([0, 0, 0, 5, 5, 5], 2) == 3
    assert best_split([0, 0, 0, 0, 0, 5, 5], 2) == 5
    assert best_split([1, 2, 3], 2) is None


def test_a_change_is_sustained_only_beyond_chance() -> None:
    """Ten windows at 10 then ten at 5 (logs): every right window below every left one,
    Mann-Whitney z = 50 / sqrt(175) ≈ 3.78 > 3.09, so the ratio 0.5 stands; six and six
    can never reach it, and a ratio inside 0.8–1.25 is no change whatever the counts."""
    ten, five, nine = math.log(10), math.log(5), math.log(9)
    assert sustained_ratio([ten] * 10, [five] * 10) == pytest.approx(0.5)
    assert sustained_ratio([ten] * 6, [five] * 6) is None
    assert sustained_ratio([ten] * 10, [nine] * 10) is None
    assert sustained_ratio([five] * 10, [ten] * 10) == pytest.approx(2.0)


def test_a_long_plain_drop_is_one_change_point() -> None:
    """Sixteen windows at 10,000 then sixteen at 4,000 tokens/s: one regime change, at
    the first slow window."""
    assert change_points([1e4] * 16 + [4e3] * 16) == [16]
    assert change_points([1e4] * 32) == []


def test_a_short_plain_drop_is_possible_not_confirmed_and_says_why() -> None:
    """Four windows at 10 then two at 3: too few to confirm, plain enough to say (0.3×,
    every slow window below the median before); two at 6 (0.6×) are not said at all."""
    found = possible_drop([10, 10, 10, 10, 3, 3])
    assert found is not None and found[0] == 4 and found[1] == pytest.approx(0.3)
    assert possible_drop([10, 10, 10, 10, 6, 6]) is None
    assert possible_drop([10, 10, 10, 10, 3, 11]) is None
    assert why_unconfirmed(4, 6) == (
        "2 window(s) after it and 4 before; a sustained change needs 3 on each side"
    )
    assert why_unconfirmed(30, 60) == (
        "the windows on either side do not differ beyond chance: Mann-Whitney p ≥ 0.001"
    )
