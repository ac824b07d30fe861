"""torch's own records of a loop whose shapes change after a resume, written for real:
tests/lib/foreign/recompile_train.py runs 150 steps on one length, then is resumed for
150 more with a new length at every step (compiled with dynamic=False, the limit raised
in its worker), under TORCH_LOGS=recompiles,graph_breaks and TORCH_TRACE=trace/ set in
its launch file. What the records must say follows from the script: in the resumed
process the first length compiles and each of the other 149 recompiles, for a size
guard on ``x``; the diagnosis names the churn from torch's own lines."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_foreign_trainers import diagnose, explain
from tests.lib.foreign_trainers import (
    FOREIGN,
    gloo_workspace,
    log_tail,
    offline_env,
    write_launcher,
)

STEPS, NEW = 150, 150


@pytest.fixture(scope="module")
def resumed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("records") / "ws"
    ws.mkdir()
    shutil.copy(FOREIGN / "recompile_train.py", ws / "train.py")
    write_launcher(
        ws,
        before="export OMP_NUM_THREADS=1 TORCH_LOGS=recompiles,graph_breaks"
        ' TORCH_TRACE="$PWD/trace"',
    )
    for args in (
        ["--steps", str(STEPS), "--warm", str(STEPS)],
        ["--steps", str(STEPS + NEW), "--warm", "0", "--resume"],
    ):
        run = subprocess.run(
            ["sh", str(ws / "launch.sh"), *args], env=offline_env(), timeout=300, check=False
        )
        assert run.returncode == 0, log_tail(ws)
    return ws


@pytest.fixture(scope="module")
def report(resumed: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return diagnose(resumed, tmp_path_factory.mktemp("state"))


def fact(report: dict[str, Any], probe: str) -> Any:
    (found,) = [f for f in report["facts"] if f["probe"] == probe and not f["baseline"]]
    return found["value"]


def test_the_console_records_each_recompile_with_its_size_guard(report: dict[str, Any]) -> None:
    """The console's recompile records count each new length once, each with a size guard on
    ``x`` that grew by one."""
    (score,) = [
        f
        for f in fact(report, "stdoutlog")["torch_logs"]["recompiles"]["functions"]
        if f["function"] == "score"
    ]
    assert score["recompiles"] == NEW - 1, score
    assert score["distinct_new_sizes"] == NEW - 1, score
    assert all(
        g["tensor"] == "x" and g["actual"] == g["expected"] + 1 for g in score["guard_failures"]
    ), score


def test_the_structured_trace_holds_the_resumed_process_compiles(report: dict[str, Any]) -> None:
    """The structured trace has one file per process: the first compiled once, the resumed
    one recompiled at each new length, and both are read without failure."""
    traces = fact(report, "torch_trace")["traces"]
    assert len(traces) == 2, [t["path"] for t in traces]  # one file per process
    scores = [f for t in traces for f in t["functions"] if f["function"] == "score"]
    assert sorted(f["recompiles"] for f in scores) == [0, NEW - 1], scores
    assert sorted(f["compiles"] for f in scores) == [1, NEW], scores
    assert all(t["torch_version"] and not t["failed"] for t in traces), traces


def test_the_churn_is_named_from_torchs_own_lines(report: dict[str, Any]) -> None:
    """Dataset shape churn is verified from torch's own lines: the count of distinct sizes
    it recompiled for, and the tensor size mismatch behind them."""
    churn = [h for h in report["hypotheses"] if h["kind"] == "dataset_shape_churn"]
    assert churn and churn[0]["status"] == "verified", explain(report)
    said = [c["text"] for c in churn[0]["claims"]]
    assert any(
        t.startswith("distinct new sizes torch recompiled 'score' (") and f"= {NEW - 1} " in t
        for t in said
    ), said
    assert any("tensor 'x' size mismatch at index 0" in t for t in said), said


# --- a job's ranks each write their own trace --------------------------------------

RANK_STEPS, GROW_FROM = 40, 21


@pytest.fixture(scope="module")
def ranked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/lib/foreign/gloo_train.py under torchrun, two ranks on gloo, its forward
    compiled, under TORCH_TRACE: from step 21 rank 1's batch gains a row every step, so
    rank 1 recompiles at each of the last 20 steps and rank 0 compiles once."""
    ws = tmp_path_factory.mktemp("ranked") / "ws"
    launch = gloo_workspace(ws, 'TORCH_TRACE="$PWD/trace"')
    args = ["--steps", str(RANK_STEPS), "--log-every", "5", "--compile"]
    run = subprocess.run(
        ["sh", str(launch), *args, "--grow-from", str(GROW_FROM)],
        env=offline_env(),
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, log_tail(ws)
    return ws


def test_each_ranks_trace_is_read_as_that_ranks(
    ranked: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Each rank's structured trace is read as that rank's: only rank 1 recompiled, and the
    churn claim names rank 1's trace."""
    report = diagnose(ranked, tmp_path_factory.mktemp("state"))
    traces = fact(report, "torch_trace")["traces"]
    by_rank = {t["rank"]: t for t in traces}
    assert sorted(by_rank) == [0, 1], [t["path"] for t in traces]
    compiled = {
        rank: [(f["compiles"], f["recompiles"]) for f in t["functions"]]
        for rank, t in by_rank.items()
    }
    assert compiled[0] == [(1, 0)], compiled
    assert compiled[1] == [(1 + RANK_STEPS - GROW_FROM + 1, RANK_STEPS - GROW_FROM + 1)], compiled
    churn = [h for h in report["hypotheses"] if h["kind"] == "dataset_shape_churn"]
    assert churn, explain(report)
    said = [c["text"] for c in churn[0]["claims"]]
    assert any(t.startswith("recompiles of ") and "in rank 1's structured trace" in t for t in said)
