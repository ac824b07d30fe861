"""A self-contained HTML report: the claims with links to the facts they cite, and the
drafter's throughput per log window against the baseline as an inline SVG plot.

The plot's points are values in the cited train-log facts (each point's tooltip names
the fact); nothing is drawn that a fact does not hold.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from agent.claims import unshown
from agent.facts import Fact, Ledger, latest, observed
from agent.report import Report
from agent.state import DiagnosisState
from agent.throughput import subject

_ID = re.compile(r"\[(F-[0-9a-f]{4,})\]")


@dataclass
class Series:
    label: str
    fact: str
    points: list[tuple[float, float]]  # (step, tokens/s)


def throughput_series(fact: Fact | None, label: str) -> Series | None:
    """The judged throughput (agent.throughput's subject: the drafter series, a sum over
    several, or the log's one series) per log window of a train-log fact, at the step of
    the window's start."""
    found = subject(fact)
    if fact is None or found is None or not isinstance(fact.value, dict):
        return None
    windows = fact.value.get("windows")
    if not isinstance(windows, list):
        return None
    if found.members:
        members = list(found.members)
    elif found.path[0] == "groups":
        members = [str(found.path[1])]
    else:
        members = []
    points = []
    for window in windows:
        if not isinstance(window, dict):
            continue
        step = window.get("first_step")
        by_group = window.get("tok_s_median_by_group")
        if members:
            vals = [by_group.get(g) for g in members] if isinstance(by_group, dict) else []
            nums = [v for v in vals if isinstance(v, int | float)]
            # A window's sum is drawn only where every series has a value in it.
            value: object = sum(nums) if nums and len(nums) == len(members) else None
        else:
            value = window.get("tok_s_median")
        if isinstance(value, int | float) and isinstance(step, int | float):
            points.append((float(step), float(value)))
    return Series(label, fact.id, points) if points else None


def series_title(fact: Fact | None) -> str:
    """What the plot shows, in the log's own words ("drafter tokens/s", "tokens/s")."""
    found = subject(fact)
    return f"{found.who if found else ''}tokens/s per log window"


def _svg(series: list[Series], width: int = 760, height: int = 280) -> str:
    pad_l, pad_r, pad_t, pad_b = 70, 20, 20, 40
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y1 = max(ys) * 1.1 or 1.0

    def px(x: float) -> float:
        return pad_l + (x - x0) / (x1 - x0) * (width - pad_l - pad_r)

    def py(y: float) -> float:
        return height - pad_b - y / y1 * (height - pad_t - pad_b)

    colors = {"now": "#c0392b", "baseline": "#7f8c8d"}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'role="img" aria-label="tokens per second per log window">',
        f'<line x1="{pad_l}" y1="{height - pad_b}" x2="{width - pad_r}" y2="{height - pad_b}" '
        'stroke="#333"/>',
        f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{height - pad_b}" stroke="#333"/>',
    ]
    for frac in (0.0, 0.5, 1.0):
        value = y1 * frac
        parts.append(
            f'<text x="{pad_l - 6}" y="{py(value) + 4:.1f}" text-anchor="end" '
            f'font-size="11">{value:,.0f}</text>'
        )
    for x in (x0, (x0 + x1) / 2, x1):
        parts.append(
            f'<text x="{px(x):.1f}" y="{height - pad_b + 14}" text-anchor="middle" '
            f'font-size="11">{x:,.0f}</text>'
        )
    parts.append(
        f'<text x="{(width + pad_l) / 2}" y="{height - 6}" text-anchor="middle" '
        'font-size="12">step</text>'
    )
    for s in series:
        color = colors.get(s.label, "#2980b9")
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s.points)
        parts.append(
            f'<polyline class="series-{html.escape(s.label)}" fill="none" stroke="{color}" '
            f'stroke-width="2" points="{path}"/>'
        )
        for x, y in s.points:
            parts.append(
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}">'
                f"<title>{html.escape(s.label)}: step {x:g}, {y:,.0f} tok/s [{s.fact}]"
                "</title></circle>"
            )
    parts.append("</svg>")
    return "".join(parts)


def _linked(text: str) -> str:
    return _ID.sub(lambda m: f'[<a href="#{m.group(1)}">{m.group(1)}</a>]', html.escape(text))


_CSS = """
body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;color:#222}
h1{font-size:1.5em} h2{font-size:1.15em;margin-top:1.6em}
.status{font-size:.8em;padding:.1em .5em;border-radius:.3em;background:#eee}
.verified{background:#fadbd8}.refuted{background:#e8f6f3}.unverifiable{background:#fcf3cf}
li.holds::marker{content:"✔ "}li.fails::marker{content:"✘ "}li.unverifiable::marker{content:"? "}
table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid #ccc;padding:.2em .5em}
code{font-size:.9em}.legend span{margin-right:1.5em}
"""


def render_html(report: Report, state: DiagnosisState, ledger: Ledger) -> str:
    now = throughput_series(observed(latest(ledger, state.facts, "trainlog")), "now")
    then = throughput_series(observed(latest(ledger, state.baseline_facts, "trainlog")), "baseline")
    series = [s for s in (then, now) if s is not None]
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>dflash-doctor: {html.escape(report.verdict)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1 id='verdict'>dflash-doctor report: {html.escape(report.verdict)}</h1>",
        f"<p>target <code>{html.escape(report.target)}</code> · session "
        f"<code>{html.escape(report.session)}</code></p>",
    ]
    if series:
        legend = " ".join(
            f"<span>{html.escape(s.label)}: [<a href='#{s.fact}'>{s.fact}</a>]</span>"
            for s in series
        )
        out += [
            "<h2 id='throughput'>"
            + html.escape(series_title(observed(latest(ledger, state.facts, "trainlog"))))
            + "</h2>",
            f"<div class='legend'>{legend}</div>",
            _svg(series),
        ]
    for section in report.sections:
        status = (
            f" <span class='status {section.status}'>{html.escape(section.status)}</span>"
            if section.status
            else ""
        )
        out.append(f"<h2>{html.escape(section.title)}{status}</h2><ul>")
        for line in section.lines:
            cites = "".join(f" [<a href='#{c}'>{c}</a>]" for c in unshown(line.text, line.cites))
            out.append(f"<li class='{line.outcome}'>{_linked(line.text)}{cites}</li>")
        out.append("</ul>")
    out.append(
        "<h2 id='facts'>facts</h2><table><tr><th>id</th><th>probe</th><th>command</th>"
        "<th>rc</th><th>error</th></tr>"
    )
    for fact in report.facts:
        out.append(
            f"<tr id='{fact.id}'><td>{fact.id}</td><td>{html.escape(fact.probe)}</td>"
            f"<td><code>{html.escape(fact.command)}</code></td><td>{fact.rc}</td>"
            f"<td>{html.escape(fact.error or '')}</td></tr>"
        )
    out.append("</table></body></html>")
    return "\n".join(out)
