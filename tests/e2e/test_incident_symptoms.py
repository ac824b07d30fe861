"""The incident as another program leaves it, diagnosed end to end through the CLI with
a Python that has no torch: the report opens with the drop at the resume, then what
changed since it worked; the FX race the console log shows is open, not refuted, and the
report names the missing evidence and the flag that supplies it."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import pytest

from tests.lib.logs import incident_workspace

CLI = Path(sys.executable).with_name("dflash-doctor")


def diagnose(ws: Path, python: Path, state: Path) -> dict[str, Any]:
    argv = [str(CLI), "diagnose", "--target", "local", "--workspace", str(ws)]
    argv += ["--non-interactive", "--interpreter", str(python), "--json"]
    run = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=300,
        env={"XDG_STATE_HOME": str(state), "PATH": "/usr/bin:/bin"},
    )
    assert run.stdout.strip(), run.stderr[-3000:]
    report: dict[str, Any] = json.loads(run.stdout)
    return report


def aligned(report: dict[str, Any]) -> None:
    """The race's FX errors are dated to the drop, and the console's resume line and
    first error are shown against the step where it began."""
    race = next(h for h in report["hypotheses"] if h["kind"] == "fx_trace_race")
    assert report["hypotheses"][0]["kind"] == "fx_trace_race", report["hypotheses"]
    section = next(s for s in report["sections"] if s["title"].startswith("FX-tracing race"))
    timing = [line for line in section["lines"] if line["text"].startswith("timing: ")]
    assert [t["outcome"] for t in timing] == ["holds"], timing
    assert "= 690" in timing[0]["text"], timing
    around = [
        line["text"]
        for line in report["sections"][0]["lines"]
        if line["text"].startswith("around the change: ")
    ]
    assert any(
        "(resume, 1 line): 'resuming from checkpoints/epoch_0_step_690'" in t for t in around
    )
    assert any(
        "(fx_nested_trace, 2 lines)" in t
        and "step printed before it = 690 [" in t
        and "], not before first step of" in t
        for t in around
    )
    assert race["claims"], race
    derived = report["sections"][1]["lines"][0]["text"]
    assert derived.startswith("derived baseline: checkpoint epoch_0_step_690, written at step 690")


@pytest.mark.slow
def test_the_drop_leads_and_the_race_is_open_without_the_trainers_torch(tmp_path: Path) -> None:
    """With a Python that has no torch the report opens with the drop and what changed; the
    race stays open, not refuted, and the missing evidence says how to supply it."""
    ws = incident_workspace(tmp_path)
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)  # a real Python with no torch in it
    report = diagnose(ws, bare / "bin" / "python", tmp_path / "state")
    titles = [s["title"] for s in report["sections"]]
    assert titles[0] == "symptoms", titles
    assert titles[1].startswith("since it worked (derived baseline): "), titles
    first = report["sections"][0]["lines"][0]
    assert first["text"].startswith("tokens/s (sum of 3 series) fell to 0.3"), first
    assert "at step 700 (verified)" in first["text"], first
    changed = [line["text"] for line in report["sections"][1]["lines"]]
    assert any(t.startswith("prompts in ") and ": 128 [" in t and "→ 144 [" in t for t in changed)
    race = next(h for h in report["hypotheses"] if h["kind"] == "fx_trace_race")
    assert race["status"] == "unverifiable", race
    assert not any(c["status"] == "fails" for c in race["claims"]), race
    missing = next(s for s in report["sections"] if s["title"] == "missing evidence")
    (line,) = missing["lines"]
    assert "has no torch installed" in line["text"] and "--interpreter PATH" in line["text"]
    assert line["cites"] and line["cites"][0] in {f["id"] for f in report["facts"]}
    # Missing evidence refutes nothing and does not make the drop "unexplained" while
    # the race that would explain it is open.
    assert report["verdict"] != "symptom unexplained"
    aligned(report)


@pytest.mark.slow
@pytest.mark.torch
def test_with_a_python_that_has_torch_the_race_is_verified_first_and_explains_the_drop(
    tmp_path: Path,
) -> None:
    """Given a Python that has torch, the race is verified first and the symptoms say it
    explains the drop."""
    report = diagnose(incident_workspace(tmp_path), Path(sys.executable), tmp_path / "state")
    assert report["verdict"] == "fault found", report["verdict"]
    race = report["hypotheses"][0]
    assert (race["kind"], race["status"]) == ("fx_trace_race", "verified"), race
    explained = next(
        line["text"]
        for line in report["sections"][0]["lines"]
        if line["text"].startswith("explained by: ")
    )
    assert "FX-tracing race under per-device compilation" in explained
    aligned(report)
