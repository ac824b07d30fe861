"""Live trainers diagnosed while they run: what their threads are doing, read by the live
probe (py-spy's stacks, per-thread CPU), is the evidence of causes no log states.

The Trainer slowed by a sleep in its callback, and one running plain library code, are in
test_hf_diagnosis.py (they share its workspaces); the hung Trainer too."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.progress import STALL_FLOOR
from tests.lib.foreign_trainers import FOREIGN, cli, offline_env, write_launcher

pytestmark = [pytest.mark.slow, pytest.mark.torch]


@pytest.fixture
def deadlocked(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """tests/lib/foreign/locks_train.py running in a workspace of its own: two workers
    train, then take two locks in opposite orders at step 40; yields once its log has
    been quiet past the doctor's stall floor, kills it after."""
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(FOREIGN / "locks_train.py", ws / "train.py")
    write_launcher(ws, before="export OMP_NUM_THREADS=1")
    proc = subprocess.Popen(
        ["sh", str(ws / "launch.sh"), "--deadlock-after", "40"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=offline_env(),
    )
    log = ws / "logs" / "metrics.jsonl"
    try:
        deadline = time.monotonic() + STALL_FLOOR + 120
        while not log.exists() or time.time() - log.stat().st_mtime < STALL_FLOOR + 1:
            assert proc.poll() is None, (ws / "train.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the log kept growing"
            time.sleep(0.5)
        records = [json.loads(line) for line in log.read_text().splitlines()]
        assert max(r["step"] for r in records) == 40, records[-3:]
        yield ws, proc.pid
    finally:
        proc.kill()
        proc.wait(timeout=30)


def diagnose(ws: Path, state: Path) -> dict[str, Any]:
    args = ["diagnose", "--target", "local", "--workspace", str(ws), "--non-interactive"]
    run = cli(*args, "--interpreter", sys.executable, "--json", state=state)
    assert run.stdout.strip(), run.stderr[-4000:]
    report: dict[str, Any] = json.loads(run.stdout)
    return report


def test_two_threads_deadlocked_on_two_locks_are_named_with_the_lines_they_wait_at(
    deadlocked: tuple[Path, int], tmp_path: Path
) -> None:
    """Its log stopped at step 40 with no error; its process lives. The stacks show
    each worker waiting, in every sample, at the ``with`` of the lock the other holds,
    the process using no CPU: threads blocked, verified, and the run stalled."""
    ws, pid = deadlocked
    report = diagnose(ws, tmp_path / "state")
    (blocked,) = [h for h in report["hypotheses"] if h["kind"] == "threads_blocked"]
    assert blocked["status"] == "verified", blocked
    said = [c["text"] for c in blocked["claims"]]
    for worker, line in (("worker-0", "with stats_lock:"), ("worker-1", "with log_lock:")):
        waits = [t for t in said if f"the line thread '{worker}'" in t]
        assert waits and f"'{line}'" in waits[0], said
    assert any(t.startswith(f"cores pid {pid} used") for t in said), said
    assert report["verdict"] == "fault found"
    symptoms = [line["text"] for line in report["sections"][0]["lines"]]
    assert any(t.startswith("the run stalled after step 40") for t in symptoms), symptoms


def records(log: Path) -> int:
    return max(0, len(log.read_text().splitlines()) - 1) if log.exists() else 0


def wait_records(log: Path, proc: subprocess.Popen[bytes], count: int, ws: Path) -> None:
    deadline = time.monotonic() + 180
    while records(log) < count:
        assert proc.poll() is None, (ws / "train.log").read_text()[-2000:]
        assert time.monotonic() < deadline, f"{log}: {records(log)} records"
        time.sleep(0.2)


def test_a_busy_neighbour_that_slows_a_plain_loop_is_named_with_its_cpu(
    tmp_path: Path,
) -> None:
    """A hand-written loop (tests/lib/foreign/loop_train.py: CSV progress, one thread)
    runs alone, then twice as many busy processes as the host has cores start beside it:
    its own samples/s falls, and the live probe finds the cores saturated, threads
    queued for them, and the neighbours named with their CPU: host contention,
    verified, explaining the drop."""
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(FOREIGN / "loop_train.py", ws / "train.py")
    write_launcher(ws, before="export OMP_NUM_THREADS=1")
    log = ws / "runs" / "progress.csv"
    proc = subprocess.Popen(
        ["sh", str(ws / "launch.sh"), "--log-every", "10"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=offline_env(),
    )
    hogs: list[subprocess.Popen[bytes]] = []
    try:
        wait_records(log, proc, 80, ws)
        alone = records(log)
        hogs = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(2 * (os.cpu_count() or 1))
        ]
        wait_records(log, proc, alone + 80, ws)
        report = diagnose(ws, tmp_path / "state")
    finally:
        for p in [*hogs, proc]:
            p.kill()
            p.wait(timeout=30)
    found = [h for h in report["hypotheses"] if h["kind"] == "host_contention"]
    assert found and found[0]["status"] == "verified", found
    said = [c["text"] for c in found[0]["claims"]]
    named = [t for t in said if any(t.startswith(f"cores pid {h.pid} (") for h in hogs)]
    assert named, said
    assert report["verdict"] == "fault found", said
    symptoms = [line["text"] for line in report["sections"][0]["lines"]]
    drops = [t for t in symptoms if "samples/s" in t and ("fell" in t or "drop" in t)]
    assert drops, symptoms
