"""tools/parsers/_bars.py reads tqdm's right-hand meter out of console blocks: the count,
the elapsed clock and the printed rate of every update, grouped into families (a bar's
description with digits blanked, whether it has a total, its unit), split into bars where
the count or the clock goes back, and reduced to windows of equal count whose speed is the
median of the printed rates.

Here ``Bars`` is fed hand-written meter text directly; the end-to-end reading of what the
real tqdm writes is held to the oracle in test_progress_bars.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.lib import oracle_bars
from tools.parsers import _bars
from tools.parsers._bars import Bars, clock_seconds, rate_value


def meter(n: int, clock: int, rate: str, *, total: int | None = None, desc: str = "") -> str:
    """One tqdm update as it is redrawn: ``\\r``, the left bar when there is a total, the
    meter; ``rate`` is the printed figure with its unit (``"3.00it/s"``, ``"?it/s"``)."""
    clock_text = f"{clock // 60:02d}:{clock % 60:02d}"
    if total is None:
        return f"\r{desc}{': ' if desc else ''}{n}it [{clock_text}, {rate}]"
    pct = 100 * n // total
    head = f"{desc}: " if desc else ""
    return f"\r{head}{pct:3d}%|##        | {n}/{total} [{clock_text}<00:10, {rate}]"


def fed(*chunks: str, first_line: int | None = 1) -> Bars:
    """A reader fed each chunk as one block (offsets continue from block to block)."""
    bars = Bars()
    offset = 0
    for chunk in chunks:
        data = chunk.encode()
        bars.feed(data, first_line, offset)
        offset += len(data)
    return bars


def only_family(bars: Bars) -> dict[str, Any]:
    result = bars.result()
    assert len(result["families"]) == 1
    family: dict[str, Any] = result["families"][0]
    return family


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("00:00", 0),
        ("00:12", 12),
        ("01:05", 65),
        ("59:59", 3599),
        ("1:00:00", 3600),
        ("12:34:56", 12 * 3600 + 34 * 60 + 56),
    ],
    ids=["zero", "seconds", "minutes", "last-before-hour", "one-hour", "hours"],
)
def test_clock_seconds_reads_tqdms_interval_back_to_whole_seconds(text: str, seconds: int) -> None:
    """``[H:]MM:SS`` as tqdm's ``format_interval`` writes it is read back to whole
    seconds, with or without the hours field."""
    assert clock_seconds(text) == seconds


@pytest.mark.parametrize(
    ("text", "value", "bound"),
    [
        (b"3.21", 3.21, 0.005),
        (b"12.00", 12.0, 0.005),
        (b"12", 12.0, 0.5),
        (b"1.5", 1.5, 0.05),
        (b"1.50k", 1500.0, 5.0),
        (b"2.3M", 2.3e6, 50_000.0),
        (b"7G", 7e9, 0.5e9),
    ],
    ids=["5.2f", "5.2f-whole", "integer", "one-decimal", "kilo", "mega", "giga-integer"],
)
def test_rate_value_is_the_figure_and_half_a_unit_of_its_last_digit(
    text: bytes, value: float, bound: float
) -> None:
    """A printed rate is its number (a k/M/G suffix scales it) and its rounding bound is
    half a unit of the last printed digit, scaled by the same suffix."""
    got_value, got_bound = rate_value(text)
    assert got_value == pytest.approx(value, rel=1e-12)
    assert got_bound == pytest.approx(bound, rel=1e-12)


def test_a_block_without_a_rate_unit_is_not_read() -> None:
    """Text with neither ``/s`` nor ``s/`` in it holds no meter: no family is made and
    none is chosen."""
    bars = fed("step 1 loss 4.2\nstep 2 loss 4.1 [00:01, 3]\n")
    assert bars.result()["families"] == []
    assert bars.result()["chosen"] is None


def test_one_update_is_read_with_its_count_clock_rate_line_and_offset() -> None:
    """The description (digits blanked), the total and the unit name the family; the last
    update carries its count, clock in seconds, rate, line number (lines before it in the
    block counted from ``first_line``) and the byte offset of its meter's ``[``."""
    text = "loading\nready\n" + meter(40, 72, "3.21it/s", total=100, desc="Epoch 3")
    bars = fed(text, first_line=10)
    family = only_family(bars)
    assert (family["desc"], family["total"], family["unit"]) == ("Epoch #", "100", "it/s")
    assert (family["updates"], family["with_rate"], family["bars"]) == (1, 1, 1)
    assert family["truncated"] is False
    assert family["last"] == {
        "n": 40,
        "elapsed_s": 72,
        "rate": 3.21,
        "line": 12,
        "offset": text.index("["),
    }
    assert family["bar_starts"] == [{"line": 12, "offset": text.index("["), "n": 40}]


def test_an_unknown_line_number_stays_unknown() -> None:
    """In a block whose first line number is unknown (the tail of a skipped log), updates
    have no line, but still have their offset."""
    text = "x\n" + meter(5, 1, "5.00it/s")
    family = only_family(fed(text, first_line=None))
    assert family["last"]["line"] is None
    assert family["last"]["offset"] == text.index("[")


def test_an_inverse_rate_is_per_second_with_its_bound_carried_through() -> None:
    """``2.50s/it`` is 0.4 per second; its bound 0.005 becomes 0.005 / (2.5 × 2.495), the
    widest the inverse can move; the unit is still named per second."""
    family = only_family(fed(meter(10, 25, "2.50s/it")))
    assert family["unit"] == "it/s"
    assert family["last"]["rate"] == pytest.approx(0.4, rel=1e-12)
    window = family["windows"][0]
    assert window["speed"] == pytest.approx(0.4, rel=1e-12)
    assert window["speed_error"] == pytest.approx(0.005 / (2.5 * 2.495), rel=1e-12)


def test_a_scaled_rate_and_a_scaled_count_are_read_as_numbers() -> None:
    """Under ``unit_scale`` the count and the rate carry a suffix: ``1.50k`` items at
    ``2.00kit/s`` is count 1500 at 2000 per second."""
    family = only_family(fed("\r1.50kit [00:01, 2.00kit/s]"))
    assert (family["last"]["n"], family["last"]["rate"]) == (1500, 2000.0)


@pytest.mark.parametrize(
    "rate",
    ["?it/s", "0.00it/s", "0.00s/it"],
    ids=["question-mark", "zero", "zero-inverse"],
)
def test_an_update_without_a_usable_rate_counts_but_has_no_speed(rate: str) -> None:
    """tqdm prints ``?`` before a bar's second update; a zero rate (or a zero inverse one)
    says nothing either. Such an update is counted in ``updates`` but not in
    ``with_rate``, and a family with only such updates is not chosen."""
    bars = fed(meter(0, 0, rate, total=10))
    family = only_family(bars)
    assert (family["updates"], family["with_rate"], family["bars"]) == (1, 0, 0)
    assert bars.result()["chosen"] is None


def test_a_redraw_of_the_same_update_after_a_message_is_one_update() -> None:
    """tqdm redraws its last update after ``tqdm.write``: the same count, clock and rate
    again are read once (``updates`` still counts what was printed)."""
    same = meter(4, 2, "2.00it/s", total=8)
    family = only_family(fed(same + "\nsaved checkpoint\n" + same))
    assert (family["updates"], family["with_rate"]) == (2, 1)


def test_a_count_or_clock_going_back_begins_a_new_bar() -> None:
    """The count going back (a new epoch) or the clock going back (a restart) starts a
    new bar, each of which opens a window of its own."""
    text = "".join(
        [
            meter(1, 1, "1.00it/s", total=9),
            meter(2, 2, "1.00it/s", total=9),
            meter(1, 1, "1.00it/s", total=9),  # the count went back
            meter(3, 0, "3.00it/s", total=9),  # the clock went back
        ]
    )
    family = only_family(fed(text))
    assert family["bars"] == 3
    assert [b["n"] for b in family["bar_starts"]] == [1, 1, 3]
    assert [(w["first_step"], w["last_step"], w["bar_start"]) for w in family["windows"]] == [
        (1, 2, True),
        (1, 1, True),
        (3, 3, True),
    ]


def test_a_redraw_right_after_a_new_bar_begins_is_kept() -> None:
    """An update equal to the last one with a rate, but the first with a rate after the
    count went back (a restart whose first update printed ``?``), starts a bar: it is
    kept, not taken for a redraw."""
    text = "".join(
        [
            meter(5, 5, "1.00it/s"),
            meter(1, 1, "?it/s"),
            meter(5, 5, "1.00it/s"),
        ]
    )
    family = only_family(fed(text))
    assert (family["updates"], family["with_rate"], family["bars"]) == (3, 2, 2)


def test_a_gap_in_the_scan_begins_a_new_bar_even_when_the_count_goes_on() -> None:
    """After ``gap()`` (the scan skipped the middle of the log) the next update starts a
    new bar although its count and clock went forward."""
    bars = Bars()
    bars.feed(meter(1, 1, "1.00it/s").encode(), 1, 0)
    bars.gap()
    bars.feed(meter(900, 900, "1.00it/s").encode(), None, 10_000)
    family = only_family(bars)
    assert family["bars"] == 2
    assert family["bar_starts"] == [
        {"line": 1, "offset": 1 + len("1it "), "n": 1},
        {"line": None, "offset": 10_000 + 1 + len("900it "), "n": 900},
    ]


def test_families_are_told_apart_by_description_total_and_unit() -> None:
    """``Epoch 0`` and ``Epoch 1`` are one family; a bar with no total, another
    description or another unit is a family of its own. The family with the most updates
    that print a rate is chosen and gets windows; the others only their counts."""
    text = "".join(
        [
            meter(1, 1, "1.00it/s", total=10, desc="Epoch 0"),
            meter(2, 2, "1.00it/s", total=10, desc="Epoch 0"),
            meter(1, 3, "1.00it/s", total=12, desc="Epoch 1"),
            meter(1, 1, "1.00it/s"),
            meter(1, 1, "1.00it/s", total=3, desc="Evaluating"),
            "\r  0%|          | 1/3 [00:01<00:10, 1.00ex/s]",
        ]
    )
    result = fed(text).result()
    families = result["families"]
    assert [(f["desc"], f["total"], f["unit"], f["with_rate"]) for f in families] == [
        ("Epoch #", "12", "it/s", 3),
        ("", None, "it/s", 1),
        ("Evaluating", "3", "it/s", 1),
        ("", "3", "ex/s", 1),
    ]
    assert result["chosen"] == 0
    assert "windows" in families[0]
    assert [("windows" in f) for f in families[1:]] == [False, False, False]


def test_families_past_the_limit_are_counted_as_overflow() -> None:
    """At most ``MAX_FAMILIES`` families are kept; the updates of any further one are
    only counted in ``overflow_updates``."""
    names = [f"bar {chr(ord('a') + i)}" for i in range(_bars.MAX_FAMILIES + 1)]
    text = "".join(meter(1, 1, "1.00it/s", total=5, desc=name) for name in names)
    text += meter(2, 2, "1.00it/s", total=5, desc=names[-1])
    result = fed(text).result()
    assert len(result["families"]) == _bars.MAX_FAMILIES
    assert result["overflow_updates"] == 2
    assert names[-1] not in [f["desc"] for f in result["families"]]


def test_windows_are_runs_of_equal_count_reduced_to_the_median_rate() -> None:
    """Twelve updates with a rate make windows of ``MIN_UPDATES`` (5, 5 and the last 2);
    each window's speed is the median of its printed rates, its bound the widest of
    theirs, and it cites its first and last update."""
    updates = [meter(n, n, f"{n:.2f}it/s") for n in range(1, 13)]
    text = "".join(updates)
    family = only_family(fed(text))
    starts = [text.index(u) + u.index("[") for u in updates]
    windows = family["windows"]
    assert [(w["first_step"], w["last_step"], w["updates"]) for w in windows] == [
        (1, 5, 5),
        (6, 10, 5),
        (11, 12, 2),
    ]
    assert [w["speed"] for w in windows] == [3.0, 8.0, 11.5]
    assert [w["speed_error"] for w in windows] == [0.005, 0.005, 0.005]
    assert [(w["first_offset"], w["last_offset"]) for w in windows] == [
        (starts[0], starts[4]),
        (starts[5], starts[9]),
        (starts[10], starts[11]),
    ]
    assert [(w["first_line"], w["last_line"]) for w in windows] == [(1, 1)] * 3
    assert [w["bar_start"] for w in windows] == [True, False, False]


def test_a_long_bar_is_cut_into_at_most_the_window_limit() -> None:
    """With more updates than ``WINDOWS`` × ``MIN_UPDATES`` a window holds
    ceil(count / ``WINDOWS``) of them: 300 updates are 43 windows of 7 (the last of 6)."""
    assert (_bars.WINDOWS, _bars.MIN_UPDATES) == (48, 5)
    text = "".join(meter(n, n, "2.00it/s") for n in range(1, 301))
    windows = only_family(fed(text))["windows"]
    assert len(windows) == 43
    assert {w["updates"] for w in windows[:-1]} == {7}
    assert windows[-1]["updates"] == 6
    assert (windows[-1]["first_step"], windows[-1]["last_step"]) == (295, 300)


def test_a_family_past_its_update_limit_is_marked_truncated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past ``MAX_UPDATES`` updates with a rate a family keeps the ones it has and says it
    was truncated; its ``updates`` still count every one printed."""
    monkeypatch.setattr(_bars, "MAX_UPDATES", 3)
    text = "".join(meter(n, n, "1.00it/s") for n in range(1, 6))
    family = only_family(fed(text))
    assert (family["updates"], family["with_rate"], family["truncated"]) == (5, 3, True)
    assert family["last"]["n"] == 3


def test_the_result_says_how_the_speed_was_read() -> None:
    """The result names its method: the median of tqdm's printed rates per window of
    equal count, on the bar with the most updates."""
    assert Bars().result() == {
        "how": (
            "the median of the rates tqdm printed on the bar's updates (its moving"
            " average), per window of equal count; the bar with the most updates"
        ),
        "families": [],
        "chosen": None,
        "overflow_updates": 0,
    }


# A training bar and an evaluation bar, neither with a total, in turn.
UNTOTALLED = "".join(
    [
        meter(5, 5, "1.00it/s", desc="Training"),
        meter(6, 6, "1.00it/s", desc="Training"),
        "\n",
        meter(1, 1, "3.00it/s", desc="Evaluating"),
        meter(2, 1, "3.00it/s", desc="Evaluating"),
        "\n",
        meter(7, 7, "1.00it/s", desc="Training"),
    ]
)


def test_a_bar_without_a_total_is_named_by_its_description() -> None:
    """Without a total tqdm prints ``{desc}: {n}{unit} [{elapsed}, {rate}]`` (no
    ``NN%|…|`` bar): the description before that ``: `` still names the family. So the
    training bar (5, 6 and 7 at 1 it/s) and the evaluation bar (1 and 2 at 3 it/s) are
    two families; the training bar, with more updates, is chosen, one bar in one window
    of speed 1.0, with no evaluation rate in it."""
    result = fed(UNTOTALLED).result()
    families = result["families"]
    assert [
        (f["desc"], f["total"], f["unit"], f["updates"], f["with_rate"], f["bars"])
        for f in families
    ] == [
        ("Training", None, "it/s", 3, 3, 1),
        ("Evaluating", None, "it/s", 2, 2, 1),
    ]
    assert result["chosen"] == 0
    assert [(w["first_step"], w["last_step"], w["speed"]) for w in families[0]["windows"]] == [
        (5, 7, 1.0)
    ]


def test_an_untotalled_description_has_its_digits_blanked() -> None:
    """``Epoch 1: 5it`` and ``Epoch 2: 9it`` are one family, ``Epoch #``, as with a total;
    a bar without a description keeps the empty name."""
    text = "".join(
        [
            meter(5, 5, "1.00it/s", desc="Epoch 1"),
            meter(9, 9, "1.00it/s", desc="Epoch 2"),
            meter(3, 3, "1.00it/s"),
        ]
    )
    families = fed(text).result()["families"]
    assert [(f["desc"], f["with_rate"]) for f in families] == [("Epoch #", 2), ("", 1)]


def test_the_oracle_names_untotalled_bars_by_their_description() -> None:
    """The independent oracle reads the same two families from the same console: the
    training bar (3 updates with a rate, one bar) and the evaluation bar (2, one bar)."""
    found = oracle_bars.families(oracle_bars.updates(UNTOTALLED.encode()))
    assert [(f.key, len(f.rated), f.starts) for f in found] == [
        (("Training", False, "it"), 3, [0]),
        (("Evaluating", False, "it"), 2, [0]),
    ]
