"""A profile's regular expressions run under a time bound (issue 24, item 3). Python's
backtracking engine takes time exponential in the input for patterns such as
``^(a+)+(?P<step>\\d+)$`` against ``a`` x 40 + ``!`` (121 s, and the checkpoints fact
lost to the probe's timeout) or ``(x+x+)+y`` over a 5,000-character line (the stdoutlog
fact lost). Now the pattern is abandoned at its bound, the rest of the fact is kept, and
the fact says which pattern, on what, after how long."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path

import pytest

from tests.lib.cli import facts_of, run_cli
from tools.parsers._bounded import Budget, Overran, bounded
from tools.parsers.stdoutlog import PROFILE_PATTERN_SECONDS
from tools.probes._steps import NAME_SECONDS

RUNAWAY_NAME = "a" * 40 + "!"
FX_ERROR = (
    "RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized"
    " function. This is not supported at the moment."
)


def hostile_workspace(ws: Path) -> Path:
    """Two step-named checkpoints and a name the profile's pattern runs away on; a
    console log with a 5,000-character line and the FX error after it; the profile."""
    for step in (100, 200):
        (ws / "ckpt" / f"step_{step}").mkdir(parents=True)
        (ws / "ckpt" / f"step_{step}" / "model.pt").write_bytes(b"\0" * 64)
    (ws / "ckpt" / RUNAWAY_NAME).mkdir()
    (ws / "train_stdout.log").write_text(
        "step 1 loss 2.0\n" + "x" * 5000 + "\n" + FX_ERROR + "\nstep 2 loss 1.9\n"
    )
    profile = ws / "doctor.toml"
    profile.write_text(
        f'[targets.t]\nuri = "local"\nworkspace = "{ws}"\n'
        'checkpoint_pattern = "^(a+)+(?P<step>\\\\d+)$"\n'
        '[[targets.t.signatures]]\nid = "xs"\npattern = "(x+x+)+y"\n'
    )
    return profile


def test_runaway_profile_patterns_are_abandoned_and_the_facts_kept(tmp_path: Path) -> None:
    """Both patterns stop at their bounds; the checkpoints are read by the built-in
    namings and the console log's own signatures still count the FX error."""
    profile = hostile_workspace(tmp_path / "ws")
    started = time.monotonic()
    facts = facts_of(run_cli("facts", "--config", str(profile), "--json", state=tmp_path / "s"))
    took = time.monotonic() - started
    checkpoints = facts["checkpoints"]
    assert checkpoints["error"] is None, checkpoints["error"]
    assert checkpoints["value"]["step_numbers"] == [100, 200]
    abandoned = checkpoints["value"]["pattern_abandoned"]
    assert abandoned["name"] == RUNAWAY_NAME and abandoned["seconds"] == NAME_SECONDS
    assert "built-in namings" in abandoned["why"]
    assert checkpoints["duration"] < NAME_SECONDS + 10
    console = facts["stdoutlog"]
    assert console["error"] is None, console["error"]
    signatures = console["value"]["signatures"]
    assert signatures["fx_nested_trace"]["count"] == 1
    assert f"ran past {PROFILE_PATTERN_SECONDS:g} s" in signatures["xs"]["abandoned"]
    assert "abandoned" not in signatures["fx_nested_trace"]
    assert console["duration"] < PROFILE_PATTERN_SECONDS + 10
    assert took < 60, took


def test_a_bound_stops_a_runaway_match_near_its_time() -> None:
    """The stdlib engine polls signals while it backtracks: the alarm stops the match
    close to the bound, and every later call is refused at once."""
    assert bounded(), "the bound needs the main thread"
    budget = Budget(0.3)
    started = time.monotonic()
    with pytest.raises(Overran):
        budget.run(re.compile(r"^(a+)+(?P<step>\d+)$").fullmatch, RUNAWAY_NAME)
    assert 0.3 <= time.monotonic() - started < 2.0
    with pytest.raises(Overran):
        budget.run(str.upper, "a sane call")
    assert budget.overran


def test_a_bound_leaves_the_callers_alarm_and_handler_as_it_found_them() -> None:
    """A bounded call inside an outer timer gives the timer back, less the time it took,
    with the outer handler in place."""
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        signal.setitimer(signal.ITIMER_REAL, 5.0)
        assert Budget(1.0).run(str.upper, "x") == "X"
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 4.0 < left <= 5.0
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        time.sleep(0.3)
        assert fired == [signal.SIGALRM]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_total_budget_is_spent_across_calls() -> None:
    """A signature's budget is for the whole scan: calls that each stay under it still
    spend it, and the first call past what is left overruns."""
    budget = Budget(1.0, total=0.5)
    budget.run(time.sleep, 0.3)
    with pytest.raises(Overran):
        budget.run(re.compile(r"^(a+)+(?P<step>\d+)$").fullmatch, RUNAWAY_NAME)
    assert 0.45 <= budget.used < 1.5
