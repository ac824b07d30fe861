"""The HTML report, opened in a real headless Chromium: what a person would see."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent.recorded import load_recorded
from agent.runner import build_doctor, record_outcome, run_session
from agent.session import Session, SessionConfig
from agent.state import DiagnosisState
from tests.conftest import need
from tests.pngread import pixels
from tests.test_cli import cli
from tests.test_diagnose import snapshot
from tests.workspaces import clone, trainer
from tools.bundle import SweepSpec

pytestmark = [pytest.mark.slow, pytest.mark.torch, pytest.mark.timeout(300)]

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    need(found is not None, "chromium", "install Debian's chromium (make test does so as root)")
    assert found is not None
    return found


def browse(html: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp / 'profile'}", *args, html.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def recorded_race(good_workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recorded diagnosis of a workspace whose script changed after a snapshot."""
    ws = clone(good_workspace, tmp_path_factory.mktemp("html") / "ws")
    snapshot(ws)
    assert trainer("break", "script", "--workspace", ws).returncode == 0
    spec = SweepSpec.for_workspace(str(ws), interpreter=sys.executable)
    session = Session.create(
        SessionConfig(command="diagnose", target="local", spec=spec, baseline="good")
    )
    doctor = build_doctor(session, session.target("local"), spec)
    outcome = run_session(session, doctor, start=DiagnosisState(target="local", baseline="good"))
    record_outcome(session, outcome.state)
    session.close()
    return session.transcript_path


def test_browser_shows_plot_claims_and_citations(recorded_race: Path, tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    assert (
        cli("-q", "report", str(recorded_race), "--format", "html", "--out", str(html)).returncode
        == 0
    )
    dom = browse(html, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr
    text = dom.stdout
    assert "dflash-doctor report: fault found" in text
    assert "drafter tokens/s per log window" in text
    # Every claim is on the page, and every citation links to a fact row that exists.
    recorded = load_recorded(recorded_race)
    for hyp in recorded.state.hypotheses:
        for verdict in hyp.verdicts:
            assert (
                verdict.sentence.split(" [")[0].replace("'", "&#x27;") in text
                or verdict.sentence.split(" [")[0] in text
            )
    links = set(re.findall(r'href="#(F-[0-9a-f]+)"', text))
    rows = set(re.findall(r'<tr id="(F-[0-9a-f]+)"', text))
    assert links and links <= rows
    # Two series drawn, with one point per log window of each train-log fact.
    assert text.count('class="series-now"') == 1 and text.count('class="series-baseline"') == 1

    shot = tmp_path / "report.png"
    result = browse(html, tmp_path, f"--screenshot={shot}", "--window-size=1000,900")
    assert result.returncode == 0 and shot.exists(), result.stderr
    width, height, px = pixels(shot)
    assert (width, height) == (1000, 900)
    red = sum(
        1 for r, g, b in px if abs(r - 0xC0) < 24 and abs(g - 0x39) < 24 and abs(b - 0x2B) < 24
    )
    grey = sum(
        1 for r, g, b in px if abs(r - 0x7F) < 10 and abs(g - 0x8C) < 10 and abs(b - 0x8D) < 10
    )
    assert red > 200, f"the 'now' series is not visible ({red} red pixels)"
    assert grey > 100, f"the baseline series is not visible ({grey} grey pixels)"
