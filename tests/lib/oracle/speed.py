"""The speed figures of one train-log summary re-read from the raw log: the records, run
segments, windows, ``recent`` and ``early``, as the package's docstring specifies them."""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import re
import statistics
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from datetime import datetime
from itertools import groupby
from pathlib import Path
from typing import Any, NamedTuple

REL = 1e-9
# "Recent": the last quarter of a series' values, at least RECENT_MIN, at most RECENT_MAX.
RECENT_MIN, RECENT_MAX = 3, 50
RUN_SUMMARY_KEYS = ("train_loss", "train_runtime", "total_flos")
# A window may withhold a rate that is not positive, or one whose stated error bound is
# over this share of it.
MAX_REL_ERROR = 0.2


class Mismatch(NamedTuple):
    figure: str
    expected: Any
    got: Any
    where: str


class Point(NamedTuple):
    line: int
    step: float | None
    value: float | None
    total: float | None  # the count the clock runs against
    seconds: float | None
    segment: int


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _cell(text: str) -> Any:
    try:
        return json.loads(text)  # a number (or true, false, null), else the text itself
    except ValueError:
        return text


def _a_step(e: Any) -> bool:
    """A ``log_history`` entry that is a training step: one with a ``loss``, or neither
    the run's summary (``train_runtime``...) nor an evaluation (``eval_*`` keys)."""
    if not isinstance(e, dict):
        return False
    other = any(k in e for k in RUN_SUMMARY_KEYS) or any(str(k).startswith("eval_") for k in e)
    return "loss" in e or not other


# The two text shapes the parser documents (torchtune's DiskLogger, SpecForge's logger),
# after a ``logging`` time: ``MM/DD/YYYY HH:MM:SS`` or ``YYYY-MM-DD HH:MM:SS[,mmm]``.
_TIME = re.compile(
    r"(\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2}|\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})([.,]\d+)?"
)
_TORCHTUNE = re.compile(r"Step (\d+) \| (.*)")
_SPECFORGE = re.compile(r"Train - Step (\d+) \[[^\]]*\],\s*(.*)")


def _text_shape(text: str) -> dict[str, Any] | None:
    """A torchtune or SpecForge line as a record, with its logging time as ``time``."""
    rec: dict[str, Any] = {}
    stamp = _TIME.match(text)
    if stamp:
        form = "%m/%d/%Y %H:%M:%S" if "/" in stamp.group(1) else "%Y-%m-%d %H:%M:%S"
        when = datetime.strptime(stamp.group(1).replace("T", " "), form).timestamp()
        rec["time"] = when + float("0." + stamp.group(2)[1:]) if stamp.group(2) else when
    tune, forge = _TORCHTUNE.search(text), _SPECFORGE.search(text)
    if tune:
        rec["step"] = int(tune.group(1))
        for word in tune.group(2).split():
            name, _, value = word.partition(":")
            rec[name] = _num_text(value)
        return rec
    if forge:
        rec["step"] = int(forge.group(1))
        for part in forge.group(2).split(","):
            name, _, value = part.partition(":")
            rec[name.strip().lower()] = _num_text(value.strip())
        return rec
    return None


def _num_text(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def read_records(
    path: Path, fmt: str, size: int | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, record) in file order, of the file's first ``size`` bytes where given: the
    bytes the fact read (a live log grows after it)."""
    data = path.read_bytes()
    text = data[:size].decode(errors="replace") if size is not None else data.decode()
    if fmt == "trainer_state":
        history = json.loads(text)["log_history"]
        yield from ((place, e) for place, e in enumerate(history, 1) if _a_step(e))
        return
    with io.StringIO(text, newline="") as f:
        if fmt == "csv":
            rows = csv.reader(f)
            header = next(rows)
            for line, row in enumerate(rows, 2):
                if len(row) == len(header) and row != header:
                    yield line, {k: _cell(v) for k, v in zip(header, row) if v != ""}  # noqa: B905
            return
        for line, text in enumerate(f, 1):
            text = text.strip()
            if fmt == "text":
                shaped = _text_shape(text)
                if shaped is not None:
                    yield line, shaped
                    continue
            if fmt != "jsonl":  # a console's dict print, after any prefix
                text = text[text.find("{") :] if "{" in text else ""
            try:
                d = json.loads(text) if fmt == "jsonl" else ast.literal_eval(text)
            except (ValueError, SyntaxError):
                continue
            if isinstance(d, dict):
                yield line, d


def _tokens_per(name: str) -> float:
    """Tokens a unit of the rate ``name`` stands for: a thousand for ``ktok…``."""
    lower = name.lower()
    return 1000.0 if lower.startswith("ktok") or "/ktok" in lower else 1.0


def read_points(path: Path, summary: dict[str, Any]) -> list[Point]:
    sp = summary["speed"]
    kind, field, how = sp["kind"], sp["field"], sp["how"] or ""
    step_key = (summary.get("fields") or {}).get("step") or "step"
    scale = summary.get("throughput_scale") or 1.0
    renamed = [
        name
        for c in summary.get("schema_changes") or []
        if c.get("field") == "throughput"
        for name in (c["from"], c["to"])
    ]
    if renamed:  # the rate's unit is read from each name, not the last one's scale
        scale = _tokens_per(field)
    count_key = clock_key = ""
    if kind != "stated":  # "difference of RATE x CLOCK (or COUNT) over difference of CLOCK"
        m = re.fullmatch(r"difference of (.+?)(?: x .+)? over difference of (.+)", how)
        assert m, how
        count_key, clock_key = m.groups()
    points: list[Point] = []
    for line, rec in read_records(path, summary["format"], summary.get("size")):
        step = _num(rec.get(step_key))
        value = total = seconds = None
        if kind == "stated":
            # A log that changed its rate's name on the way (tok/s to ktok/s: the
            # summary's schema_changes) states the same speed in the new name's unit.
            name = next((n for n in [field, *renamed] if n in rec), field)
            value = _num(rec.get(name))
            unit = scale if name == field else _tokens_per(name)
            value = value * unit if value is not None and math.isfinite(value) else None
        else:
            seconds = _num(rec.get(clock_key))
            first = _num(rec.get(count_key))
            if seconds is None or first is None:
                continue  # no pair: no point
            total = first * seconds if kind == "stated_average" else first
            if not math.isfinite(total + seconds):  # a point still, but no counter
                total = seconds = None
        prev = points[-1] if points else None
        new = prev is not None and (
            (step is not None and prev.step is not None and step < prev.step)
            or (seconds is not None and prev.seconds is not None and seconds < prev.seconds)
            or (total is not None and prev.total is not None and total < prev.total)
        )
        segment = 0 if prev is None else prev.segment + new
        points.append(Point(line, step, value, total, seconds, segment))
    return points


def _median(vals: list[float]) -> float | None:
    return statistics.median(vals) if vals else None


def _rate(a: Point | None, b: Point | None) -> float | None:
    if a is None or b is None or a.segment != b.segment:
        return None
    if a.total is None or b.total is None or a.seconds is None or b.seconds is None:
        return None
    return (b.total - a.total) / (b.seconds - a.seconds) if b.seconds > a.seconds else None


def _segments(points: list[Point]) -> list[list[Point]]:
    return [list(seg) for _, seg in groupby(points, key=lambda p: p.segment)]


def _counter_ends(points: list[Point], lo: int, hi: int) -> tuple[Point | None, Point | None]:
    """A counter window's two points: its last point, and the first point of that
    point's segment from the point before the window on."""
    to = points[hi - 1] if hi > lo else None
    ours = [p for p in points[max(0, lo - 1) : hi] if to and p.segment == to.segment]
    return (ours[0] if ours else None), to


def _recent_points(points: list[Point]) -> list[Point]:
    """The last K points of the last segment (K: a quarter of them, within 3..50)."""
    segs = _segments(points)
    last = segs[-1] if segs else []
    return last[-min(len(last), max(RECENT_MIN, min(RECENT_MAX, len(last) // 4))) :]


def check(path: Path, summary: dict[str, Any]) -> list[Mismatch]:
    """Every speed figure of ``summary`` that the raw file at ``path`` does not give."""
    sp = summary["speed"]
    if sp["kind"] is None:  # no speed read: no figure may stand
        figures = [w.get("speed") for w in summary["windows"]] + [sp["recent"]]
        return [Mismatch("speed", None, v, "no speed kind") for v in figures if v is not None]
    if sp["kind"] not in ("stated", "stated_average", "derived"):
        return [Mismatch("speed.kind", "stated|stated_average|derived", sp["kind"], str(path))]
    points = read_points(path, summary)
    lines = [p.line for p in points]
    bad: list[Mismatch] = []

    def same(figure: str, expected: Any, got: Any, where: str) -> None:
        if isinstance(expected, list) or expected is None or got is None:
            ok = expected == got
        else:
            ok = abs(expected - got) <= REL * max(abs(expected), abs(got))
        if not ok:
            bad.append(Mismatch(figure, expected, got, where))

    def cited(figure: str, doc: dict[str, Any] | None, p: Point | None) -> None:
        """A cited point: the line the formula picks, and the count and clock it holds."""
        if p is None or doc is None:
            same(figure, None if p is None else p.line, doc, "a point to cite")
            return
        same(figure + ".line", [p.line], [doc.get("line")], f"line {p.line}")
        same(figure + ".count", p.total, doc.get("count"), f"line {p.line}")
        same(figure + ".seconds", p.seconds, doc.get("seconds"), f"line {p.line}")

    def one_segment(figure: str, a: dict[str, Any] | None, b: dict[str, Any] | None) -> None:
        """No step, clock or count going back, from a to b."""
        if a is None or b is None:
            return
        span = points[bisect_left(lines, a["line"]) : bisect_right(lines, b["line"])]
        if len({p.segment for p in span}) > 1:
            bad.append(Mismatch(figure, "one segment", "two", f"lines {a['line']}-{b['line']}"))

    segs = _segments(points)
    want = [[s[0].line, s[-1].line, len(s)] for s in segs][:64]
    got = [[s["first_line"], s["last_line"], s["records"]] for s in sp["segments"]]
    same("speed.segments", want, got, "[first line, last line, records] each")

    for i, w in enumerate(summary["windows"]):
        where = f"lines {w['first_line']}-{w['last_line']}"
        lo, hi = bisect_left(lines, w["first_line"]), bisect_right(lines, w["last_line"])
        inside = points[lo:hi]
        if sp["kind"] == "stated":
            exp = _median([p.value for p in inside if p.value is not None])
            same(f"windows[{i}].speed", exp, w.get("speed"), where)
            continue
        frm, to = _counter_ends(points, lo, hi)
        cited(f"windows[{i}].speed_from", w.get("speed_from"), frm)
        cited(f"windows[{i}].speed_to", w.get("speed_to"), to)
        one_segment(f"windows[{i}].speed_from..to", w.get("speed_from"), w.get("speed_to"))
        rate = _rate(frm, to)
        if w.get("speed") is not None or rate is None:
            same(f"windows[{i}].speed", rate, w.get("speed"), where)
        elif rate > 0 and not (w.get("speed_error") or 0) > MAX_REL_ERROR * rate:
            bad.append(Mismatch(f"windows[{i}].speed", rate, None, where + ", withheld"))

    recent = sp.get("recent") or {}
    pts = _recent_points(points)
    if sp["kind"] == "stated":
        exp = _median([p.value for p in pts if p.value is not None])
    else:
        exp = _rate(pts[0], pts[-1]) if pts else None
        cited("speed.recent.first", recent.get("first"), pts[0] if exp is not None else None)
        cited("speed.recent.last", recent.get("last"), pts[-1] if exp is not None else None)
        one_segment("speed.recent.first..last", recent.get("first"), recent.get("last"))
    same("speed.recent.value", exp, recent.get("value"), f"the last {len(pts)} points")
    if exp is not None:
        span_got = [recent.get("first_line"), recent.get("last_line"), recent.get("records")]
        span_want = [pts[0].line, pts[-1].line, len(pts)]
        same("speed.recent.span", span_want, span_got, "[first line, last line, records]")

    n = len(summary["windows"])
    span = min(n - 1, max(1, n // 4))
    early = sp["early"]
    same("speed.early.windows", [1, span] if span > 0 else None, early["windows"], f"{n} windows")
    speeds = [w.get("speed") for w in summary["windows"][1 : 1 + span]]
    exp = _median([v for v in speeds if v is not None])
    same("speed.early.value", exp, early["value"], f"median over windows 1-{span}")
    return bad


def check_groups(path: Path, summary: dict[str, Any]) -> list[Mismatch]:
    """A log split into series (``role``, ``device``, ``rank`` fields): each window's
    median per series over its lines, each series' recent median (its last
    ``recent_records`` values) and early median (the median of its window medians over
    windows 2 to 1+n/4), and each aggregate as the sum of its members'. Stated rates
    only (a derived one is per-record arithmetic this reader does not redo)."""
    keys = summary.get("group_fields") or []
    field = (summary.get("fields") or {}).get("throughput")
    if not keys or not field or summary["schema"].get("derived"):
        return []
    rows = list(read_records(path, summary["format"], summary.get("size")))
    series = _series(_group_rows(rows, summary))
    bad: list[Mismatch] = []

    def same(figure: str, expected: float | None, got: Any) -> None:
        if expected is None or got is None:
            ok = expected == got
        else:
            ok = abs(expected - got) <= REL * max(abs(expected), abs(got))
        if not ok:
            bad.append(Mismatch(figure, expected, got, str(path)))

    windows = summary["windows"]
    for i, w in enumerate(windows):
        for label, got in (w.get("tok_s_median_by_group") or {}).items():
            vals = [v for ln, v in series.get(label, []) if w["first_line"] <= ln <= w["last_line"]]
            same(f"windows[{i}].tok_s_median_by_group[{label}]", _median(vals), got)
    early = _early(windows)
    for label, group in (summary.get("groups") or {}).items():
        tp = group["throughput"]
        vals = [v for _, v in series.get(label, [])]
        k = tp.get("recent_records") or 0
        same(
            f"groups[{label}].recent_median",
            _median(vals[-k:]) if k else None,
            tp.get("recent_median"),
        )
        meds = [(w.get("tok_s_median_by_group") or {}).get(label) for w in early]
        same(
            f"groups[{label}].early_median",
            _median([m for m in meds if m is not None]),
            tp.get("early_median"),
        )
    for name, agg in (summary.get("aggregates") or {}).items():
        members = agg.get("groups") or []
        for stat in ("recent_median", "early_median"):
            parts = [(summary["groups"][g]["throughput"].get(stat)) for g in members]
            nums = [v for v in parts if isinstance(v, int | float)]
            same(f"aggregates[{name}].{stat}", sum(nums) if nums else None, agg.get(stat))
    return bad


def check_fact_value(value: Any) -> list[Mismatch]:
    """Every figure of one trainlog fact's value, recomputed from the log it names."""
    if not isinstance(value, dict) or "speed" not in value:
        return []
    path = Path(str((value.get("source") or {}).get("path", "")))
    if not path.is_file() or value["speed"]["kind"] == "derived_values":
        return []
    return check(path, value) + check_groups(path, value)


def check_report(report: dict[str, Any]) -> list[Mismatch]:
    """Every speed figure of every train-log fact a ``diagnose --json`` report lists,
    recomputed from the log file the fact names (its ``source.path``). A fact whose speed
    is per-step counts over step times (``derived_values``) is not recomputed here."""
    bad: list[Mismatch] = []
    for fact in report["facts"]:
        value = fact.get("value")
        # A baseline's fact describes the file as it was when the snapshot was taken.
        if fact["probe"] != "trainlog" or fact.get("baseline") or not isinstance(value, dict):
            continue
        source = value.get("source") or {}
        path = Path(str(source.get("path", "")))
        if "speed" not in value or not path.is_file():
            continue
        if value["speed"]["kind"] == "derived_values":
            continue
        found = check(path, value) + check_groups(path, value)
        bad += [m._replace(where=f"{fact['id']} {m.where}") for m in found]
    return bad


class Row(NamedTuple):
    line: int
    step: float | None
    value: float | None  # tokens/s in the summary's unit; None: no finite rate


def _step_key(summary: dict[str, Any]) -> str:
    return str((summary.get("fields") or {}).get("step") or "step")


def _group_rows(
    recs: list[tuple[int, dict[str, Any]]], summary: dict[str, Any]
) -> dict[str, list[Row]]:
    """Per series (``role=drafter,device=cpu:0``): each record holding every group field."""
    keys = summary.get("group_fields") or []
    field = (summary.get("fields") or {}).get("throughput")
    scale = summary.get("throughput_scale") or 1.0
    step_key = _step_key(summary)
    rows: dict[str, list[Row]] = {}
    for line, rec in recs:
        if not keys or not all(k in rec for k in keys):
            continue
        value = _num(rec.get(field)) if field else None
        rate = value * scale if value is not None and math.isfinite(value) else None
        label = ",".join(f"{k}={rec[k]}" for k in keys)
        rows.setdefault(label, []).append(Row(line, _num(rec.get(step_key)), rate))
    return rows


def _series(rows: dict[str, list[Row]]) -> dict[str, list[tuple[int, float]]]:
    return {g: [(r.line, r.value) for r in rs if r.value is not None] for g, rs in rows.items()}


def _early(windows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Windows 2 to 1+n/4 of the log's n (the first is warm-up)."""
    return windows[1 : 1 + max(1, len(windows) // 4)]
