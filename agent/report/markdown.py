"""The report as Markdown: a heading per section, a mark per line, then the facts.

Two lengths. The short one (what the commands print unless ``--full``) is the first
screen a person reads: the verdict, the symptoms, what changed, each verified cause with
its claims, what was missing or could not be observed, the fix; the other hypotheses in
one line per status, and only the facts those lines cite, one row per command they came
from. The full one (``--full``, and what ``--format html|json`` hold) adds every
hypothesis with its claims, what was checked, the Python probed with, and a row per fact.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.model.shown import with_cites
from agent.report.model import FactDoc, Line, Report, Section

# One mark per line outcome, shared with the terminal's rendering (agent.report.terminal).
MARK = {"holds": "✔", "fails": "✘", "unverifiable": "?", "rejected": "!", "info": "·"}
# Sections the short report leaves to --full: how the diagnosis went, not what it found.
_BEHIND_FULL = frozenset({"probed_with", "refused"})


def render_markdown(report: Report, *, full: bool = True) -> str:
    out = [
        f"# dflash-doctor report: {report.verdict}",
        "",
        f"- target: `{report.target}`",
        f"- session: `{report.session}`",
        *([f"- transcript: {report.transcript}"] if report.transcript else []),
        "",
    ]
    shown, folded = (report.sections, 0) if full else _first_screen(report.sections)
    for section in shown:
        status = f" — {section.status}" if section.status else ""
        out += [f"## {section.title}{status}", ""]
        out += [_line(line) for line in section.lines]
        out.append("")
    if full:
        out += ["## facts", "", "| id | probe | command | rc | error |", "|---|---|---|---|---|"]
        for f in report.facts:
            out.append(f"| {f.id} | {f.probe} | `{_cell(f.command)}` | {f.rc} | {_cell(f.error)} |")
        return "\n".join(out) + "\n"
    cited = _cited(shown)
    facts = [f for f in report.facts if f.id in cited]
    out += _fact_groups(facts)
    more = len(report.facts) - len(facts)
    out.append(
        f"_{folded} section(s) folded or left out, and {more} more fact(s): `--full`, or"
        " `--format html` or `json`._"
    )
    return "\n".join(out) + "\n"


def _line(line: Line) -> str:
    return f"- {MARK[line.outcome]} {with_cites(line.text, line.cites)}"


def _first_screen(sections: list[Section]) -> tuple[list[Section], int]:
    """The sections a person needs first, the hypotheses not verified folded into one
    section with a line per status (their titles, so each can be asked for); and how
    many of ``sections`` are not shown whole."""
    kept: list[Section] = []
    folded = 0
    others: dict[str, list[str]] = {}
    for section in sections:
        if section.kind in _BEHIND_FULL:
            folded += 1
            continue
        if section.kind == "hypothesis" and section.status != "verified":
            others.setdefault(section.status, []).append(section.title)
            folded += 1
            continue
        if section.kind == "checked":
            # "No fault found" stands on what was looked at: the families that formed
            # no hypothesis are named too.
            none = [
                line.text.partition(": ")[0]
                for line in section.lines
                if line.text.partition(": ")[2].startswith("no hypothesis formed")
            ]
            if none:
                others.setdefault("no hypothesis formed from the facts", []).extend(none)
            folded += 1
            continue
        if section.kind == "not_applicable":
            section = section.model_copy(update={"lines": section.lines[:1]})
            folded += 1
        kept.append(section)
    if others:
        lines = [
            Line(text=f"{status}: {'; '.join(titles)}", cites=[])
            for status, titles in others.items()
        ]
        kept.append(Section(title="other hypotheses", lines=lines, kind="hypothesis"))
    return kept, folded


def _cited(sections: Iterable[Section]) -> set[str]:
    return {c for s in sections for line in s.lines for c in line.cites}


def _fact_groups(facts: list[FactDoc]) -> list[str]:
    """The facts cited, a row per command, rc and error they share: the probe bundle's
    facts came from one run of one command, and say so once."""
    if not facts:
        return []
    groups: dict[tuple[str, int | None, str], list[FactDoc]] = {}
    for f in facts:
        groups.setdefault((f.command, f.rc, f.error or ""), []).append(f)
    out = ["## facts cited", "", "| facts | command | rc | error |", "|---|---|---|---|"]
    for (command, rc, error), members in groups.items():
        named = ", ".join(f"{f.id} {f.probe}" for f in members)
        out.append(f"| {named} | `{_cell(command)}` | {rc} | {_cell(error)} |")
    return [*out, ""]


def _cell(text: str | None) -> str:
    return (text or "").replace("|", "\\|")
