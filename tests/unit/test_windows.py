"""The numbers a WindowRatio claim is checked on: one per window that holds the series,
several series (devices side by side) summed at their latest numbers."""

from __future__ import annotations

from agent.model.windows import window_series, window_values

WINDOWS: list[object] = [
    {"first_step": 1, "last_step": 10, "a": 100.0, "b": 50.0},
    {"first_step": 11, "last_step": 20, "a": 110.0},  # b not logged here: its latest is 50
    {"first_step": 21, "last_step": 30, "a": 0, "b": -3},  # no usable number of its own
    "not a window",
    {"first_step": 31, "last_step": 40, "b": 60.0},
    {"first_step": 41, "last_step": 50, "a": float("inf"), "b": 10**400},
]


def test_one_series_is_each_windows_usable_number() -> None:
    """One path: the window's positive, finite number; zero, negative, infinite or huge
    values and windows that are not summaries are left out."""
    assert window_series(WINDOWS, [("a",)]) == [(0, 100.0, 1, 10), (1, 110.0, 11, 20)]


def test_several_series_sum_their_latest_numbers() -> None:
    """Devices side by side: a window counts once every series has had a number and it
    holds one of its own; a series it lacks adds its latest number (sums by hand:
    100+50, 110+50, 110+60)."""
    got = window_series(WINDOWS, [("a",), ("b",)])
    assert got == [(0, 150.0, 1, 10), (1, 160.0, 11, 20), (4, 170.0, 31, 40)]


def test_values_in_a_span_and_the_steps_they_cover() -> None:
    """A span picks windows by their place in the log (inclusive), and says which steps
    its numbers cover; an empty span covers none."""
    assert window_values(WINDOWS, [("a",), ("b",)], (1, 4)) == ([160.0, 170.0], (11, 40))
    assert window_values(WINDOWS, [("a",)], (2, 5)) == ([], (None, None))
    assert window_series("not a list", [("a",)]) == []
