"""The Markdown report's two lengths (issue 25: reports ran 87–300 lines): the first screen
a person reads, and ``--full``. Built from the shipped transcripts, as ``report`` does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.report.build import build_report
from agent.report.markdown import render_markdown
from agent.report.model import Report
from agent.sessions.recorded import load_recorded

TRANSCRIPTS = sorted((Path(__file__).resolve().parents[2] / "transcripts").glob("*.jsonl"))
CITE = re.compile(r"F-[0-9a-f]{4,}")


def report_of(name: str) -> Report:
    recorded = load_recorded(Path(__file__).resolve().parents[2] / "transcripts" / name)
    return build_report(recorded.state, recorded.ledger, "s")


def body(text: str) -> str:
    """The report without its facts table: the lines that cite."""
    return text.split("\n## facts", 1)[0]


def test_a_healthy_run_fits_one_screen() -> None:
    """The healthy transcript's short report is at most 40 lines and still says what the
    verdict stands on: the symptoms, what changed, and every family it looked at."""
    report = report_of("healthy.jsonl")
    short = render_markdown(report, full=False)
    assert len(short.splitlines()) <= 40, short
    assert short.startswith("# dflash-doctor report: no fault found\n")
    assert "## symptoms" in short and "## since it worked" in short
    looked_at = {h.kind for h in report.hypotheses}
    others = next(line for line in short.splitlines() if line.startswith("- · refuted: "))
    named = others.removeprefix("- · refuted: ").split("; ")
    assert len(named) == len(looked_at) and all(s.status == "refuted" for s in report.hypotheses)
    assert "no hypothesis formed from the facts: " in short
    assert short.rstrip().endswith("`--full`, or `--format html` or `json`._")
    folded = sum(
        s.kind == "hypothesis" or s.kind in ("checked", "probed_with") for s in report.sections
    )
    assert f"_{folded} section(s) folded or left out, and " in short


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.stem)
def test_every_fact_the_short_report_cites_is_listed_with_its_command(path: Path) -> None:
    """Each id cited on the first screen is in its facts table, and no other is."""
    short = render_markdown(report_of(path.name), full=False)
    cited = set(CITE.findall(body(short)))
    table = short.split("\n## facts cited", 1)[1] if cited else ""
    assert set(CITE.findall(table)) == cited


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.stem)
def test_verified_causes_are_shown_whole_and_the_rest_named(path: Path) -> None:
    """A verified family's section is on the first screen with every claim; each other
    family is named in one line of its status; the full report has them all."""
    report = report_of(path.name)
    short, full = render_markdown(report, full=False), render_markdown(report, full=True)
    for section in report.sections:
        if section.kind != "hypothesis":
            continue
        heading = f"## {section.title} — {section.status}"
        assert heading in full
        if section.status == "verified":
            assert heading in short
            assert all(line.text in short for line in section.lines)
        else:
            assert heading not in short
            assert f"{section.status}: " in short and section.title in short
    assert len(short.splitlines()) < len(full.splitlines())


def test_the_full_report_lists_every_fact_and_section() -> None:
    """``--full``: every section's heading and a row per fact, as before."""
    report = report_of("fx-race.jsonl")
    full = render_markdown(report, full=True)
    for section in report.sections:
        assert f"## {section.title}" in full
    for fact in report.facts:
        assert f"| {fact.id} | {fact.probe} |" in full
