"""The HTML report's throughput plot held to the figures recomputed from the raw log."""

from __future__ import annotations

import re
import statistics
import xml.etree.ElementTree as ET
from bisect import bisect_right
from collections.abc import Callable, Mapping
from itertools import groupby, pairwise
from pathlib import Path
from typing import Any

from tests.lib.oracle.figures import _sum_latest, figures, subject_of, went_back
from tests.lib.oracle.health import _NUM, _SVG, _float, _same, _shown, rounds_to
from tests.lib.oracle.speed import Mismatch, _num, _segments, read_points

# -- the HTML report's throughput plot -----------------------------------------------------

_PLOT_POINT = re.compile(
    rf"^(?P<label>.*): step (?P<step>{_NUM}), (?P<value>{_NUM}) tok/s \[(?P<fact>F-[0-9a-f]+)\]$"
)
_SPAN = re.compile(rf"\((?:steps ({_NUM})–({_NUM})|step ({_NUM}))\)$")
_MOVE = re.compile(rf"({_NUM})→({_NUM}) at line ({_NUM})")
_CHANGE = re.compile(rf"^(?:fell|rose) to ({_NUM})× at step ({_NUM})$")

Scale = Callable[[float], tuple[float, float]]  # a value -> (where drawn, how far off it may be)


def _fact_plot(value: dict[str, Any]) -> list[tuple[int, float, float | None]]:
    """The judged series per window as a fact's own figures give it: for a fact whose
    log is not here (a recorded session's, a baseline's log since changed)."""
    windows = [w for w in value.get("windows") or [] if isinstance(w, dict)]
    groups = value.get("groups") or {}
    if groups:
        labels = subject_of(groups)
        by = [w.get("tok_s_median_by_group") or {} for w in windows]
        rows = [[_num(b.get(g)) for g in labels] for b in by]
    else:
        rows = [[_num(w.get("speed"))] for w in windows]
    drawn = _sum_latest(rows)
    return [
        (i, v, _num(w.get("first_step")))
        for i, (v, w) in enumerate(zip(drawn, windows, strict=True))
        if v is not None
    ]


def _drawn(path: Path | None, value: dict[str, Any]) -> list[tuple[int, float, float]]:
    """(window, tokens/s, first step) of each point the plot must draw for a fact."""
    found = figures(path, value) if path is not None else None
    plot = found.plot if found is not None else _fact_plot(value)
    return [(i, v, s) for i, v, s in plot if s is not None]


def _ticks(root: ET.Element, value_ticks: bool) -> list[tuple[float, float]]:
    """(coordinate, value) of each labelled tick: the value axis' lines (y) with their
    label, or the step axis' labels (x)."""
    kids = list(root)
    if value_ticks:
        pairs = pairwise(kids)
        return [
            (float(a.get("y1") or "nan"), float((b.text or "").replace(",", "")))
            for a, b in pairs
            if a.tag == f"{_SVG}line" and a.get("stroke") == "#eee" and b.tag == f"{_SVG}text"
        ]
    return [
        (float(k.get("x") or "nan"), float((k.text or "nan").replace(",", "")))
        for k in kids
        if k.tag == f"{_SVG}text" and k.get("text-anchor") == "middle" and not k.get("font-size")
    ]


def _scale(ticks: list[tuple[float, float]]) -> Scale | None:
    """Where a value is drawn, from the outermost ticks; None where they are too few or
    their labels are rounded (ticks a fraction apart, printed whole)."""
    ticks = sorted(ticks, key=lambda t: t[1])
    gaps = {round(b[1] - a[1], 9) for a, b in pairwise(ticks)}
    if len(ticks) < 2 or len(gaps) != 1 or 0 in gaps:
        return None
    (pa, va), (pb, vb) = ticks[0], ticks[-1]

    def at(v: float) -> tuple[float, float]:
        # Both ticks and the point are printed to 0.1: each may be 0.05 off.
        slack = 0.05 + 0.05 * (abs(v - va) + abs(v - vb)) / (vb - va) + 1e-6
        return pa + (pb - pa) * (v - va) / (vb - va), slack

    return at


def _placed(
    bad: list[Mismatch], figure: str, scale: Scale | None, value: float, got: str | None, where: str
) -> None:
    if scale is None:
        return
    want, slack = scale(value)
    drawn = _float(got)
    if drawn is None or not abs(drawn - want) <= slack:
        bad.append(Mismatch(figure, round(want, 2), drawn, where))


def check_html(
    page: str, sources: Mapping[str, tuple[Path | None, dict[str, Any]]]
) -> list[Mismatch]:
    """Every number the HTML report's throughput plot draws from a train log: each point's
    tokens/s and step (its tooltip, and where it stands on the axes' ticks), each run's
    span of steps and the restart line it follows, each restart mark's step move and
    line, each change mark's step and ratio. ``sources``: each train-log fact by id, with
    its raw log (None where this machine does not hold it as the fact read it: then the
    fact's own window figures are what the plot must show)."""
    start, end = page.find("<svg"), page.find("</svg>")
    if start < 0 or end < 0:
        return []
    root = ET.fromstring(page[start : end + len("</svg>")])
    xs, ys = _scale(_ticks(root, False)), _scale(_ticks(root, True))
    bad: list[Mismatch] = []
    drawn: dict[str, list[tuple[ET.Element, re.Match[str]]]] = {}
    for circle in root.findall(f"{_SVG}circle"):
        title = circle.findtext(f"{_SVG}title") or ""
        m = _PLOT_POINT.match(title)
        if m is None:
            bad.append(Mismatch("html:point", "step, tokens/s and fact", title, "plot"))
        else:
            drawn.setdefault(m["fact"], []).append((circle, m))
    plotted: dict[str, list[tuple[int, float, float]]] = {}
    for fact, points in drawn.items():
        if fact not in sources:
            bad.append(Mismatch("html:point", "a train-log fact given to the oracle", fact, "plot"))
            continue
        path, value = sources[fact]
        plotted[fact] = want = _drawn(path, value)
        where = f"plot of {fact}" + ("" if path else " (its own figures: its log is not here)")
        _same(bad, "html:points", len(want), len(points), where)
        for k, ((circle, m), (_, v, step)) in enumerate(zip(points, want, strict=False)):
            _shown(bad, f"html:point {k} step", m["step"], step, where)
            _shown(bad, f"html:point {k} tok/s", m["value"], v, where)
            _placed(bad, f"html:point {k} x", xs, step, circle.get("cx"), where)
            _placed(bad, f"html:point {k} y", ys, v, circle.get("cy"), where)
        bad += _runs(points, path, value, where)
    bad += _legend(root, drawn)
    bad += _marks(root, sources, plotted, xs)
    return bad


def _legend(
    root: ET.Element, drawn: dict[str, list[tuple[ET.Element, re.Match[str]]]]
) -> list[Mismatch]:
    """Each legend entry names a run its fact's points are drawn in (or counts the runs
    past the legend's length)."""
    bad: list[Mismatch] = []
    for g in root.findall(f"{_SVG}g[@class='legend-entry']"):
        text = "".join(g.itertext())
        m = re.match(r"^(.*), train log \[(F-[0-9a-f]+)\]$", text)
        runs = {p["label"] for _, p in drawn.get(m[2], [])} if m else set()
        if m is None or not (m[1] in runs or re.fullmatch(r".*: \d+ more runs", m[1])):
            bad.append(Mismatch("html:legend entry", sorted(runs), text, "plot"))
    return bad


def _runs(
    points: list[tuple[ET.Element, re.Match[str]]],
    path: Path | None,
    value: dict[str, Any],
    where: str,
) -> list[Mismatch]:
    """Each run's points share a label naming the steps it spans (its first point's to
    its last's) and, after a restart, the line the log's step went back at."""
    bad: list[Mismatch] = []
    back = went_back(path, value) if path is not None else None
    for label, run in groupby(points, key=lambda p: p[1]["label"]):
        steps = [m["step"] for _, m in run]
        span = f"step {steps[0]}" if steps[0] == steps[-1] else f"steps {steps[0]}–{steps[-1]}"
        _same(bad, f"html:run span ({label})", f"({span})", label[label.rfind("(") :], where)
        line = re.search(rf"after the restart at line ({_NUM})", label)
        if line and back is not None:
            _same(
                bad,
                f"html:run restart line ({label})",
                True,
                int(line[1].replace(",", "")) in back,
                where,
            )
    return bad


def _marks(
    root: ET.Element,
    sources: Mapping[str, tuple[Path | None, dict[str, Any]]],
    plotted: dict[str, list[tuple[int, float, float]]],
    xs: Scale | None,
) -> list[Mismatch]:
    """A restart mark: each step move it names is one the raw log makes at that line,
    and it stands at the step moved to. A change mark: at a point's step, and its ratio
    that of the medians of the windows before it and from it on (some run of each)."""
    bad: list[Mismatch] = []
    for g in root.findall(f"{_SVG}g"):
        kind = (g.get("class") or "").removeprefix("mark mark-")
        title, label = g.findtext(f"{_SVG}title") or "", g.findtext(f"{_SVG}text") or ""
        facts = re.findall(r"\[(F-[0-9a-f]+)\]", title)
        line = g.find(f"{_SVG}line")
        x = line.get("x1") if line is not None else None
        fact = next((f for f in facts if f in plotted), None)
        where = f"{kind} mark {label!r} of {fact}"
        if kind == "restart" and fact is not None:
            path, value = sources[fact]
            back = went_back(path, value) if path is not None else None
            for frm, to, at in _MOVE.findall(title):
                move = (float(frm.replace(",", "")), float(to.replace(",", "")))
                if back is not None:
                    _same(
                        bad,
                        f"html:restart at line {at}",
                        back.get(int(at.replace(",", ""))),
                        move,
                        where,
                    )
                _placed(bad, "html:restart mark x", xs, move[1], x, where)
        elif kind == "change" and fact is not None:
            bad += _change(label, plotted[fact], sources[fact], xs, x, where)
    return bad


def _change(
    label: str,
    points: list[tuple[int, float, float]],
    source: tuple[Path | None, dict[str, Any]],
    xs: Scale | None,
    x: str | None,
    where: str,
) -> list[Mismatch]:
    m = _CHANGE.match(label)
    if m is None:
        return [Mismatch("html:change mark", "a ratio at a step", label, where)]
    skip = _starts(source)
    kept = [(i, v, s) for i, v, s in points if i not in skip]
    at = next((k for k, (_, _, s) in enumerate(kept) if rounds_to(m[2], s)), None)
    if at is None:
        return [Mismatch("html:change mark step", "a drawn point's step", m[2], where)]
    bad: list[Mismatch] = []
    _placed(bad, "html:change mark x", xs, kept[at][2], x, where)
    values = [v for _, v, _ in kept]
    before = [statistics.median(values[a:at]) for a in range(at)]
    after = [statistics.median(values[at:b]) for b in range(at + 1, len(values) + 1)]
    if not any(rounds_to(m[1], r / b) for b in before for r in after):
        bad.append(
            Mismatch("html:change mark ratio", "a ratio of medians around the step", m[1], where)
        )
    return bad


def _starts(source: tuple[Path | None, dict[str, Any]]) -> set[int]:
    """Windows a change is not weighed on: the first, and the one holding each start (a
    line where the log's step went back; for a counter rate, where a run segment of its
    counters begins) and the next (only the one holding it, for a counter rate, which
    never spans a start)."""
    path, value = source
    if path is None:
        return {0}
    counter = (value.get("speed") or {}).get("kind") in ("stated_average", "derived")
    starts = list(went_back(path, value))
    if counter:
        starts += [seg[0].line for seg in _segments(read_points(path, value))[1:]]
    firsts = [w["first_line"] for w in value["windows"]]
    skip = {0}
    for line in starts:
        holding = bisect_right(firsts, line) - 1
        skip |= {holding} if counter else {holding, holding + 1}
    return skip
