"""``tools.figures.finite_number``: the one test of a number a figure can be made of,
and the readers that used four of their own (one raised on a 400-digit integer)."""

from __future__ import annotations

import math

import pytest

from agent.analysis.progress import logging_interval
from agent.model.facts import Fact
from tools.figures import finite_number


@pytest.mark.parametrize(
    ("value", "number"),
    [
        (3, 3.0),
        (2.5, 2.5),
        (-0.0, 0.0),
        (10**300, 1e300),
        (10**400, None),  # no float holds it: float() raises OverflowError
        (-(10**400), None),
        (math.nan, None),
        (math.inf, None),
        (-math.inf, None),
        (True, None),  # JSON's true reads as an int
        (False, None),
        ("3", None),
        (None, None),
        ([1], None),
    ],
)
def test_a_finite_number_or_none(value: object, number: float | None) -> None:
    """Each kind of value a JSON file may hold, as a figure or as none."""
    assert finite_number(value) == number


@pytest.mark.parametrize("interval", [10**400, math.inf, True])
def test_a_logging_interval_no_float_holds_is_no_interval(interval: object) -> None:
    """A train log's stated interval that is no usable number is no interval (a
    400-digit integer raised OverflowError here before)."""
    fact = Fact(probe="trainlog", target="local", value={"speed": {"median_interval_s": interval}})
    assert logging_interval(fact) is None
