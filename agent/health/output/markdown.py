"""The health run as Markdown: a fleet table, then one section per target.

Like ``agent.report.build``, every sentence is a claim verdict or a cited value; each target's
section ends with the facts it cites and the command that produced each. The trend column
is a sparkline of tokens/s over the stored runs; with ``--out`` an SVG chart per target
is written beside the report and linked from its section (``trend_files``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from agent.health.model import HealthRun, Metric, TargetResult, figure
from agent.health.output.trend import sparkline
from agent.model.shown import with_cites

MARK = {"healthy": "✔ healthy", "regressed": "✘ regressed", "could_not_check": "? could not check"}
CHECK_MARK = {"passed": "✔", "failed": "✘", "error": "?", "skipped": "–"}
LINE_MARK = {"holds": "✔", "fails": "✘", "unverifiable": "?", "rejected": "!", "info": "·"}


def _when(at: datetime | None) -> str:
    return "" if at is None else f"{at:%Y-%m-%d %H:%M} UTC"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _metric(metric: Metric | None) -> str:
    if metric is None:
        return "–"
    return f"{figure(metric.value)} [{', '.join(metric.cites)}]"


def which(t: TargetResult) -> str:
    """The baseline in a word or two: the snapshot's name, or derived."""
    return f"snapshot `{t.baseline}`" if t.baseline is not None else "derived"


def _age(metric: Metric | None) -> str:
    if metric is None:
        return "–"
    seconds = metric.value
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if abs(seconds) >= size:
            return f"{seconds / size:.1f} {unit} [{', '.join(metric.cites)}]"
    return f"{seconds:.0f} s [{', '.join(metric.cites)}]"


def render(run: HealthRun, trend_files: Mapping[str, str] | None = None) -> str:
    trend_files = trend_files or {}
    counts = ", ".join(
        f"{run.count(s)} {s.replace('_', ' ')}"
        for s in ("regressed", "could_not_check", "healthy")
        if run.count(s)
    )
    out = [
        f"# dflash-doctor health: {counts or 'no targets'}",
        "",
        f"- run: `{run.run}`, {_when(run.started_at)}, {len(run.targets)} target(s), "
        f"{run.jobs} at a time, {run.target_timeout_s:g}s limit each",
        f"- exit code {run.exit_code}: {run.exit_reason}",
        f"- a target is {run.rule}",
        "",
        "| target | status | since | tokens/s | baseline tokens/s | trend | last step age "
        "| regressed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in run.targets:
        since = f"{_when(t.since)} ({t.since_runs} run{'s' if t.since_runs != 1 else ''})"
        spark = sparkline([p.tokens_per_s for p in t.trend])
        out.append(
            "| "
            + " | ".join(
                _cell(c)
                for c in (
                    f"`{t.target}`",
                    MARK[t.status],
                    since,
                    _metric(t.metrics.get("tokens_per_s")),
                    _baseline_cell(t),
                    spark or "–",
                    _age(t.metrics.get("last_step_age_s")),
                    ", ".join(t.regressions) or "–",
                )
            )
            + " |"
        )
    out.append("")
    for t in run.targets:
        out += _section(t, trend_files.get(t.target))
    return "\n".join(out)


def _baseline_cell(t: TargetResult) -> str:
    metric = t.metrics.get("baseline_tokens_per_s")
    return f"{_metric(metric)} ({which(t)})" if metric is not None else which(t)


def _section(t: TargetResult, trend_file: str | None) -> list[str]:
    out = [f"## `{t.target}` — {MARK[t.status]}", ""]
    if t.uri != t.target:
        out.append(f"- target: `{t.uri}`")
    if t.workspace is not None:
        out.append(f"- workspace: `{t.workspace}`")
    if t.profile is not None:
        out.append(f"- profile: `{t.profile}`")
    if t.baseline_used is not None:
        out.append(f"- baseline: {with_cites(t.baseline_used.text, t.baseline_used.cites)}")
    else:  # a run recorded before results said which
        out.append(f"- baseline: {which(t)}")
    if t.reason:
        out.append(f"- {t.reason}")
    if t.session:
        out.append(f"- session `{t.session}`, transcript `{t.transcript}`")
    for key in ("tokens_per_s", "baseline_tokens_per_s"):
        if key in t.metrics:
            out.append(f"- {t.metrics[key].label} = {_metric(t.metrics[key])}")
    if t.judged is not None:
        out.append(
            f"- regressed below {figure(t.judged.threshold)} tokens/s "
            f"({t.judged.ratio:g}× the baseline's {figure(t.judged.baseline)})"
        )
    if "last_step" in t.metrics:
        last = t.metrics["last_step"]
        out.append(f"- {last.label} = {_metric(last)}")
    if "last_step_age_s" in t.metrics:
        out.append(f"- last step age = {_age(t.metrics['last_step_age_s'])}")
    values = [p.tokens_per_s for p in t.trend]
    if any(v is not None for v in values):
        out.append(f"- tokens/s over the last {len(values)} runs: {sparkline(values)}")
    out.append("")
    if trend_file:
        out += [f"![tokens/s trend of {t.target}]({trend_file})", ""]
    out += ["| check | result | |", "|---|---|---|"]
    for c in t.checks:
        since = f" since {_when(c.since)}" if c.since else ""
        out.append(
            f"| {_cell(c.title)} | {CHECK_MARK[c.status]} {c.status}{since} | {_cell(c.message)} |"
        )
    out.append("")
    for c in t.checks:
        if c.status not in ("failed", "error") or not c.lines:
            continue
        out += [f"### {c.title} — {c.status}", ""]
        for line in c.lines:
            out.append(f"- {LINE_MARK[line.outcome]} {with_cites(line.text, line.cites)}")
        out.append("")
    if t.facts:
        out += ["| fact | probe | command |", "|---|---|---|"]
        for f in t.facts:
            side = " (baseline)" if f.baseline else ""
            out.append(f"| {f.id}{side} | {f.probe} | `{_cell(f.command)}` |")
        out.append("")
    return out
