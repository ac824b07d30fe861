"""``dflash-doctor report FILE`` (``agent.cli.report``): a recorded session rendered as
Markdown (the first screen, or ``--full``), HTML or JSON, the report saying how its
transcript's seal was checked; a seal not checked here warned about on stderr; ``--out``
written whole, an existing file kept unless ``--force``, refused before anything is
read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import agent.report.html
import agent.report.markdown
import agent.sessions.recorded
from agent.cli import application
from agent.cli.application import app
from agent.graph.state import DiagnosisState
from agent.model.facts import Ledger
from agent.report.model import Report
from agent.sessions.recorded import Recorded
from tools.errors import UsageError
from tools.transcript import SealCheck

SESSION_ID = "20261201-020000-ab12"
SIGNED = SealCheck(key_id="k-1234", signed_by="this installation")
UNCHECKED = SealCheck(key_id="k-9999", signed_by="no key here")


@dataclass
class Rendered:
    """The recording the stand-in loader answers with, how it was asked for, and what
    each renderer was given."""

    recorded: Recorded
    loaded: list[tuple[Path, bool]] = field(default_factory=list)
    markdown: list[tuple[Report, bool]] = field(default_factory=list)
    html: list[tuple[Report, DiagnosisState, Ledger]] = field(default_factory=list)


def recording(seal: SealCheck) -> Recorded:
    return Recorded(
        header={"session": SESSION_ID},
        state=DiagnosisState(target="ssh://<host-1>", verdict="no_fault_found"),
        ledger=Ledger(),
        seal=seal,
    )


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> Iterator[Rendered]:
    """The transcript loader and the Markdown and HTML renderers are stand-ins; the
    renderers answer ``MARKDOWN`` and ``HTML``."""
    record = Rendered(recording(SIGNED))

    def load_recorded(path: Path, *, require_signature: bool) -> Recorded:
        record.loaded.append((path, require_signature))
        return record.recorded

    def render_markdown(report: Report, *, full: bool) -> str:
        record.markdown.append((report, full))
        return "MARKDOWN"

    def render_html(report: Report, state: DiagnosisState, ledger: Ledger) -> str:
        record.html.append((report, state, ledger))
        return "HTML"

    monkeypatch.setattr(agent.sessions.recorded, "load_recorded", load_recorded)
    monkeypatch.setattr(agent.report.markdown, "render_markdown", render_markdown)
    monkeypatch.setattr(agent.report.html, "render_html", render_html)
    monkeypatch.setattr(application, "configure", lambda *, json, level: None)
    yield record


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, ["report", *args])


@pytest.mark.parametrize(
    ("flags", "full"), [([], False), (["--full"], True)], ids=["first-screen", "full"]
)
def test_markdown_is_the_default_and_says_how_the_seal_was_checked(
    rendered: Rendered, flags: list[str], full: bool
) -> None:
    """Without ``--format`` the report is Markdown, on stdout, of the first screen unless
    ``--full``; the report names the recorded session and carries the seal's sentence; a
    seal this installation checked needs no warning."""
    result = invoke("run.jsonl", *flags)
    assert result.exit_code == 0
    assert (result.stdout, result.stderr) == ("MARKDOWN\n", "")
    ((report, given_full),) = rendered.markdown
    assert (report.session, report.target, given_full) == (SESSION_ID, "ssh://<host-1>", full)
    assert report.transcript == "sealed and signed by this installation (key id k-1234)"
    assert rendered.loaded == [(Path("run.jsonl"), False)]


def test_html_is_rendered_from_the_recorded_state_and_ledger(rendered: Rendered) -> None:
    """``--format html`` renders the report with the recorded state and ledger (its
    figures and facts come from them)."""
    result = invoke("run.jsonl", "--format", "html")
    assert (result.exit_code, result.stdout) == (0, "HTML\n")
    ((report, state, ledger),) = rendered.html
    assert (state, ledger) == (rendered.recorded.state, rendered.recorded.ledger)
    assert report.transcript == "sealed and signed by this installation (key id k-1234)"
    assert rendered.markdown == []


def test_json_is_the_report_document_with_its_transcripts_seal(rendered: Rendered) -> None:
    """``--format json`` prints the report as one JSON document naming the recorded
    session and target and how its transcript was checked."""
    result = invoke("run.jsonl", "--format", "json")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert (document["session"], document["target"], document["transcript"]) == (
        SESSION_ID,
        "ssh://<host-1>",
        "sealed and signed by this installation (key id k-1234)",
    )


def test_a_seal_not_checked_here_is_warned_about_and_shown_as_recorded(
    rendered: Rendered,
) -> None:
    """A transcript whose signature this installation could not check is still rendered,
    with one warning on stderr naming the file, why it was not checked and the option
    that refuses it."""
    rendered.recorded = recording(UNCHECKED)
    result = invoke("run.jsonl")
    assert result.exit_code == 0
    assert result.stdout == "MARKDOWN\n"
    assert result.stderr == (
        "dflash-doctor: warning: run.jsonl: sealed; signature not checked: this installation"
        " has no transcript key (signed with key id k-9999); shown as recorded"
        " (--require-signature refuses it)\n"
    )


def test_require_signature_is_passed_to_the_loader(rendered: Rendered) -> None:
    """``--require-signature`` asks the loader to refuse a file this installation did not
    sign."""
    assert invoke("run.jsonl", "--require-signature").exit_code == 0
    assert rendered.loaded == [(Path("run.jsonl"), True)]


def test_out_writes_the_report_there_and_says_so(rendered: Rendered, tmp_path: Path) -> None:
    """``--out`` writes the report to the file, not stdout, and says where on stderr."""
    out = tmp_path / "report.html"
    result = invoke("run.jsonl", "--format", "html", "--out", str(out))
    assert result.exit_code == 0
    assert (result.stdout, result.stderr) == ("", f"wrote {out}\n")
    assert out.read_text() == "HTML"


def test_an_existing_out_file_is_refused_before_the_transcript_is_read(
    rendered: Rendered, tmp_path: Path
) -> None:
    """An ``--out`` file that exists is kept: the command stops, saying to use
    ``--force``, before the transcript is loaded."""
    out = tmp_path / "report.md"
    out.write_text("kept")
    result = invoke("run.jsonl", "--out", str(out))
    assert isinstance(result.exception, UsageError)
    assert str(result.exception) == f"{out} exists; not overwriting it (use --force)"
    assert (rendered.loaded, out.read_text()) == ([], "kept")


def test_force_replaces_an_existing_out_file(rendered: Rendered, tmp_path: Path) -> None:
    """With ``--force`` an existing ``--out`` file is replaced by the report."""
    out = tmp_path / "report.md"
    out.write_text("old")
    assert invoke("run.jsonl", "--out", str(out), "--force").exit_code == 0
    assert out.read_text() == "MARKDOWN"
