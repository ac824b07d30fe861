"""A health run's outputs (the JSON result, JUnit XML, the Prometheus textfile, the
Markdown report, each SVG trend) held to the figures recomputed from the raw log."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from tests.lib.oracle.figures import Figures, log_figures, transcript_facts
from tests.lib.oracle.speed import REL, Mismatch, _num

# -- comparing: exactly, or within the rounding of how an output prints -------------------

_NUM = r"-?[\d,]*\.?\d+(?:e[+-]?\d+)?"


def _same(bad: list[Mismatch], figure: str, expected: Any, got: Any, where: str) -> None:
    both = [v for v in (expected, got) if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(both) == 2:
        ok = abs(expected - got) <= REL * max(abs(expected), abs(got))
    else:
        ok = expected == got
    if not ok:
        bad.append(Mismatch(figure, expected, got, where))


def rounds_to(printed: str, value: float) -> bool:
    """``printed`` is ``value`` written to the digits it shows: 2,000 is 1,999.6 to 2,000.4;
    0.67 is 0.665 to 0.675; 1.235e-05 holds four significant digits."""
    text = printed.replace(",", "").lower()
    try:
        shown = float(text)
    except ValueError:
        return False
    mantissa, _, exponent = text.partition("e")
    unit = 10.0 ** (int(exponent or 0) - len(mantissa.partition(".")[2]))
    return abs(shown - value) <= unit / 2 * (1 + 1e-9) + REL * abs(value)


def _shown(
    bad: list[Mismatch], figure: str, printed: str | None, expected: float | None, where: str
) -> None:
    """A figure as an output prints it; None on either side only where both are."""
    if printed is None and expected is None:
        return
    if printed is None or expected is None or not rounds_to(printed, expected):
        bad.append(Mismatch(figure, expected, printed, where))


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


# -- a health run: its JSON result, JUnit, Prometheus, Markdown and SVG trends ----------

# A figure of a target's, as the JSON result's metrics and JUnit's properties name it, and
# the Prometheus gauge that carries it.
HEALTH_GAUGES = {
    "tokens_per_s": "dflash_doctor_tokens_per_second",
    "baseline_tokens_per_s": "dflash_doctor_baseline_tokens_per_second",
    "regressed_below_tokens_per_s": "dflash_doctor_regressed_below_tokens_per_second",
    "last_step": "dflash_doctor_last_step",
    "last_step_age_s": "dflash_doctor_last_step_age_seconds",
}
STATUSES = ("healthy", "regressed", "could_not_check")
THROUGHPUT = "throughput"  # the check that judges tokens/s against the baseline's


class Expected(NamedTuple):
    """What every output of one target must show: its figures (recomputed from the raw
    log where the log holds them, else the JSON result's), the throughput verdict they
    give, the status the checks give, and the run's trend."""

    target: str
    figures: dict[str, float]
    labels: dict[str, str]  # a metric's label, as Markdown's section prints it
    ratio: float | None  # the rule's, when the throughput was judged
    throughput: str | None  # "failed" or "passed", when it was judged
    title: str  # the throughput check's title
    status: str
    failed: list[str]
    which: str  # "derived", or the snapshot's name
    trend: list[dict[str, Any]]


_VERDICT = re.compile(
    rf"(?P<now>{_NUM}) is (?P<times>{_NUM})× the baseline's (?P<then>{_NUM}): "
    rf"(?P<verdict>regressed|not regressed) \(regressed below (?P<ratio>{_NUM})× the "
    rf"baseline's, (?P<below>{_NUM});"
)


def _verdict_words(bad: list[Mismatch], output: str, text: str, exp: Expected, where: str) -> None:
    """The throughput check's sentence: the two figures, their ratio, the rule's ratio,
    the threshold, and "regressed" exactly when the check failed."""
    figure = f"{output}:throughput message"
    m = _VERDICT.search(text)
    if m is None:
        bad.append(Mismatch(figure, "the judged figures and the verdict", text, where))
        return
    f = exp.figures
    now, then = f["tokens_per_s"], f["baseline_tokens_per_s"]
    _shown(bad, f"{figure}: tokens/s", m["now"], now, where)
    _shown(bad, f"{figure}: × the baseline's", m["times"], now / then if then else None, where)
    _shown(bad, f"{figure}: baseline tokens/s", m["then"], then, where)
    _shown(bad, f"{figure}: ratio", m["ratio"], exp.ratio, where)
    _shown(bad, f"{figure}: regressed below", m["below"], f["regressed_below_tokens_per_s"], where)
    said = "regressed" if exp.throughput == "failed" else "not regressed"
    _same(bad, f"{figure}: verdict", said, m["verdict"], where)


def _age_of(
    facts: dict[str, dict[str, Any]], metric: dict[str, Any] | None, now: Figures
) -> float | None:
    """Seconds from the log's last record to the target's clock: the host fact's ``now``
    (the clock is no part of the log) less the log's last time."""
    host = facts.get(((metric or {}).get("cites") or [""])[0])
    clock = _num((host or {}).get("value", {}).get("now")) if host else None
    if clock is None or now.last_time is None:
        return None
    return round(clock - now.last_time, 3)


def _baseline_of(
    judged: dict[str, Any], facts: dict[str, dict[str, Any]], now: Figures | None
) -> float | None:
    """The baseline's tokens/s, recomputed where a raw log holds it: the present log's
    early window (a derived baseline), or a snapshot's log still as it was. A checkpoint's
    record or a changed log is no raw log here: None (the JSON result's figure stands)."""
    if judged["baseline_fact"] == judged["value_fact"]:
        return now.early if now else None
    then = log_figures(facts.get(judged["baseline_fact"]), now.subject if now else None)
    return then.recent if then else None


def _judged_checks(
    bad: list[Mismatch],
    judged: dict[str, Any],
    want: dict[str, float],
    now: Figures | None,
    ratio: float | None,
    where: str,
) -> str:
    """The judged figures against the recomputed ones; returns the verdict they give."""
    _same(bad, "json:judged.value", want["tokens_per_s"], judged["value"], where)
    _same(bad, "json:judged.baseline", want["baseline_tokens_per_s"], judged["baseline"], where)
    if ratio is not None:
        _same(bad, "json:judged.ratio", ratio, judged["ratio"], where)
    label = str(judged.get("label") or "")
    records, series = (
        re.search(r"the last (\d+) records", label),
        re.search(r"of (\d+) series", label),
    )
    if records and now is not None and now.records is not None:
        _same(bad, "json:judged.label: records", now.records, int(records[1]), where)
    if series and now is not None:
        _same(bad, "json:judged.label: series", len(now.subject), int(series[1]), where)
    regressed = want["tokens_per_s"] < want["regressed_below_tokens_per_s"]
    return "failed" if regressed else "passed"


def _wanted(
    t: dict[str, Any], facts: dict[str, dict[str, Any]], now: Figures | None
) -> dict[str, float]:
    """The figures a target's outputs must show, the baseline's and the threshold aside:
    recomputed from the raw log where it gives them; a figure no raw log gives (the
    history's, a fact's whose log is not here) is the JSON result's own."""
    metrics: dict[str, Any] = t.get("metrics") or {}
    want = {key: float(m["value"]) for key, m in metrics.items()}
    if t.get("judged"):
        want["tokens_per_s"] = t["judged"]["value"]
    if now is not None:
        recomputed = {
            "tokens_per_s": now.recent,
            "last_step": now.last_step,
            "last_step_age_s": _age_of(facts, metrics.get("last_step_age_s"), now),
        }
        want |= {k: v for k, v in recomputed.items() if v is not None}
    return want


def _status_of(checks: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """The status the checks give (``RULE``: regressed when one failed), and the failed."""
    failed = [c["name"] for c in checks if c["status"] == "failed"]
    errors = [c["name"] for c in checks if c["status"] == "error"]
    return "regressed" if failed else "could_not_check" if errors else "healthy", failed


def _this_run(
    bad: list[Mismatch], t: dict[str, Any], want: dict[str, float], where: str
) -> list[dict[str, Any]]:
    """The trend, its last point (this run's) held to this run's figure and status, and
    given the recomputed figure for the chart's checks; earlier points are the history's."""
    trend = list(t.get("trend") or [])
    if trend:
        last = trend[-1].get("tokens_per_s")
        _same(bad, "json:trend[-1].tokens_per_s", want.get("tokens_per_s"), last, where)
        _same(bad, "json:trend[-1].status", t["status"], trend[-1].get("status"), where)
        if last is not None and "tokens_per_s" in want:
            trend[-1] = {**trend[-1], "tokens_per_s": want["tokens_per_s"]}
    return trend


def _health_target(t: dict[str, Any], ratio: float | None) -> tuple[Expected, list[Mismatch]]:
    """One target of a health JSON result against its raw log (read through the facts
    its session's transcript recorded), and the figures every other output must show."""
    where = f"target {t['target']!r}"
    bad: list[Mismatch] = []
    transcript = Path(str(t.get("transcript") or ""))
    facts = transcript_facts(transcript) if t.get("transcript") and transcript.is_file() else {}
    metrics: dict[str, Any] = t.get("metrics") or {}
    judged = t.get("judged")
    cites = (metrics.get("tokens_per_s") or metrics.get("last_step") or {}).get("cites") or [""]
    now = log_figures(facts.get(judged["value_fact"] if judged else cites[0]))
    want = _wanted(t, facts, now)
    throughput = None
    if judged:
        base = _baseline_of(judged, facts, now)
        want["baseline_tokens_per_s"] = judged["baseline"] if base is None else base
        want["regressed_below_tokens_per_s"] = want["baseline_tokens_per_s"] * judged["ratio"]
        throughput = _judged_checks(bad, judged, want, now, ratio, where)
    for key, m in metrics.items():
        _same(bad, f"json:metrics.{key}", want.get(key), m["value"], where)
    for key in ("tokens_per_s", "last_step"):
        if key in want and key not in metrics:
            bad.append(Mismatch(f"json:metrics.{key}", want[key], None, where))
    named = {c["name"]: c for c in t.get("checks") or []}
    shown = (named.get(THROUGHPUT) or {}).get("status")
    if throughput is None and shown in ("passed", "failed"):
        bad.append(Mismatch(f"json:checks.{THROUGHPUT}.status", "not judged", shown, where))
    status, failed = _status_of(t.get("checks") or [])
    _same(bad, "json:status", status, t["status"], where)
    exp = Expected(
        target=str(t["target"]),
        figures=want,
        labels={key: str(m.get("label")) for key, m in metrics.items()},
        ratio=judged["ratio"] if judged else None,
        throughput=throughput,
        title=str((named.get(THROUGHPUT) or {}).get("title") or ""),
        status=status,
        failed=failed,
        which=str(t["baseline"]) if t.get("baseline") is not None else "derived",
        trend=_this_run(bad, t, want, where),
    )
    if throughput is not None:
        _same(bad, f"json:checks.{THROUGHPUT}.status", throughput, shown, where)
        _verdict_words(bad, "json", str(named[THROUGHPUT].get("message") or ""), exp, where)
    return exp, bad


def check_health_target(target: dict[str, Any], ratio: float | None = None) -> list[Mismatch]:
    """One target's result (a ``TargetResult`` as JSON) against its raw log."""
    return _health_target(target, ratio)[1]


def _rule_ratio(rule: str) -> float | None:
    m = re.search(rf"below ({_NUM})× the baseline's", rule)
    return float(m[1]) if m else None


def _exit_code(statuses: list[str]) -> int:
    """1 when a target regressed, else 2 when one could not be checked (or none was
    given), else 0."""
    if "regressed" in statuses:
        return 1
    return 2 if "could_not_check" in statuses or not statuses else 0


def check_health(
    doc: dict[str, Any],
    *,
    junit: str | None = None,
    prom: str | None = None,
    md: str | None = None,
    svgs: Mapping[str, str] | None = None,
) -> list[Mismatch]:
    """Every figure of a health run's JSON document (``doc``) recomputed from the raw
    logs its targets were judged on, the verdicts held to the rule on those figures, and
    each other output given (JUnit XML, the Prometheus textfile, the Markdown report,
    each target's SVG trend by target) held to the same figures."""
    ratio = _rule_ratio(str(doc.get("rule") or ""))
    bad: list[Mismatch] = []
    if ratio is None:
        bad.append(
            Mismatch("json:rule", "a ratio below which a target regressed", doc.get("rule"), "run")
        )
    exps = []
    for t in doc["targets"]:
        exp, found = _health_target(t, ratio)
        exps.append(exp)
        bad += found
    code = _exit_code([e.status for e in exps])
    _same(bad, "json:exit_code", code, doc.get("exit_code"), "run")
    if junit is not None:
        bad += _health_junit(junit, exps)
    if prom is not None:
        bad += _health_prom(prom, exps, code, ratio)
    if md is not None:
        bad += _health_md(md, exps, code, ratio)
    for exp in exps:
        if svgs and exp.target in svgs:
            bad += _health_svg(svgs[exp.target], exp)
    return bad


def check_health_dir(out: Path, files: Mapping[Any, str]) -> list[Mismatch]:
    """``check_health`` on what ``health --out`` wrote: ``files`` names each format's file
    (``json``, ``junit``, ``md``, ``prom``); each target's SVG trend is found by the link
    the Markdown report gives to it."""

    def read(fmt: str) -> str | None:
        path = out / files[fmt] if fmt in files else None
        return path.read_text(encoding="utf-8") if path is not None and path.is_file() else None

    doc = json.loads(read("json") or "null")
    md = read("md")
    links = re.findall(r"^!\[tokens/s trend of (.+?)\]\((.+?)\)$", md or "", re.M)
    svgs = {target: (out / name).read_text(encoding="utf-8") for target, name in links}
    return check_health(doc, junit=read("junit"), prom=read("prom"), md=md, svgs=svgs)


def _health_junit(text: str, exps: list[Expected]) -> list[Mismatch]:
    """Each target's suite: its properties carry the figures and the status; its
    ``throughput`` case fails exactly when the throughput regressed, and says so in words."""
    bad: list[Mismatch] = []
    suites = {s.get("name"): s for s in ET.fromstring(text).iter("testsuite")}
    for exp in exps:
        where = f"target {exp.target!r}"
        suite = suites.get(exp.target)
        if suite is None:
            bad.append(Mismatch("junit:testsuite", exp.target, None, where))
            continue
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        for key in HEALTH_GAUGES:
            _same(bad, f"junit:{key}", exp.figures.get(key), _float(props.get(key)), where)
        _same(bad, "junit:status", exp.status, props.get("status"), where)
        _same(bad, "junit:baseline", exp.which, props.get("baseline"), where)
        _same(bad, "junit:failures", str(len(exp.failed)), suite.get("failures"), where)
        cases = {c.get("name"): c for c in suite.iter("testcase")}
        failed = [name for name, c in cases.items() if c.find("failure") is not None]
        _same(bad, "junit:failed testcases", exp.failed, failed, where)
        failure = cases[THROUGHPUT].find("failure") if THROUGHPUT in cases else None
        if exp.throughput == "failed" and failure is not None:
            _verdict_words(bad, "junit", failure.get("message") or "", exp, where)
    return bad


_SAMPLE = re.compile(r"^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def prom_samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """A Prometheus text file's samples: (name, labels) -> value."""
    out: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    unescape = {"\\\\": "\\", "\\n": "\n", '\\"': '"'}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m is None or line.startswith("#"):
            continue
        labels = frozenset(
            (k, re.sub(r'\\[\\n"]', lambda e: unescape[e[0]], v))
            for k, v in _LABEL.findall(m[2] or "")
        )
        out[(m[1], labels)] = float(m[3])
    return out


def _health_prom(text: str, exps: list[Expected], code: int, ratio: float | None) -> list[Mismatch]:
    """Each target's gauges: the figures, the throughput and target regression flags and
    the status; the run's ratio and exit code."""
    bad: list[Mismatch] = []
    samples = prom_samples(text)

    def gauge(name: str, **labels: str) -> float | None:
        return samples.get((name, frozenset(labels.items())))

    _same(
        bad,
        "prom:dflash_doctor_health_regression_ratio",
        ratio,
        gauge("dflash_doctor_health_regression_ratio"),
        "run",
    )
    _same(
        bad,
        "prom:dflash_doctor_health_exit_code",
        code,
        gauge("dflash_doctor_health_exit_code"),
        "run",
    )
    for exp in exps:
        where, target = f"target {exp.target!r}", exp.target
        for key, name in HEALTH_GAUGES.items():
            _same(bad, f"prom:{name}", exp.figures.get(key), gauge(name, target=target), where)
        flag = None if exp.throughput is None else float(exp.throughput == "failed")
        name = "dflash_doctor_health_throughput_regression"
        _same(bad, f"prom:{name}", flag, gauge(name, target=target), where)
        name = "dflash_doctor_health_regression"
        _same(
            bad, f"prom:{name}", float(exp.status == "regressed"), gauge(name, target=target), where
        )
        for status in STATUSES:
            got = gauge("dflash_doctor_health_status", target=target, status=status)
            _same(
                bad,
                f"prom:dflash_doctor_health_status{{status={status}}}",
                float(exp.status == status),
                got,
                where,
            )
    return bad


def _md_cells(line: str) -> list[str]:
    """A Markdown table row's cells, their escaped pipes unescaped."""
    inner = line.strip().removeprefix("|").removesuffix("|")
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def _md_figure(cell: str | None) -> str | None:
    """The figure a cell prints before its citations ("2,000 [F-1a2b] (derived)")."""
    return cell.split(" [")[0] if cell is not None and " [" in cell else None


_AGE_UNITS = {"d": 86400.0, "h": 3600.0, "min": 60.0, "s": 1.0}


def _md_age(
    bad: list[Mismatch], figure: str, cell: str | None, seconds: float | None, where: str
) -> None:
    m = re.match(rf"({_NUM}) (d|h|min|s) \[", cell or "")
    if m is None:
        _shown(bad, figure, None, seconds, where)
    else:
        _shown(bad, figure, m[1], None if seconds is None else seconds / _AGE_UNITS[m[2]], where)


def _md_sections(text: str) -> dict[str, list[str]]:
    """Each target's section (``## `target` — status``), by target, as lines."""
    out: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        m = re.match(r"^## `(.+)` — ", line)
        if m:
            current = out.setdefault(m[1], [])
        current.append(line)
    return out


_MD_BELOW = re.compile(
    rf"^- regressed below ({_NUM}) tokens/s \(({_NUM})× the baseline's ({_NUM})\)$"
)


def _health_md(text: str, exps: list[Expected], code: int, ratio: float | None) -> list[Mismatch]:
    """The fleet table's row of each target (status, tokens/s, the baseline's, the last
    step's age, the failed checks) and its section (each figure's line, the threshold,
    the throughput check's row); the exit code and the rule's ratio."""
    bad: list[Mismatch] = []
    head = text.partition("\n## ")[0]
    m = re.search(r"^- exit code (\d+):", head, re.M)
    _same(bad, "md:exit code", code, int(m[1]) if m else None, "run")
    m = re.search(rf"^- a target is .*below ({_NUM})× the baseline's", head, re.M)
    _shown(bad, "md:rule ratio", m[1] if m else None, ratio, "run")
    rows = {
        c[0].strip("`"): c
        for line in head.splitlines()
        if line.startswith("| `")
        for c in [_md_cells(line)]
    }
    sections = _md_sections(text)
    for exp in exps:
        where, f = f"target {exp.target!r}", exp.figures
        row = rows.get(exp.target)
        if row is None or len(row) < 8:
            bad.append(Mismatch("md:table row", exp.target, row, where))
            continue
        _same(bad, "md:table status", exp.status.replace("_", " "), row[1].partition(" ")[2], where)
        _shown(bad, "md:table tokens/s", _md_figure(row[3]), f.get("tokens_per_s"), where)
        _shown(
            bad,
            "md:table baseline tokens/s",
            _md_figure(row[4]),
            f.get("baseline_tokens_per_s"),
            where,
        )
        _md_age(bad, "md:table last step age", row[6], f.get("last_step_age_s"), where)
        _same(bad, "md:table regressed", ", ".join(exp.failed) or "–", row[7], where)
        bad += _md_section(sections.get(exp.target, []), exp, where)
    return bad


def _md_section(lines: list[str], exp: Expected, where: str) -> list[Mismatch]:
    bad: list[Mismatch] = []
    f = exp.figures
    for key in ("tokens_per_s", "baseline_tokens_per_s", "last_step"):
        if key not in exp.labels:
            continue
        prefix = f"- {exp.labels[key]} = "
        line = next((ln for ln in lines if ln.startswith(prefix)), None)
        _shown(
            bad,
            f"md:{prefix.strip('- =')}",
            _md_figure(line.removeprefix(prefix) if line else None),
            f.get(key),
            where,
        )
    if exp.throughput is not None:
        m = next((m for ln in lines if (m := _MD_BELOW.match(ln))), None)
        _shown(
            bad, "md:regressed below", m[1] if m else None, f["regressed_below_tokens_per_s"], where
        )
        _shown(bad, "md:regressed below: ratio", m[2] if m else None, exp.ratio, where)
        _shown(
            bad,
            "md:regressed below: baseline",
            m[3] if m else None,
            f["baseline_tokens_per_s"],
            where,
        )
    row = next((_md_cells(ln) for ln in lines if ln.startswith(f"| {exp.title} |")), None)
    status = row[1].split()[1] if row and len(row) > 2 and len(row[1].split()) > 1 else None
    if exp.throughput is not None:
        _same(bad, "md:throughput check", exp.throughput, status, where)
        _verdict_words(bad, "md", row[2] if row and len(row) > 2 else "", exp, where)
    return bad


_SVG = "{http://www.w3.org/2000/svg}"
_TREND_POINT = re.compile(rf"^.* UTC: ({_NUM}) tok/s \((\w+)(?:: (.*))?\)$")
_CAPTION = re.compile(
    rf": ({_NUM}) tok/s \(latest of (\d+) runs\)"
    rf"(?:, baseline ({_NUM}))?(?:, regressed below ({_NUM}))?$"
)


def _health_svg(text: str, exp: Expected) -> list[Mismatch]:
    """A target's trend: one point per run holding a figure, each with its figure and
    status (this run's last, with its failed checks), drawn at its height; the caption;
    the baseline's line and the threshold's, with their figures and at their heights."""
    bad: list[Mismatch] = []
    where = f"target {exp.target!r}"
    root = ET.fromstring(text)
    known = [float(p["tokens_per_s"]) for p in exp.trend if p.get("tokens_per_s") is not None]
    points = [
        (c, _TREND_POINT.match(c.findtext(f"{_SVG}title") or ""))
        for c in root.iter(f"{_SVG}circle")
    ]
    _same(bad, "svg:points", len(known), len(points), where)
    for i, ((_, m), value) in enumerate(zip(points, known, strict=False)):
        _shown(bad, f"svg:point {i} tok/s", m[1] if m else None, value, where)
    if (
        points
        and points[-1][1] is not None
        and exp.trend
        and exp.trend[-1].get("tokens_per_s") is not None
    ):
        last = points[-1][1]
        assert last is not None
        _same(bad, "svg:last point status", exp.status, last[2], where)
        _same(bad, "svg:last point failed checks", ", ".join(exp.failed), last[3] or "", where)
    m = _CAPTION.search(root.findtext(f"{_SVG}title") or "")
    base, below = (
        exp.figures.get("baseline_tokens_per_s"),
        exp.figures.get("regressed_below_tokens_per_s"),
    )
    judged = exp.throughput is not None
    _shown(bad, "svg:caption tok/s", m[1] if m else None, known[-1] if known else None, where)
    _same(bad, "svg:caption runs", len(exp.trend), int(m[2]) if m else None, where)
    _shown(bad, "svg:caption baseline", m[3] if m else None, base if judged else None, where)
    _shown(
        bad, "svg:caption regressed below", m[4] if m else None, below if judged else None, where
    )
    guides = {
        (ln.findtext(f"{_SVG}title") or "").partition(":")[0]: ln
        for ln in root.iter(f"{_SVG}line")
        if ln.find(f"{_SVG}title") is not None
    }
    for name, figure in (("baseline", base), ("regressed below", below)):
        line = guides.get(name)
        said = (
            re.match(rf"^{name}: ({_NUM}) tok/s", line.findtext(f"{_SVG}title") or "")
            if line is not None
            else None
        )
        _shown(
            bad, f"svg:{name} line", said[1] if said else None, figure if judged else None, where
        )
    if judged and base and "baseline" in guides:
        bad += _trend_heights(root, points, known, exp, guides, where)
    return bad


def _trend_heights(
    root: ET.Element,
    points: list[tuple[ET.Element, re.Match[str] | None]],
    known: list[float],
    exp: Expected,
    guides: dict[str, ET.Element],
    where: str,
) -> list[Mismatch]:
    """Heights on the chart's scale: zero at its axis, the baseline at its line; each
    coordinate is printed to 0.1, so each may be 0.05 off, the baseline's line's too."""
    bad: list[Mismatch] = []
    axis = next((ln for ln in root.iter(f"{_SVG}line") if ln.find(f"{_SVG}title") is None), None)
    if axis is None:
        return [Mismatch("svg:axis", "a line at zero", None, where)]
    zero, base = float(axis.get("y1") or "nan"), exp.figures["baseline_tokens_per_s"]
    per = (zero - float(guides["baseline"].get("y1") or "nan")) / base

    def near(figure: str, value: float, y: float) -> None:
        slack = 0.05 + 0.05 * abs(value / base) + 1e-6
        if not abs(zero - value * per - y) <= slack:
            bad.append(Mismatch(figure, round(zero - value * per, 2), y, where))

    for i, ((circle, _), value) in enumerate(zip(points, known, strict=False)):
        near(f"svg:point {i} height", value, float(circle.get("cy") or "nan"))
    if "regressed below" in guides:
        below = exp.figures["regressed_below_tokens_per_s"]
        near(
            "svg:regressed below line height",
            below,
            float(guides["regressed below"].get("y1") or "nan"),
        )
    return bad
