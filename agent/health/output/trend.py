"""Throughput trends: a unicode sparkline for Markdown and terminals, and a small SVG
line chart (written beside the Markdown report with ``--out``, linked from it).

Both are drawn from the history's tokens/s values only, each run's judged figure; a run
without a value (the target could not be checked, or its log had no throughput) is a gap,
never a zero. The chart also draws the figures tonight's verdict followed from: the
baseline's tokens/s and the line below which the run regressed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from agent.health.model import THROUGHPUT_CHECK, TrendPoint, figure

BARS = "▁▂▃▄▅▆▇█"
GAP = "·"


def sparkline(values: Sequence[float | None]) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return ""
    low, high = min(known), max(known)
    span = high - low
    out = []
    for v in values:
        if v is None:
            out.append(GAP)
        elif span == 0:
            out.append(BARS[len(BARS) // 2])
        else:
            out.append(BARS[round((v - low) / span * (len(BARS) - 1))])
    return "".join(out)


_W, _H, _PAD = 480, 120, 28


@dataclass(frozen=True)
class _Scale:
    """Where a run's tokens/s lands: the runs across, from 0 up to ``high``."""

    step: float  # between two runs
    high: float

    def xy(self, i: int, v: float) -> tuple[float, float]:
        return _PAD + i * self.step, _H - _PAD - (v / self.high) * (_H - 2 * _PAD)


def svg(
    points: Sequence[TrendPoint],
    title: str,
    baseline: float | None = None,
    *,
    which: str = "",
    ratio: float | None = None,
) -> str:
    """A line chart of tokens/s per run: gaps break the line, each point is coloured by
    its run's verdict (red: the throughput regressed; orange: another check failed), the
    baseline's tokens/s (``which`` says whose) is a dashed line and, with ``ratio``, the
    figure below which the run regressed a dotted one."""
    values = [p.tokens_per_s for p in points]
    known = [v for v in values if v is not None]
    high = max([*known, baseline or 0.0]) if known or baseline else 1.0
    scale = _Scale(step=(_W - 2 * _PAD) / max(len(points) - 1, 1), high=high if high > 0 else 1.0)
    caption = _caption(title, values, baseline, ratio)
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
            f'viewBox="0 0 {_W} {_H}" role="img" aria-label={quoteattr(caption)}>',
            f"<title>{escape(caption)}</title>",
            f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}" '
            'stroke="#a0aec0"/>',
            f'<text x="{_PAD}" y="16" font-family="sans-serif" font-size="12">'
            f"{escape(caption)}</text>",
            f'<text x="{_PAD}" y="{_H - 8}" font-family="sans-serif" font-size="10" '
            f'fill="#4a5568">0 … {scale.high:,.0f} tok/s</text>',
            *_guides(scale, baseline, which, ratio),
            *_polylines(scale, values),
            *_dots(scale, points),
            "</svg>",
            "",
        ]
    )


def _caption(
    title: str, values: Sequence[float | None], baseline: float | None, ratio: float | None
) -> str:
    last = next((v for v in reversed(values) if v is not None), None)
    caption = title
    if last is not None:
        caption = f"{title}: {figure(last)} tok/s (latest of {len(values)} runs)"
    if baseline is not None:
        caption += f", baseline {figure(baseline)}"
        if ratio is not None:
            caption += f", regressed below {figure(baseline * ratio)}"
    return caption


def _guides(scale: _Scale, baseline: float | None, which: str, ratio: float | None) -> list[str]:
    """The baseline's tokens/s, dashed, and with ``ratio`` the regression line, dotted."""
    if baseline is None:
        return []
    whose = f" ({which})" if which else ""
    guides = [(baseline, "4 3", f"baseline: {figure(baseline)} tok/s{whose}")]
    if ratio is not None:
        below = f"regressed below: {figure(baseline * ratio)} tok/s ({ratio:g}× the baseline's)"
        guides.append((baseline * ratio, "1 3", below))
    out = []
    for value, dashes, text in guides:
        _, y = scale.xy(0, value)
        out.append(
            f'<line x1="{_PAD}" y1="{y:.1f}" x2="{_W - _PAD}" y2="{y:.1f}" stroke="#718096" '
            f'stroke-dasharray="{dashes}"><title>{escape(text)}</title></line>'
        )
    return out


def _polylines(scale: _Scale, values: Sequence[float | None]) -> list[str]:
    """The line through the runs' tokens/s, broken where a run has none."""
    segments: list[list[tuple[float, float]]] = [[]]
    for i, v in enumerate(values):
        if v is None:
            segments.append([])
        else:
            segments[-1].append(scale.xy(i, v))
    return [
        f'<polyline fill="none" stroke="#2b6cb0" stroke-width="2" points="{_pts(seg)}"/>'
        for seg in segments
        if seg
    ]


def _dots(scale: _Scale, points: Sequence[TrendPoint]) -> list[str]:
    """A point per run with a value, coloured by its verdict, its tooltip the run's."""
    marks = []
    for i, p in enumerate(points):
        if p.tokens_per_s is None:
            continue
        x, y = scale.xy(i, p.tokens_per_s)
        if THROUGHPUT_CHECK in p.regressions:
            colour = "#c53030"
        else:
            colour = {"healthy": "#2f855a", "regressed": "#dd6b20"}.get(p.status, "#718096")
        failed = f": {', '.join(p.regressions)}" if p.regressions else ""
        label = f"{p.at:%Y-%m-%d %H:%M} UTC: {figure(p.tokens_per_s)} tok/s ({p.status}{failed})"
        marks.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}">'
            f"<title>{escape(label)}</title></circle>"
        )
    return marks


def _pts(seg: list[tuple[float, float]]) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in seg)
