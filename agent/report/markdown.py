"""The report as Markdown: a heading per section, a mark per line, then the facts table."""

from __future__ import annotations

from agent.claims import with_cites
from agent.report.model import Report

# One mark per line outcome, shared with the terminal's rendering (agent.report.terminal).
MARK = {"holds": "✔", "fails": "✘", "unverifiable": "?", "rejected": "!", "info": "·"}


def render_markdown(report: Report) -> str:
    out = [
        f"# dflash-doctor report: {report.verdict}",
        "",
        f"- target: `{report.target}`",
        f"- session: `{report.session}`",
        *([f"- transcript: {report.transcript}"] if report.transcript else []),
        "",
    ]
    for section in report.sections:
        status = f" — {section.status}" if section.status else ""
        out += [f"## {section.title}{status}", ""]
        for line in section.lines:
            out.append(f"- {MARK[line.outcome]} {with_cites(line.text, line.cites)}")
        out.append("")
    out += ["## facts", "", "| id | probe | command | rc | error |", "|---|---|---|---|---|"]
    for f in report.facts:
        command = f.command.replace("|", "\\|")
        error = (f.error or "").replace("|", "\\|")
        out.append(f"| {f.id} | {f.probe} | `{command}` | {f.rc} | {error} |")
    return "\n".join(out) + "\n"
