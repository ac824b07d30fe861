"""Statistics in bounded memory for the train-log summary (tools/parsers/_trainlog/stats.py):
quantiles from a systematic sample that says how it was thinned, the few largest items,
and windows of records reduced to their medians."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tools.parsers._trainlog.stats import Sample, Top, Window, median, middle, quantile


def test_sample_under_its_cap_is_exact() -> None:
    """Fewer values than the cap are all kept: the quantiles interpolate between them,
    and the summary says they are exact."""
    s = Sample(100)
    s.extend([5.0, 1.0, 4.0])
    s.extend([2.0, 3.0])
    assert s.summary() == {
        "count": 5,
        "first": 5.0,
        "last": 3.0,
        "min": 1.0,
        "max": 5.0,
        "p10": 1.4,
        "median": 3.0,
        "p90": 4.6,
        "exact": True,
        "sampled_every": 1,
    }


def test_empty_sample_has_only_its_count() -> None:
    """A sample of no values says so, and nothing else."""
    s = Sample(10)
    s.extend([])
    assert s.summary() == {"count": 0}


@pytest.mark.parametrize(
    "chunks",
    [[20], [1] * 20, [3, 3, 3, 3, 3, 3, 2], [9, 11]],
    ids=["one-go", "one-at-a-time", "threes", "uneven"],
)
def test_sample_past_its_cap_keeps_every_nth_value(chunks: list[int]) -> None:
    """Past its cap the sample is halved, again and again, into every 2nd, 4th, 8th value
    counted from the first: 20 values under a cap of 4 keep values 0, 8 and 16, however
    they arrived; the count, range, first and last stay exact."""
    s = Sample(4)
    start = 0
    for n in chunks:
        s.extend([float(v) for v in range(start, start + n)])
        start += n
    assert s.values == [0.0, 8.0, 16.0]
    out = s.summary()
    assert (out["count"], out["exact"], out["sampled_every"]) == (20, False, 8)
    assert (out["min"], out["max"], out["first"], out["last"]) == (0.0, 19.0, 0.0, 19.0)


def test_absorb_appends_the_later_sample() -> None:
    """A sample absorbs the one of the values that came after its own: counts add, the
    first value stays, the last is the later sample's."""
    a, b = Sample(100), Sample(100)
    a.extend([3.0, 1.0, 2.0])
    b.extend([9.0, 0.5])
    a.absorb(b)
    assert a.values == [3.0, 1.0, 2.0, 9.0, 0.5]
    assert (a.count, a.first, a.last, a.lo, a.hi) == (5, 3.0, 0.5, 0.5, 9.0)


def test_absorb_brings_both_to_the_coarser_stride() -> None:
    """Samples thinned differently are both brought to the coarser stride (every 4th
    here), then halved again while they reach the cap."""
    a, b = Sample(4), Sample(100)
    a.extend([float(v) for v in range(10)])  # every 4th: 0, 4, 8
    b.extend([100.0, 101.0, 102.0, 103.0])
    a.absorb(b)
    assert a.values == [0.0, 8.0]
    assert (a.stride, a.count, a.lo, a.hi, a.last) == (8, 14, 0.0, 103.0, 103.0)


def test_absorb_into_an_empty_sample_and_of_an_empty_one() -> None:
    """An empty sample takes the other's first value; absorbing an empty one changes
    nothing."""
    a, b = Sample(10), Sample(10)
    b.extend([2.0, 4.0])
    a.absorb(b)
    assert (a.count, a.first, a.last, a.values) == (2, 2.0, 4.0, [2.0, 4.0])
    a.absorb(Sample(10))
    assert (a.count, a.first, a.last, a.values) == (2, 2.0, 4.0, [2.0, 4.0])


@pytest.mark.parametrize(
    ("vals", "q", "expected"),
    [
        ([], 0.5, None),
        ([5.0], 0.5, 5.0),
        ([1.0, 2.0, 3.0, 4.0], 0.5, 2.5),
        ([1.0, 2.0, 3.0, 4.0, 5.0], 0.1, 1.4),
        ([1.0, 2.0, 3.0, 4.0, 5.0], 0.0, 1.0),
        ([1.0, 2.0, 3.0, 4.0, 5.0], 1.0, 5.0),
        ([10.0, 20.0, 40.0], 0.75, 30.0),
    ],
    ids=["empty", "one", "even-median", "p10", "lowest", "highest", "interpolated"],
)
def test_quantile(vals: Sequence[float], q: float, expected: float | None) -> None:
    """The quantile of sorted values interpolates linearly between the two nearest ranks;
    of no values it is None."""
    assert quantile(vals, q) == expected


def test_median_sorts_first() -> None:
    """The median of unsorted values is that of the sorted ones; of none, None."""
    assert median([3.0, 1.0, 2.0, 10.0]) == 2.5
    assert median([]) is None


def test_middle_is_the_median_a_reader_computes() -> None:
    """The middle value, or the plain mean of the two middle ones: for 0.1 and 0.7 that
    is (0.1 + 0.7) / 2, one bit below the 0.4 that interpolation gives."""
    assert middle([1.0, 2.0, 7.0]) == 2.0
    assert middle([0.1, 0.7]) == (0.1 + 0.7) / 2
    assert middle([0.1, 0.7]) != quantile([0.1, 0.7], 0.5)


def test_window_summary() -> None:
    """A window says its lines, steps, records, time span and median throughput and loss;
    the per-series medians appear only in a log of several series, sorted by series."""
    w = Window()
    w.first_line, w.last_line, w.first_step, w.last_step = 3, 6, 30.0, 60.0
    w.n, w.t_first, w.t_last = 4, 100.0, 130.0
    w.tok, w.loss = [10.0, 30.0, 20.0, 40.0], [2.0, 1.0]
    assert w.summary() == {
        "first_line": 3,
        "last_line": 6,
        "first_step": 30.0,
        "last_step": 60.0,
        "records": 4,
        "t_first": 100.0,
        "t_last": 130.0,
        "tok_s_median": 25.0,
        "loss_median": 1.5,
    }
    w.by_group = {"rank=1": [30.0, 40.0], "rank=0": [10.0]}
    by_group = w.summary()["tok_s_median_by_group"]
    assert list(by_group.items()) == [("rank=0", 10.0), ("rank=1", 35.0)]


def test_empty_window_has_no_medians() -> None:
    """A window without values has None medians, not zeros."""
    out = Window().summary()
    assert (out["records"], out["tok_s_median"], out["loss_median"]) == (0, None, None)


def test_top_keeps_the_largest_in_order_of_size_then_arrival() -> None:
    """Only the k largest items stay, largest first; equal keys keep their arrival
    order; the floor is what a new item must beat once k are kept."""
    top = Top(3)
    assert top.floor() == float("-inf")
    for key, name in [(5.0, "a"), (1.0, "b"), (7.0, "c"), (5.0, "d"), (2.0, "e")]:
        top.push(key, {"name": name})
    assert [d["name"] for d in top.items()] == ["c", "a", "d"]
    assert top.floor() == 5.0
    top.push(5.0, {"name": "f"})  # only a larger key displaces the smallest kept
    assert [d["name"] for d in top.items()] == ["c", "a", "d"]


def test_top_absorb_keeps_the_largest_of_both() -> None:
    """Absorbing another Top keeps the k largest of both, the other's items arriving in
    the order it saw them."""
    a, b = Top(3), Top(3)
    a.push(4.0, {"n": "a4"})
    a.push(1.0, {"n": "a1"})
    b.push(4.0, {"n": "b4"})
    b.push(9.0, {"n": "b9"})
    b.push(0.5, {"n": "b0"})
    a.absorb(b)
    assert [d["n"] for d in a.items()] == ["b9", "a4", "b4"]
