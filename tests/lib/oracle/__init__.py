"""An independent re-reading of the speed figures a train-log summary cites: nothing
from ``tools`` or ``agent``; it reads the raw file itself and recomputes each figure from
the formulas the summary states, so it is their specification as much as a check.

- a record: a JSON object line, a CSV row, a text line's ``{...}`` literal, or a
  ``log_history`` entry that is a training step; its line: the 1-based line, or the
  entry's 1-based place in ``log_history``;
- a point: a record the speed reads: every record for ``stated`` (with its value, if
  any); for the counter kinds one holding both the count (``stated_average``: rate x
  runtime; ``derived``: the running total) and the clock;
- a run segment starts where the step, the clock or the count goes back (a repeated
  step is not a restart: loggers write several rows for one step);
- a window's ``stated`` figure is the median of its values; a counter figure the count
  difference over the clock difference, from the segment's last point before the window
  (else the first point of the window's last segment) to the window's last point;
- ``recent``: the last K points of the last segment (K: a quarter of them, within 3..50);
  ``early``: the median of the windows' figures over windows 2 to 1+n/4.

Figures recomputed from the same text are compared to a relative 1e-9: the arithmetic is
the same, so a larger difference is a different reading, not rounding. ``derived_values``
(per-step counts) is not recomputed here.

The outputs that show those figures are read in their own formats (json, xml.etree, re)
and held to the figures recomputed here (``figures``: the judged series, its recent and
early figures, its last step, its value per window):

- a health run (``check_health``, ``check_health_dir``): the JSON result, JUnit XML, the
  Prometheus textfile, the Markdown report and each SVG trend show the judged tokens/s,
  the baseline's, the threshold, the last step and its age, each to the digits it
  prints; the throughput verdict is "regressed" exactly when judged < ratio x baseline,
  and the statuses and the exit code follow from the checks. The facts come from the
  session's transcript, the logs from the paths they name;
- the HTML report's plot (``check_html``): each point's tokens/s and step, where it is
  drawn, each run's span and restart, each mark's step move or ratio.

Where an output shows a figure no raw log here gives (a checkpoint's record, a snapshot
whose log has changed since, earlier runs' figures in the history, the target's clock),
it is held to the figure the JSON result (or the fact) records instead.
"""

from __future__ import annotations

from tests.lib.oracle.figures import figures, transcript_sources
from tests.lib.oracle.health import check_health, check_health_dir, check_health_target
from tests.lib.oracle.html import check_html
from tests.lib.oracle.speed import Mismatch, check, check_fact_value, check_groups, check_report
from tests.lib.oracle.threads import check_thread_bars

__all__ = [
    "Mismatch",
    "check",
    "check_fact_value",
    "check_groups",
    "check_health",
    "check_health_dir",
    "check_health_target",
    "check_html",
    "check_report",
    "check_thread_bars",
    "figures",
    "transcript_sources",
]
