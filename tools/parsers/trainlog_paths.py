"""Where each figure the doctor reads or cites sits in a train-log summary (the trainlog
probe's fact, ``summarize_log``'s answer): one source for the summary's shape beside the
code that writes it. Claims cite these paths and the analysis reads through them, so a
key renamed in the summary is renamed here once; ``tests/unit/test_trainlog_paths.py``
resolves every one in a real summary."""

from __future__ import annotations

WINDOWS = ("windows",)  # the windowed medians, oldest first
GROUPS = ("groups",)  # each series' own summary, by its label

SPEED = ("speed",)  # the speed the trainer states or its records give
THROUGHPUT_RECENT = ("throughput", "recent_median")  # over every record's tokens/s
SPEED_UNIT = ("speed", "unit")
SPEED_FIELD = ("speed", "field")
SPEED_KIND = ("speed", "kind")
SPEED_RECENT = ("speed", "recent", "value")
SPEED_RECENT_RECORDS = ("speed", "recent", "records")
SPEED_EARLY = ("speed", "early", "value")
SPEED_WINDOWS = ("speed", "windows_with_speed")
SPEED_SEGMENTS = ("speed", "segments")
SPEED_SEGMENT_COUNT = ("speed", "segment_count")
SPEED_INTERVAL = ("speed", "median_interval_s")

STEPS_MAX = ("steps", "max")
STEPS_RESTARTS = ("steps", "restarts")
STEPS_RESTART_SAMPLES = ("steps", "restart_samples")

TIME_FIRST = ("time", "first")
TIME_LAST = ("time", "last")
TIME_INTERVAL = ("time", "median_interval_s")

CUT_LAST_LINE = ("cut_last_line",)  # the last line was cut mid-write (a JSON document)

LOSS = ("loss",)
LOSS_NONFINITE = ("loss", "nonfinite")
GRAD_NORM_FIRST_NONFINITE = ("grad_norm", "first_nonfinite")


def group(name: str, *field: str) -> tuple[str, ...]:
    """A field of one series' summary (``groups`` is keyed by the series' label,
    ``role=drafter,device=sim:0``): ``group(g, "throughput", "recent_median")``."""
    return ("groups", name, *field)


def aggregate(name: str, field: str) -> tuple[str, ...]:
    """A figure summed over series (``aggregates`` is keyed ``all`` or ``role=drafter``)."""
    return ("aggregates", name, field)
