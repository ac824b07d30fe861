"""The demo: the incident reproduced on the reference trainer, diagnosed and fixed, with
a summary a script can read; and what it says when a step did not go as the story goes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from agent.graph.state import FixOutcome
from examples.demo.run import Break, RunFigure, _fixed
from tests.lib.torch_error_texts import FX_ERROR

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_demo_breaks_the_run_diagnoses_fixes_and_prints_the_three_figures() -> None:
    """`python -m examples.demo` (what `make demo` runs): the expanded run dies of torch's FX-
    tracing error, the race is verified, lock-warmup is approved by the demo's policy and
    applied, and the last three lines are `good N tok/s (…)`, `broken N tok/s (…)`, `fixed N
    tok/s (…)`, each saying where its figure comes from (or, with no figure, why)."""
    run = subprocess.run(
        [sys.executable, "-m", "examples.demo"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    # The console wraps long lines at its width: compare text with whitespace collapsed.
    progress, out = " ".join(run.stderr.split()), run.stdout
    assert "the run died (exit code 1) of torch's own error" in progress, progress[-3000:]
    assert re.search(rf"\[(target|drafter)-sim:\d\] RuntimeError: {FX_ERROR}", progress)
    assert "FX-tracing race under per-device compilation — verified" in out, out[-3000:]
    assert "approved by the demo's policy" in out
    good, broken, fixed = out.strip().splitlines()[-3:]
    assert re.match(r"good [\d,]+ tok/s \(median of \d+ drafter log lines", good), good
    died = r"(?:[\d,]+ tok/s \(.*until it|n/a \(no drafter log line before it)"
    assert re.match(rf"broken {died} died of torch's FX-trace error\)", broken), broken
    # The fix must have removed the race. Whether the fixed run also reached 0.9× the good
    # one is decided on a machine whose load can swing that much between runs a minute
    # apart (BENCHMARKS.md: 1 rollback in 5 timed runs, at 0.86×); then the demo must say so,
    # and the throughput check must be the only one that failed.
    if fixed.startswith("fixed n/a"):
        assert re.match(
            r"fixed n/a \(lock-warmup rolled_back: drafter tokens/s [\d,]+ is 0\.\d\d× the "
            r"baseline [\d,]+ \(< 0\.9×\); rolled back: restored .*launch\.sh byte-identical\)",
            fixed,
        ), fixed
    else:
        assert re.match(r"fixed [\d,]+ tok/s \(median of \d+ drafter log lines\)", fixed), fixed
        assert "applied: no FX-trace error in" in out


def test_a_run_that_did_not_break_is_not_called_broken() -> None:
    """Exit 0 and no FX-trace error: the demo says the race did not strike."""
    survived = Break(0, None, None)
    assert not survived.broke
    assert survived.text().startswith("the race did not strike this time")
    other = Break(1, None, "NameError: module is not installed as a submodule")
    assert not other.broke and "not the FX-trace error" in other.text()
    died = Break(1, f"RuntimeError: {FX_ERROR}", None)
    assert died.broke and FX_ERROR in died.text()
    assert survived.short() == (
        "the expanded run did not break: exit code 0, no FX-trace error in its log"
    )


def test_no_fixed_figure_without_an_applied_fix() -> None:
    """A rolled-back run's throughput is not a fixed run's: `fixed n/a (why)`."""
    assert _fixed(None).text() == "fixed n/a (no fix was applied)"
    rolled = FixOutcome(
        playbook="lock-warmup",
        status="rolled_back",
        detail="the FX-trace error came back 1 time(s)",
        observations={"drafter_tok_s": 9000.0, "new_drafter_records": 4},
    )
    assert _fixed(rolled).text() == (
        "fixed n/a (lock-warmup rolled_back: the FX-trace error came back 1 time(s))"
    )
    applied = rolled.model_copy(update={"status": "applied"})
    assert _fixed(applied).text() == "fixed 9,000 tok/s (median of 4 drafter log lines)"
    assert RunFigure("good", 12800.0, 8, 5, 40).text() == (
        "good 12,800 tok/s (median of 8 drafter log lines, steps 5–40)"
    )
