"""How a fix's restarted run is measured when no judged series is known: the overall
median of its new train-log window, and how many records it rests on."""

from __future__ import annotations

from playbooks.measure import overall_median


def test_the_overall_median_and_its_record_count() -> None:
    """The summary's median tokens/s and record count; anything not a number is no
    figure (None, 0 records), never a guess."""
    assert overall_median({"throughput": {"median": 4300}, "records": 12}) == (4300.0, 12)
    assert overall_median({"throughput": {"median": 12.5}}) == (12.5, 0)
    assert overall_median({}) == (None, 0)
    assert overall_median({"throughput": {"median": "fast"}, "records": "3"}) == (None, 0)
