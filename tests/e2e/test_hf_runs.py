"""The real ``transformers.Trainer`` runs of tests/lib/hf_runs.py say what their fixtures
claim, read from the raw files a user has (``train.log``, ``out/checkpoint-N/
trainer_state.json``, ``/proc``), with no code of the doctor: the facts the diagnosis tests
check the doctor against are the runs' own."""

from __future__ import annotations

import ast
import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from tests.lib.hf_runs import HfNanRun, HfRun, HfSlowRun, HfStalledRun

pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.timeout(300)]

# What the Trainer prints with ``disable_tqdm=True`` (its PrinterCallback): one dict a line,
# floats formatted ``.4g`` as strings; the training records begin with the loss, the
# summary at the end of each ``train()`` with its runtime.
RECORD = "{'loss':"
SUMMARY = "{'train_runtime':"


def console(ws: Path, prefix: str) -> list[dict[str, Any]]:
    """The dicts on the console whose line begins with ``prefix``, in order."""
    lines = (ws / "train.log").read_text().splitlines()
    return [ast.literal_eval(line) for line in lines if line.startswith(prefix)]


def history(run: HfRun, step: int | None = None) -> list[dict[str, Any]]:
    """``log_history`` of the checkpoint at ``step`` (the last one by default)."""
    path = run.ws / "out" / f"checkpoint-{step or run.steps}" / "trainer_state.json"
    records: list[dict[str, Any]] = json.loads(path.read_text())["log_history"]
    return records


def record_steps(run: HfRun) -> list[int]:
    return list(range(run.logging_steps, run.steps + 1, run.logging_steps))


def test_default_run_is_a_users_layout(hf_default_run: HfRun) -> None:
    """launch.sh appends the console to train.log; the Trainer writes a checkpoint every
    ``save_steps`` with its trainer_state.json, a record every ``logging_steps``."""
    run, ws = hf_default_run, hf_default_run.ws
    assert ">> train.log 2>&1" in (ws / "launch.sh").read_text()
    assert (ws / "train.py").is_file() and (ws / "data" / "train.jsonl").is_file()
    saved = range(run.save_steps, run.steps + 1, run.save_steps)
    assert sorted(p.name for p in (ws / "out").iterdir()) == [f"checkpoint-{s}" for s in saved]
    assert all((ws / "out" / f"checkpoint-{s}" / "trainer_state.json").is_file() for s in saved)
    assert [r["step"] for r in history(run)] == record_steps(run)


def test_default_run_records_have_no_tokens_seen(hf_default_run: HfRun) -> None:
    """At least ten records of loss, grad_norm, learning_rate, epoch (no step, no tokens,
    no runtime); one summary line."""
    records = console(hf_default_run.ws, RECORD)
    assert len(records) == len(record_steps(hf_default_run)) >= 10
    assert all(set(r) == {"loss", "grad_norm", "learning_rate", "epoch"} for r in records)
    assert all("num_input_tokens_seen" not in r for r in history(hf_default_run))
    assert len(console(hf_default_run.ws, SUMMARY)) == 1


def test_tokens_run_records_count_tokens_and_time(hf_tokens_run: HfRun) -> None:
    """Each record adds the tokens seen so far and the session's runtime and mean rate;
    the tokens grow by the same count every record, the runtime only grows."""
    records = console(hf_tokens_run.ws, RECORD)
    assert len(records) == len(record_steps(hf_tokens_run))
    speed = {"num_input_tokens_seen", "train_runtime", "train_tokens_per_second"}
    assert all(speed <= set(r) for r in records)
    logged = history(hf_tokens_run)
    tokens = [r["num_input_tokens_seen"] for r in logged]
    assert len({b - a for a, b in zip([0, *tokens], tokens, strict=False)}) == 1
    runtimes = [r["train_runtime"] for r in logged]
    assert runtimes == sorted(runtimes) and runtimes[0] > 0


@pytest.fixture(params=["hf_resumed_slow_60", "hf_resumed_slow_200"])
def slow_run(request: pytest.FixtureRequest) -> HfSlowRun:
    run: HfSlowRun = request.getfixturevalue(request.param)
    return run


def test_resumed_history_continues_and_restarts_runtime(slow_run: HfSlowRun) -> None:
    """The checkpoint resumed from holds the first run's records; the resumed run's
    log_history goes on from them, one record every ``logging_steps`` to the end, its
    ``train_runtime`` starting again from zero at the resume."""
    resumed = slow_run.resumed_from_step
    first = history(slow_run, resumed)
    assert first[-1]["step"] == resumed
    logged = history(slow_run)
    assert logged[: len(first)] == first
    assert [r["step"] for r in logged] == record_steps(slow_run)
    after = [r for r in logged if r["step"] > resumed]
    assert after[0]["train_runtime"] < first[-1]["train_runtime"]
    for session in (first, after):
        runtimes = [r["train_runtime"] for r in session]
        assert runtimes == sorted(runtimes)


def test_resumed_console_has_both_sessions(slow_run: HfSlowRun) -> None:
    """train.log holds both runs: each session's records, each ending in a summary."""
    lines = (slow_run.ws / "train.log").read_text().splitlines()
    marks = [prefix for line in lines for prefix in (RECORD, SUMMARY) if line.startswith(prefix)]
    first = slow_run.resumed_from_step // slow_run.logging_steps
    second = slow_run.steps // slow_run.logging_steps - first
    assert marks == [RECORD] * first + [SUMMARY] + [RECORD] * second + [SUMMARY]


def test_resume_is_not_said_on_the_console(slow_run: HfSlowRun) -> None:
    """transformers logs its resume ("Resuming training from checkpoint with epoch E and
    global step S", and "Continuing training from checkpoint, restoring any callbacks" when
    callback states are restored) at INFO, which the default ``log_level="passive"``
    (transformers' WARNING) does not print: only the records say a run resumed."""
    log = (slow_run.ws / "train.log").read_text()
    assert "Resuming training from checkpoint" not in log
    assert "Continuing training from checkpoint" not in log


def test_slowed_records_rate_falls_to_a_third(slow_run: HfSlowRun) -> None:
    """In the resumed session, each record after ``injected_step`` has a token rate (tokens
    over runtime since the record before, the session starting at zero runtime with the
    checkpoint's tokens) at most a third of the median rate of the records before it."""
    resumed = slow_run.resumed_from_step
    logged = history(slow_run)
    start = next(r for r in logged if r["step"] == resumed)
    previous = (start["num_input_tokens_seen"], 0.0)
    before: list[float] = []
    after: list[float] = []
    for r in (r for r in logged if r["step"] > resumed):
        tokens, runtime = r["num_input_tokens_seen"], r["train_runtime"]
        rate = (tokens - previous[0]) / (runtime - previous[1])
        (after if r["step"] > slow_run.injected_step else before).append(rate)
        previous = (tokens, runtime)
    assert before and after
    assert max(after) <= statistics.median(before) / 3, (before, after)


def test_nan_run_logs_nan_after_the_injected_step(hf_nan_run: HfNanRun) -> None:
    """With ``logging_nan_inf_filter=False`` the records up to ``injected_step`` have a
    finite loss, every later record a NaN loss and grad_norm, in trainer_state.json (a bare
    ``NaN``) and on the console (``'nan'``)."""
    run = hf_nan_run
    for r in history(run):
        bad = r["step"] > run.injected_step
        assert math.isnan(r["loss"]) is bad and math.isnan(r["grad_norm"]) is bad, r
    shown = console(run.ws, RECORD)
    cut = run.injected_step // run.logging_steps
    assert all(r["loss"] != "nan" for r in shown[:cut])
    assert all(r["loss"] == "nan" == r["grad_norm"] for r in shown[cut:])
    assert console(run.ws, SUMMARY)[0]["train_loss"] == "nan"


def test_filtered_nan_run_logs_zero_loss(hf_nan_filtered_run: HfNanRun) -> None:
    """Under the Trainer's default NaN filter the records after ``injected_step`` log a
    loss of 0 and a NaN grad_norm; the summary's train_loss stays finite."""
    run = hf_nan_filtered_run
    for r in history(run):
        if r["step"] > run.injected_step:
            assert r["loss"] == 0 and math.isnan(r["grad_norm"]), r
        else:
            assert r["loss"] > 0 and math.isfinite(r["grad_norm"]), r
    assert math.isfinite(float(console(run.ws, SUMMARY)[0]["train_loss"]))


def test_stalled_trainer_is_alive_and_silent(hf_stalled_run: HfStalledRun) -> None:
    """The trainer's process sleeps (state S in /proc/PID/stat), is the launched
    ``train.py``, and its log neither grows nor ends: the last record is step
    ``injected_step``'s, no summary, no checkpoint after it."""
    run = hf_stalled_run
    proc = Path(f"/proc/{run.pid}")
    state = (proc / "stat").read_text().rpartition(")")[2].split()[0]
    assert state == "S"
    assert b"train.py" in (proc / "cmdline").read_bytes()
    log = run.ws / "train.log"
    size = log.stat().st_size
    time.sleep(2)
    assert log.stat().st_size == size
    assert len(console(run.ws, RECORD)) == run.injected_step // run.logging_steps
    assert console(run.ws, SUMMARY) == []
    saved = sorted(p.name for p in (run.ws / "out").iterdir())
    kept = range(run.save_steps, run.injected_step + 1, run.save_steps)
    assert saved == [f"checkpoint-{s}" for s in kept]
