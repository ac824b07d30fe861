"""tools/parsers/_trainlog/points.py holds a record as the run's speed sees it (``Point``)
and how far its count and seconds may be off by their rounding: the digits a value was
written with, the precision a field has shown (``Precision``, ``Bounds``), the rate between
two points of one segment with its error bound, and why a record starts a new segment."""

from __future__ import annotations

import math

import pytest

from tools.parsers._trainlog import points
from tools.parsers._trainlog.points import (
    Bounds,
    Point,
    Precision,
    break_reason,
    moved,
    point_doc,
    span_rate,
)


def point(
    *,
    line: int | None = 1,
    step: float | None = None,
    value: float | None = None,
    total: float | None = None,
    seconds: float | None = None,
    rate: float | None = None,
    segment: int = 0,
) -> Point:
    return Point(line, step, value, total, seconds, rate, segment)


@pytest.mark.parametrize(
    ("value", "digits"),
    [
        (1.0, (1, 0)),
        (3.25, (3, -2)),
        (-2.5, (2, -1)),
        (0.0125, (3, -4)),
        (100.0, (1, 2)),
        (10880.0, (4, 1)),
        (1.5e-05, (2, -6)),
        (1e16, (1, 16)),
    ],
    ids=[
        "one",
        "two-decimals",
        "negative",
        "leading-zeros",
        "hundred",
        "4g-console",
        "tiny",
        "huge",
    ],
)
def test_digits_are_the_significant_ones_and_the_place_of_the_last(
    value: float, digits: tuple[int, int]
) -> None:
    """A value's written form gives its count of significant digits and the exponent of
    the last one; a whole number's trailing zeros show nothing, and an exponent shifts."""
    assert points._digits(value) == digits


@pytest.mark.parametrize(
    ("learnt", "value", "bound"),
    [
        ([], 3.25, 0.005),
        ([], 1.5, 0.05),
        ([1.2345], 1.0, 0.00005),
        ([10880.0, 1.234], 10880.0, 5.0),
        ([10880.0, 1.234], 1.5, 0.0005),
        ([3, 0.0, math.nan, math.inf], 1.5, 0.05),
    ],
    ids=[
        "own-digits",
        "own-digit",
        "field-writes-4-decimals",
        "field-keeps-4-significant",
        "finest-place-wins-when-coarser",
        "ints-zeros-non-finite-teach-nothing",
    ],
)
def test_a_values_bound_is_half_a_unit_of_the_coarser_of_place_and_significance(
    learnt: list[float], value: float, bound: float
) -> None:
    """The bound on a value's rounding is half a unit in the finest decimal place its
    field has shown, or in its last significant digit when the field keeps a fixed count
    of them, whichever is coarser; ints, zeros and non-finite values teach nothing."""
    precision = Precision()
    precision.learn(learnt)
    assert precision.bound(value) == pytest.approx(bound, rel=1e-12)


@pytest.mark.parametrize(
    ("clock", "value", "bound"),
    [
        (False, 120, 0.0),
        (True, 120, 0.5),
        (False, 0.0, 0.0),
        (True, math.inf, 0.0),
        (False, math.nan, 0.0),
    ],
    ids=["int-count-exact", "int-clock-to-the-second", "zero", "infinite", "nan"],
)
def test_ints_zero_and_non_finite_values_have_fixed_bounds(
    clock: bool, value: float, bound: float
) -> None:
    """An int count is exact, an int clock good to the second; zero and non-finite
    values carry no rounding bound."""
    assert Precision(clock=clock).bound(value) == bound


def test_point_doc_shows_a_count_or_a_stated_value() -> None:
    """A point with a count is cited by its count and seconds; one without, by the value
    it stated."""
    counted = point(line=7, step=3.0, total=300.0, seconds=12.5)
    stated = point(line=8, step=4.0, value=2.5)
    assert point_doc(counted) == {"line": 7, "step": 3.0, "count": 300.0, "seconds": 12.5}
    assert point_doc(stated) == {"line": 8, "step": 4.0, "value": 2.5}


def test_bounds_of_a_point_combine_the_rates_and_the_clocks_rounding() -> None:
    """A count made from a stated average over seconds is off by the seconds times the
    average's rounding plus the average times the clock's; without seconds nothing is
    bounded, without an average only the seconds are."""
    bounds = Bounds()
    assert bounds.of(point(total=5.0)) == (0.0, 0.0)
    assert bounds.of(point(total=5.0, seconds=100)) == (0.0, 0.5)
    count_err, secs_err = bounds.of(point(total=250.0, seconds=100, rate=2.5))
    assert secs_err == 0.5
    assert count_err == pytest.approx(100 * 0.05 + 2.5 * 0.5, rel=1e-12)


def test_bounds_learn_and_absorb_the_finest_precision_seen() -> None:
    """What one batch learnt is merged into another: the most significant digits and the
    finest place of each field; a field the other never saw is left as it was."""
    mine, theirs = Bounds(), Bounds()
    mine.learn([1.5, None], [12.5])
    theirs.learn([1.234], [])
    mine.absorb(theirs)
    assert (mine.rate.sig, mine.rate.place) == (4, -3)
    assert (mine.secs.sig, mine.secs.place) == (3, -1)
    empty = Bounds()
    empty.absorb(mine)
    assert (empty.secs.sig, empty.secs.place) == (3, -1)


def test_a_large_batch_is_sampled_evenly_without_its_gaps() -> None:
    """Missing values are dropped; up to ``SAMPLE`` values are all kept, beyond that an
    even stride of them is."""
    assert points.SAMPLE == 32
    assert points._sample([1.0, None, 2.0]) == [1.0, 2.0]
    hundred = [float(i) for i in range(100)]
    assert points._sample(hundred) == [float(i) for i in range(0, 100, 3)]


@pytest.mark.parametrize(
    ("first", "last"),
    [
        (point(seconds=1.5), point(total=9.0, seconds=2.5)),
        (point(total=1.0, seconds=1.5), point(seconds=2.5)),
        (point(total=1.0), point(total=9.0, seconds=2.5)),
        (point(total=1.0, seconds=1.5), point(total=9.0)),
        (point(total=1.0, seconds=1.5), point(total=9.0, seconds=2.5, segment=1)),
        (point(total=1.0, seconds=2.5), point(total=9.0, seconds=2.5)),
        (point(total=1.0, seconds=3.5), point(total=9.0, seconds=2.5)),
    ],
    ids=[
        "first-no-count",
        "last-no-count",
        "first-no-seconds",
        "last-no-seconds",
        "two-segments",
        "no-time-passed",
        "time-went-back",
    ],
)
def test_no_rate_spans_points_without_counts_clocks_or_time_between(
    first: Point, last: Point
) -> None:
    """A rate needs a count and seconds at both ends, one segment, and time passing."""
    assert span_rate(first, last, Bounds()) is None


def test_a_span_rate_with_clock_seconds_is_bounded_by_the_clocks_rounding() -> None:
    """200 counted over 40 whole seconds is 5 per second; each clock reading may be half
    a second off, so the rate may be 5 × (0.5 + 0.5) / 40 off."""
    first = point(total=100.0, seconds=10)
    last = point(total=300.0, seconds=50)
    assert span_rate(first, last, Bounds()) == (5.0, 0.125)


def test_a_span_rate_from_stated_averages_carries_their_rounding() -> None:
    """Counts made from a stated average of 2.25 over 12.5 s and 62.5 s: each count is off
    by seconds × 0.005 + 2.25 × 0.05, and the rate by the two counts' bounds plus the
    rate times both clocks' bounds, over the 50 s between."""
    first = point(total=12.5 * 2.25, seconds=12.5, rate=2.25)
    last = point(total=62.5 * 2.25, seconds=62.5, rate=2.25)
    got = span_rate(first, last, Bounds())
    assert got is not None
    e0 = 12.5 * 0.005 + 2.25 * 0.05
    e1 = 62.5 * 0.005 + 2.25 * 0.05
    assert got[0] == 2.25
    assert got[1] == pytest.approx((e0 + e1 + 2.25 * 0.1) / 50, rel=1e-12)
    assert got[1] == pytest.approx(0.0165, rel=1e-12)


def test_moved_shifts_a_points_line_or_forgets_it() -> None:
    """A point's line moves by ``delta``; an unknown delta makes it unknown; no point, or
    one without a line, is left as it is."""
    p = point(line=10, total=1.0)
    assert moved(p, 5) == point(line=15, total=1.0)
    assert moved(p, None) == point(line=None, total=1.0)
    assert moved(None, 5) is None
    lineless = point(line=None, total=1.0)
    assert moved(lineless, 5) is lineless


@pytest.mark.parametrize(
    ("prev", "step", "seconds", "count", "reason"),
    [
        (point(step=10.0), 9.0, None, None, "the step went back"),
        (point(step=10.0), 10.0, None, None, None),
        (point(step=10.0), 11.0, None, None, None),
        (point(seconds=50.0), None, 49.0, None, "the seconds counter went back"),
        (point(total=300.0), None, None, 200.0, "the count went back"),
        (point(step=10.0, seconds=50.0), 9.0, 49.0, None, "the step went back"),
        (point(seconds=50.0, total=300.0), 11.0, 51.0, 200.0, "the count went back"),
        (point(), 1.0, 1.0, 1.0, None),
        (point(step=10.0, seconds=50.0, total=300.0), None, None, None, None),
    ],
    ids=[
        "step-back",
        "step-repeated",
        "step-forward",
        "seconds-back",
        "count-back",
        "step-named-first",
        "count-back-alone",
        "nothing-before",
        "nothing-now",
    ],
)
def test_break_reason_names_what_went_back(
    prev: Point,
    step: float | None,
    seconds: float | None,
    count: float | None,
    reason: str | None,
) -> None:
    """A record starts a new segment when its step, its seconds or its count is lower
    than the record before (the step is named first); a repeated step is no restart, and
    a value missing on either side says nothing."""
    assert break_reason(prev, step, seconds, count) == reason
