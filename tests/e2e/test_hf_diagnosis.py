"""The diagnosis of real Hugging Face ``transformers.Trainer`` runs (tests/lib/hf_runs.py),
as a user gets it from the CLI: the speed read as the Trainer states it, resumes found,
drops placed within one logging interval of where the run's own callback slowed it,
healthy runs not flagged, runs without a speed told what to turn on, a NaN loss and a
hung trainer each stated. Every speed figure of every report is recomputed from the raw
log by the independent oracle (tests/lib/oracle/)."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agent.analysis.progress import STALL_FLOOR
from agent.report.model import SCHEMA
from tests.lib import oracle, oracle_bars
from tests.lib.foreign_trainers import cli, launch, log_tail, offline_env
from tests.lib.hf_runs import (
    HfBarRun,
    HfNanRun,
    HfRun,
    HfSlowRun,
    HfStalledRun,
    trainer_flags,
)

pytestmark = [pytest.mark.slow, pytest.mark.torch]


def diagnose(ws: Path, tmp_path: Path) -> dict[str, Any]:
    """``diagnose --json`` on ``ws`` as it is, its every speed figure checked."""
    state = tmp_path / "xdg-state"
    state.mkdir(exist_ok=True)
    args = ["diagnose", "--target", "local", "--workspace", str(ws), "--non-interactive"]
    run = cli(*args, "--interpreter", sys.executable, "--json", state=state)
    assert run.stdout.strip(), run.stderr[-4000:]
    report: dict[str, Any] = json.loads(run.stdout)
    jsonschema.validate(report, json.loads(SCHEMA.read_text()))
    assert oracle.check_report(report) == []
    assert oracle_bars.check_report(report) == []
    return report


def health(ws: Path, tmp_path: Path) -> dict[str, Any]:
    """``health --format json`` on ``ws``: the one target's result."""
    state = tmp_path / "xdg-state"
    state.mkdir(exist_ok=True)
    args = ["health", "--target", "local", "--workspace", str(ws), "--format", "json"]
    run = cli(*args, "--interpreter", sys.executable, state=state)
    assert run.stdout.strip(), run.stderr[-4000:]
    (target,) = json.loads(run.stdout)["targets"]
    return target  # type: ignore[no-any-return]


def check_named(target: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [c for c in target["checks"] if c["name"] == name]
    return found  # type: ignore[no-any-return]


def copy(run: HfRun, tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(run.ws, ws, symlinks=True)
    return ws


def said(report: dict[str, Any]) -> list[str]:
    """The symptoms section's lines."""
    first = report["sections"][0]
    assert first["title"] == "symptoms", [s["title"] for s in report["sections"]]
    return [line["text"] for line in first["lines"]]


def trainlog(report: dict[str, Any]) -> dict[str, Any]:
    (fact,) = [f for f in report["facts"] if f["probe"] == "trainlog"]
    value: dict[str, Any] = fact["value"]
    return value


def possible_or_confirmed_drop(lines: list[str]) -> str:
    found = [t for t in lines if " fell to " in t or "possible drop to " in t]
    assert found, lines
    return found[0]


def step_of(headline: str) -> int:
    """The step a drop headline places it at (``… at step 50 …``)."""
    return int(headline.split(" at step ", 1)[1].split()[0].rstrip(",").replace(",", ""))


def test_default_logging_is_insufficient_evidence_naming_the_switch(
    hf_default_run: HfRun, tmp_path: Path
) -> None:
    """Trainer's default log holds no speed: "insufficient evidence", saying that
    include_num_input_tokens_seen=True makes it observable; never "no fault found"."""
    report = diagnose(copy(hf_default_run, tmp_path), tmp_path)
    assert report["verdict"] == "insufficient evidence"
    (unknown,) = [t for t in said(report) if t.startswith("the run's speed is not observed")]
    assert "include_num_input_tokens_seen=True" in unknown
    # What the Trainer did state, its summary of the train() call, is shown as it printed
    # it: the figure read from the console by hand here.
    (summary,) = [
        ast.literal_eval(line)
        for line in (hf_default_run.ws / "train.log").read_text().splitlines()
        if line.startswith("{'train_runtime': ")
    ]
    stated = [t for t in said(report) if t.startswith("train_samples_per_second of the Trainer")]
    assert stated, said(report)
    # Shown to four significant digits (whole numbers from 10,000), thousands grouped
    # ("= 1,050 ["): the number read back must be the printed one at that precision.
    shown = float(stated[0].split(" = ")[1].split(" ")[0].replace(",", ""))
    printed = float(summary["train_samples_per_second"])
    assert shown == (round(printed) if printed >= 1e4 else float(f"{printed:.4g}")), stated


def test_a_resume_the_default_log_hides_is_told_by_the_trainers_two_summaries(
    hf_default_run: HfRun, tmp_path: Path
) -> None:
    """The default run resumed from its checkpoint-60 to step 80: its log_history goes on
    and holds no clock, Trainer prints nothing of the resume at its default verbosity;
    the console's second summary of a train() call is what tells it."""
    ws = copy(hf_default_run, tmp_path)
    run = launch(ws, *trainer_flags(80, 5, 20, False), "--resume", timeout=240)
    assert run.returncode == 0, log_tail(ws)
    report = diagnose(ws, tmp_path)
    restarted = [t for t in said(report) if t.startswith("the run restarted (the console holds")]
    assert restarted and "2 summaries of Trainer's train() calls" in restarted[0], said(report)


def test_a_healthy_run_with_tokens_seen_is_no_fault_found_by_its_own_figures(
    hf_tokens_run: HfRun, tmp_path: Path
) -> None:
    """The speed is the Trainer's own train_tokens_per_second, differenced within the
    run; it held (steady, or climbing), no family holds, and nothing compile-related is
    listed above it."""
    report = diagnose(copy(hf_tokens_run, tmp_path), tmp_path)
    assert report["verdict"] == "no fault found", said(report)
    speed = trainlog(report)["speed"]
    assert (speed["kind"], speed["field"]) == ("stated_average", "train_tokens_per_second")
    assert "train_tokens_per_second" not in trainlog(report)["schema"]["ignored"]
    # Steady, or faster in its last quarter (a neighbour's load lifting on a shared
    # machine): a healthy run's, never a drop or a slowdown.
    lines = said(report)
    assert any(
        t.endswith(" is steady (verified)") or " climbed in its last quarter" in t for t in lines
    ), lines
    assert not any(" fell to " in t or "possible drop" in t or " slowed " in t for t in lines)
    titles = [s["title"] for s in report["sections"]]
    assert "not applicable: the run does not compile" in titles
    assert "FX-tracing race under per-device compilation" not in titles


def test_a_run_that_is_over_is_said_to_be_not_running_and_judged_on_its_figures(
    hf_tokens_run: HfRun, tmp_path: Path
) -> None:
    """The healthy run, its files dated ten minutes back as if it had ended then: its
    logs quiet far past its logging interval and no process in the workspace. The report
    says the run is not running and after which step; its verdict is still the one its
    figures give (a run that finished is not a fault)."""
    ws = copy(hf_tokens_run, tmp_path)
    then = time.time() - 600
    for path in ws.rglob("*"):
        os.utime(path, (then, then), follow_symlinks=False)
    report = diagnose(ws, tmp_path)
    over = [t for t in said(report) if t.startswith("the run is not running")]
    assert over, said(report)
    assert over[0].startswith(f"the run is not running after step {hf_tokens_run.steps}: ")
    assert "no process on the target works in the workspace" in over[0]
    assert "live processes that work in the workspace" in " ".join(said(report))
    assert not any(t.startswith("the run stalled") for t in said(report))
    assert report["verdict"] == "no fault found", said(report)


def bar_fact(report: dict[str, Any]) -> dict[str, Any]:
    (fact,) = [f for f in report["facts"] if f["probe"] == "stdoutlog"]
    progress: dict[str, Any] = fact["value"]["progress"]
    return progress["families"][progress["chosen"]]  # type: ignore[no-any-return]


def test_the_progress_bar_is_the_speed_where_the_records_state_none(
    hf_bar_run: HfBarRun, tmp_path: Path
) -> None:
    """The Trainer's defaults: no speed in any record, its tqdm bar on the console. The
    bar's printed rate is the speed (every window recomputed by the bar oracle); the run
    held it and is no fault found, not "speed unknown"."""
    report = diagnose(copy(hf_bar_run, tmp_path), tmp_path)
    lines = said(report)
    assert not any(t.startswith("the run's speed is not observed") for t in lines), lines
    bar = bar_fact(report)
    assert (bar["desc"], bar["total"], bar["unit"]) == ("", str(hf_bar_run.steps), "it/s")
    assert bar["windows"][-1]["last_step"] == hf_bar_run.steps
    label = "it/s (the console's progress bar, as tqdm printed it)"
    assert any(
        t == f"{label} is steady (verified)" or t.startswith(f"{label} climbed in its last")
        for t in lines
    ), lines
    assert report["verdict"] == "no fault found", lines


def slowed(
    run: HfBarRun, tmp_path: Path, source: str
) -> tuple[dict[str, Any], list[str], str, int]:
    """The report on a copy of a slowed run, its symptoms' lines, the drop's headline
    (read from ``source``, the series' label) and the step the slowdown began after."""
    assert run.injected_step is not None
    report = diagnose(copy(run, tmp_path), tmp_path)
    lines = said(report)
    drop = possible_or_confirmed_drop(lines)
    assert drop.startswith(source), drop
    return report, lines, drop, run.injected_step


def test_a_slowdown_the_progress_bar_shows_is_placed_and_never_healthy(
    hf_bar_slow_run: HfBarRun, tmp_path: Path
) -> None:
    """A sleep after step 450: the bar's rate falls and the drop is placed within one
    logging interval of the injected step (the window it starts holds updates from both
    sides: tqdm's rate is a moving average), and the verdict is never "no fault found"."""
    run = hf_bar_slow_run
    report, lines, drop, injected = slowed(run, tmp_path, "it/s (the console's progress bar")
    assert abs(step_of(drop) - injected) <= run.logging_steps, drop
    assert report["verdict"] in ("symptom unexplained", "insufficient evidence"), lines
    # Nor is the nightly check "healthy": with no figure judged against a baseline, the
    # fall inside the run fails the symptoms check (confirmed) or leaves the target not
    # checked (possible), as the verdict above is unexplained or insufficient.
    target = health(copy(run, tmp_path / "health"), tmp_path)
    symptoms = check_named(target, "symptoms")
    confirmed = report["verdict"] == "symptom unexplained"
    assert (target["status"], symptoms["status"]) == (
        ("regressed", "failed") if confirmed else ("could_not_check", "error")
    ), symptoms


def test_where_no_log_states_a_speed_the_checkpoints_pace_shows_the_slowdown(
    hf_pace_slow_run: HfBarRun, tmp_path: Path
) -> None:
    """No speed in the records, no progress bar: the checkpoints' modification times
    (kept by the copy) are the pace of last resort. Nine intervals, four before the
    slowdown: too few to confirm, so a possible drop, placed at the first interval after
    the injected step, and insufficient evidence, never "no fault found"."""
    run = hf_pace_slow_run
    report, lines, drop, injected = slowed(run, tmp_path, "steps/s (between checkpoints, by")
    assert step_of(drop) == injected, drop  # the interval 25 -> 30
    assert not any(t.startswith("the run's speed is not observed") for t in lines), lines
    assert report["verdict"] == "insufficient evidence", lines
    (fact,) = [f for f in report["facts"] if f["probe"] == "checkpoints"]
    for window in fact["value"]["pace"]["windows"]:
        # Each figure from its two checkpoints' steps and times, as the fact cites them.
        by_name = {s["name"]: s for s in fact["value"]["steps"]}
        a, b = by_name[window["from"]], by_name[window["to"]]
        for entry in (a, b):
            assert entry["mtime"] == (Path(fact["value"]["path"]) / entry["name"]).stat().st_mtime
        assert window["speed"] == (b["step"] - a["step"]) / (b["mtime"] - a["mtime"])
        assert window["speed"] * (b["mtime"] - a["mtime"]) == pytest.approx(run.save_steps)


@pytest.mark.parametrize("run_name", ["hf_resumed_slow_60", "hf_resumed_slow_200"])
def test_a_slowdown_after_a_resume_is_placed_within_one_logging_interval(
    run_name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Resumed from checkpoint-40 (train_runtime restarts, steps go on), then a sleep in
    a callback after ``injected_step``: the resume is a restart symptom, the drop is
    placed at the first record after the injected step or the one after it, and the
    verdict is never "no fault found". 60 steps is too short to confirm (a possible
    drop); 200 steps confirm it."""
    run: HfSlowRun = request.getfixturevalue(run_name)
    report = diagnose(copy(run, tmp_path), tmp_path)
    lines = said(report)
    assert report["verdict"] != "no fault found", lines
    restarted = [t for t in lines if t.startswith("the run restarted at step ")]
    assert restarted and step_of(restarted[0]) == run.resumed_from_step + run.logging_steps
    drop = possible_or_confirmed_drop(lines)
    first_slow = run.injected_step + run.logging_steps
    assert 0 <= step_of(drop) - run.injected_step <= run.logging_steps, (drop, first_slow)
    segments = trainlog(report)["speed"]["segments"]
    assert [s["why"] for s in segments] == [
        "the log's first record",
        "the seconds counter went back",
    ]
    if run.steps >= 200:
        assert " fell to " in drop and report["verdict"] == "symptom unexplained", lines
    else:
        assert "not confirmed" in drop and report["verdict"] == "insufficient evidence", lines


def test_a_nan_loss_is_stated_with_the_step_it_began(hf_nan_run: HfNanRun, tmp_path: Path) -> None:
    """The loss turning NaN is stated, dated to the first logged step after the step it
    began at; nothing explains it, so the verdict is "symptom unexplained"."""
    report = diagnose(copy(hf_nan_run, tmp_path), tmp_path)
    (nan,) = [t for t in said(report) if t.startswith("the loss is nan")]
    assert step_of(nan) == hf_nan_run.injected_step + hf_nan_run.logging_steps, nan
    assert report["verdict"] == "symptom unexplained"


def test_a_nan_the_trainer_filtered_out_of_the_loss_shows_in_the_gradient_norm(
    hf_nan_filtered_run: HfNanRun, tmp_path: Path
) -> None:
    """Trainer's logging_nan_inf_filter logs the loss as 0; grad_norm is nan."""
    report = diagnose(copy(hf_nan_filtered_run, tmp_path), tmp_path)
    (nan,) = [t for t in said(report) if t.startswith("the gradient norm (grad_norm) is nan")]
    run = hf_nan_filtered_run
    assert step_of(nan) == run.injected_step + run.logging_steps, nan
    assert report["verdict"] == "symptom unexplained"


def test_a_hung_trainer_is_stated_as_stalled_not_healthy(
    hf_stalled_run: HfStalledRun, tmp_path: Path
) -> None:
    """The live trainer, blocked after its step-30 record: its logs stopped for longer
    than its own logging interval allows while its process sleeps in the workspace.
    Read in place (a copy would have no live process in it)."""
    run = hf_stalled_run
    wait_quiet(run.ws / "train.log", STALL_FLOOR + 1)
    report = diagnose(run.ws, tmp_path)
    stalled = [t for t in said(report) if t.startswith("the run stalled: ")]
    assert stalled, said(report)
    assert f"trainer pid {run.pid} lives in the workspace" in stalled[0]
    assert not any(t.startswith("the run is not running") for t in said(report))
    # What it is doing, one stack dump away: asleep in the user's callback.
    assert report["verdict"] == "fault found"
    own = hypothesis(report, "own_code_time")
    assert own["status"] == "verified", own
    assert any(
        "train.py:" in c["text"] and "HangAfter.on_step_begin" in c["text"] for c in own["claims"]
    )


def hypothesis(report: dict[str, Any], kind: str) -> dict[str, Any]:
    (found,) = [h for h in report["hypotheses"] if h["kind"] == kind]
    return found  # type: ignore[no-any-return]


@contextmanager
def live_run(hf_run: HfRun, tmp_path: Path, *flags: str) -> Iterator[int]:
    """The Trainer running in a fresh copy of ``hf_run``'s workspace (its script, data and
    launch file) with ``flags`` for many steps, in the background; yields its pid once
    its console holds two records, kills it after."""
    ws = tmp_path / "live"
    ws.mkdir()
    for name in ("train.py", "launch.sh", "data"):
        src = hf_run.ws / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, ws / name)
    args = [*trainer_flags(100_000, 2, 100_000, True), *flags]
    proc = subprocess.Popen(
        ["sh", str(ws / "launch.sh"), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=offline_env(HF_HOME=str(tmp_path / "hf-home")),
    )
    try:
        deadline = time.monotonic() + 120
        log = ws / "train.log"
        while not log.exists() or log.read_text().count("{'loss'") < 2:
            assert proc.poll() is None, log_tail(ws)
            assert time.monotonic() < deadline, log_tail(ws)
            time.sleep(0.2)
        yield proc.pid
    finally:
        proc.kill()
        proc.wait(timeout=30)


def live_verified(
    hf_run: HfRun, tmp_path: Path, kind: str, activity: str, *flags: str
) -> tuple[dict[str, Any], str]:
    """The report on a live run of ``hf_run`` with ``flags``, asserting its ``kind``
    family verified on the live pid doing ``activity``; and that family's claims' text."""
    with live_run(hf_run, tmp_path, *flags) as pid:
        report = diagnose(tmp_path / "live", tmp_path)
    found = hypothesis(report, kind)
    assert found["status"] == "verified", found
    said_ = " ".join(c["text"] for c in found["claims"])
    assert f"of pid {pid}" in said_ and f"'{activity}'" in said_, said_
    return report, said_


def test_a_sleep_left_in_a_callback_is_found_in_the_live_trainers_stacks(
    hf_default_run: HfRun, tmp_path: Path
) -> None:
    """A running Trainer whose callback sleeps 0.3 s after every step: its log says only
    that it is slow; its stacks, sampled by py-spy while it runs, show the main thread
    asleep in ``SlowAfter.on_step_end`` at the sleep's line, the process idle."""
    slow = ("--slow-after", "0", "--slow-seconds", "0.3")
    report, said_ = live_verified(hf_default_run, tmp_path, "own_code_time", "sleeping", *slow)
    assert "SlowAfter.on_step_end" in said_ and "time.sleep(self.seconds)" in said_, said_
    assert report["verdict"] == "fault found"


def test_a_slow_dataset_is_found_in_the_live_trainers_stacks(
    hf_default_run: HfRun, tmp_path: Path
) -> None:
    """A running Trainer whose dataset takes 0.05 s an item (eight a step): the main
    thread's stacks are inside torch's data loader, at the dataset's own
    ``__getitem__`` and its sleep: input-bound, and not blamed on the trainer's own code
    as a sleep of its own (the loader's frame is the context)."""
    slow = ("--slow-data", "0.05")
    report, said_ = live_verified(hf_default_run, tmp_path, "input_bound", "data_loading", *slow)
    assert "TokenIds.__getitem__" in said_ and "time.sleep(self.seconds)" in said_, said_
    assert hypothesis(report, "own_code_time")["status"] == "refuted"


def test_a_trainer_running_library_code_is_not_blamed_on_its_own_code(
    hf_default_run: HfRun, tmp_path: Path
) -> None:
    """The same Trainer without the sleep: its main thread runs torch and transformers,
    so the family is tested on it and refuted, naming what the thread did."""
    with live_run(hf_default_run, tmp_path) as pid:
        report = diagnose(tmp_path / "live", tmp_path)
    own = hypothesis(report, "own_code_time")
    assert own["status"] == "refuted", own
    assert any(f"of pid {pid} mostly did" in c["text"] for c in own["claims"]), own


def wait_quiet(log: Path, seconds: float) -> None:
    """Until ``log`` has not changed for ``seconds`` (the doctor's floor for a stall)."""
    deadline = time.time() + seconds + 60
    while time.time() - log.stat().st_mtime < seconds:
        assert time.time() < deadline, f"{log} kept growing"
        time.sleep(0.5)
