"""Live trainers diagnosed while they run: what their threads are doing, read by the live
probe (py-spy's stacks, per-thread CPU), is the evidence of causes no log states.

The Trainer slowed by a sleep in its callback, and one running plain library code, are in
test_hf_diagnosis.py (they share its workspaces); the hung Trainer too."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.analysis.progress import STALL_FLOOR
from agent.report.threads import COLORS
from tests.lib import oracle
from tests.lib.browser import browse
from tests.lib.foreign_trainers import (
    CLI,
    cli,
    gloo_workspace,
    offline_env,
    start_in_background,
)
from tests.lib.need import need
from tests.lib.pngread import pixels
from tests.lib.sshd import SSHServer

pytestmark = [pytest.mark.slow, pytest.mark.torch]


@pytest.fixture
def deadlocked(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """tests/lib/foreign/locks_train.py running in a workspace of its own: two workers
    train, then take two locks in opposite orders at step 40; yields once its log has
    been quiet past the doctor's stall floor, kills it after."""
    ws = tmp_path / "ws"
    proc = start_in_background("locks_train.py", ws, "--deadlock-after", "40")
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
    # The HTML report draws each thread's samples as a bar: held to the live fact as a
    # real browser parsed the page, and the two workers' bars all the colour of waiting.
    page = html_report(tmp_path / "state", tmp_path)
    facts = {f["id"]: f["value"] for f in report["facts"] if f["probe"] == "live"}
    dom = browse(page, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr
    assert oracle.check_thread_bars(dom.stdout, facts) == []
    shot = tmp_path / "report.png"
    done = browse(page, tmp_path, f"--screenshot={shot}", "--window-size=1000,4000")
    assert done.returncode == 0 and shot.exists(), done.stderr
    width, _height, px = pixels(shot)
    waiting = [int(COLORS["waiting"][i : i + 2], 16) for i in (1, 3, 5)]
    rows: dict[int, int] = {}
    for k, rgb in enumerate(px):
        if all(abs(c - w) <= 4 for c, w in zip(rgb, waiting, strict=True)):
            rows[k // width] = rows.get(k // width, 0) + 1
    # Two bars of 420 px, 14 px tall: at least 2 x 10 rows of nearly the whole width.
    assert sum(n >= 400 for n in rows.values()) >= 20, sorted(rows.items())[:40]


def html_report(state: Path, tmp: Path) -> Path:
    """The session's HTML report, rendered from its transcript by ``report``."""
    (transcript,) = state.glob("dflash-doctor/sessions/*/transcript.jsonl")
    page = tmp / "report.html"
    run = cli("report", str(transcript), "--format", "html", "--out", str(page), state=state)
    assert run.returncode == 0, run.stderr[-2000:]
    return page


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
    proc = start_in_background("loop_train.py", ws, "--log-every", "10")
    log = ws / "runs" / "progress.csv"
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


@pytest.fixture
def rank_stopped(tmp_path: Path) -> Iterator[tuple[Path, list[int]]]:
    """tests/lib/foreign/gloo_train.py under torchrun (its console script, two ranks,
    gloo on 127.0.0.1) where rank 1 stops calling all_reduce after step 40; yields the
    workspace, torchrun's pid and the ranks' once both logs have been quiet past the
    stall floor, kills the job after."""
    ws = tmp_path / "ws"
    launch = gloo_workspace(ws)
    proc = subprocess.Popen(
        ["sh", str(launch), "--stop-after", "40"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=offline_env(),
        start_new_session=True,
    )
    logs = [ws / "logs" / f"rank{r}.jsonl" for r in (0, 1)]
    try:
        deadline = time.monotonic() + STALL_FLOOR + 180
        while not all(log.exists() for log in logs) or any(
            time.time() - log.stat().st_mtime < STALL_FLOOR + 1 for log in logs
        ):
            assert proc.poll() is None, (ws / "train.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the logs kept growing"
            time.sleep(0.5)
        for log in logs:
            steps = [json.loads(line)["step"] for line in log.read_text().splitlines()]
            assert max(steps) == 40, (log, steps[-3:])
        yield ws, [proc.pid, *sorted(p for p in children(proc.pid) if rank_of(p) is not None)]
    finally:
        # torchrun starts each rank in a session of its own: killed one by one.
        ranks = children(proc.pid)
        os.killpg(proc.pid, 9)
        for pid in ranks:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        proc.wait(timeout=30)


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def rank_of(pid: int) -> int | None:
    env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    found = [int(e[5:]) for e in env if e.startswith(b"RANK=")]
    return found[0] if found else None


def test_a_rank_that_stops_calling_all_reduce_leaves_its_peer_waiting_in_it(
    rank_stopped: tuple[Path, list[int]], tmp_path: Path
) -> None:
    """Both logs stopped at step 40 with no error; torchrun and both ranks live. Rank 0's
    stacks show it inside ``all_reduce`` in every sample, idle: blocked, the op named.
    Rank 1's show where it stopped: asleep in its own ``wait_for_go``. torchrun's agent,
    asleep in its own library below its console script, is not blamed."""
    ws, (agent, *workers) = rank_stopped
    ranks = sorted(workers, key=lambda p: rank_of(p) or 0)
    assert [rank_of(p) for p in ranks] == [0, 1]
    report = diagnose(ws, tmp_path / "state")
    blocked = [h for h in report["hypotheses"] if h["kind"] == "threads_blocked"]
    verified = [h for h in blocked if h["status"] == "verified"]
    assert len(verified) == 1, blocked
    said = " ".join(c["text"] for c in verified[0]["claims"])
    main = f"thread 'MainThread' (tid {ranks[0]}) of pid {ranks[0]}"
    assert f"the collective {main} waits in = 'all_reduce'" in said, said
    own = [h for h in report["hypotheses"] if h["kind"] == "own_code_time"]
    (stuck,) = [h for h in own if h["status"] == "verified"]
    said = " ".join(c["text"] for c in stuck["claims"])
    assert f"of pid {ranks[1]}" in said and "wait_for_go" in said, said
    assert "time.sleep(0.5)" in said, said
    (launcher,) = [h for h in own if f"of pid {agent} " in " ".join(c["text"] for c in h["claims"])]
    assert launcher["status"] == "refuted", launcher
    assert report["verdict"] == "fault found"
    symptoms = [line["text"] for line in report["sections"][0]["lines"]]
    assert any(t.startswith("the run stalled") for t in symptoms), symptoms


# A loop with torch imported that sleeps after each step in a callback of its own.
NAPPER = """
import time
import torch


def on_step_end():
    time.sleep(0.3)


w = torch.randn(64, 64)
print("ready", flush=True)
while True:
    x = torch.randn(64, 64) @ w
    on_step_end()
"""


@pytest.mark.ssh
def test_stacks_are_read_through_the_real_sshd_and_a_pct_hop(
    sshd_server: SSHServer, tmp_path: Path
) -> None:
    """The same live probe over SSH and the stand-in ``pct exec`` hop (tests/lib/sshd.py):
    py-spy, found beside the target's Python, reads the trainer's stacks there, and the
    sleep in its own callback is named with its line."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "train.py").write_text(NAPPER)
    proc = subprocess.Popen(
        [sys.executable, "train.py"], cwd=ws, stdout=subprocess.PIPE, env=offline_env()
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        args = ["diagnose", "--target", f"{sshd_server.uri}/pct:200", "--workspace", str(ws)]
        keys = ["--identity", str(sshd_server.identity), "--known-hosts"]
        run = cli(
            *args,
            *keys,
            str(sshd_server.known_hosts),
            "--interpreter",
            sys.executable,
            "--non-interactive",
            "--json",
            state=tmp_path / "state",
        )
    finally:
        proc.kill()
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()
    assert run.stdout.strip(), run.stderr[-3000:]
    report = json.loads(run.stdout)
    assert report["target"] == f"{sshd_server.uri}/pct:200", report["target"]
    (live,) = [f["value"] for f in report["facts"] if f["probe"] == "live"]
    (traced,) = [p for p in live["processes"] if p["pid"] == proc.pid]
    assert traced["stacks_error"] is None and live["py_spy_from"] == "beside the target's Python"
    found = [h for h in report["hypotheses"] if h["kind"] == "own_code_time"]
    (own,) = [h for h in found if f"of pid {proc.pid}" in " ".join(c["text"] for c in h["claims"])]
    assert own["status"] == "verified", own
    said = " ".join(c["text"] for c in own["claims"])
    assert "on_step_end" in said and "'time.sleep(0.3)'" in said, said
    assert report["verdict"] == "fault found"


SYSTEM_PYTHON = Path("/usr/bin/python3")

# A trainer's loop with no py-spy anywhere near it: the system Python, asleep in its own
# callback.
BARE = """
import time


def on_step_end():
    time.sleep(0.3)


print("ready", flush=True)
while True:
    on_step_end()
"""


def carried_run(tmp_path: Path, target: str, *extra: str) -> tuple[dict[str, Any], int]:
    """``diagnose`` of BARE, running under the system Python, both with a PATH that holds
    no py-spy; the report and the trainer's pid."""
    need(SYSTEM_PYTHON.exists(), "/usr/bin/python3", "the target's own Python")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "train.py").write_text(BARE)
    env = {**offline_env(XDG_STATE_HOME=str(tmp_path / "state")), "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(
        [str(SYSTEM_PYTHON), "train.py"], cwd=ws, stdout=subprocess.PIPE, env=env
    )
    env["TMPDIR"] = str(tmp_path / "tmp")
    (tmp_path / "tmp").mkdir()
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        args = ["diagnose", "--target", target, "--workspace", str(ws), *extra]
        run = subprocess.run(
            [str(CLI), *args, "--interpreter", str(SYSTEM_PYTHON), "--non-interactive", "--json"],
            capture_output=True,
            text=True,
            timeout=240,
            env=env,
        )
    finally:
        proc.kill()
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()
    assert run.stdout.strip(), run.stderr[-3000:]
    return json.loads(run.stdout), proc.pid


def assert_carried(report: dict[str, Any], pid: int) -> str:
    """Two live facts: the first found no py-spy, the second read the stacks with the
    one carried there; the path it ran from."""
    first, second = [f["value"] for f in report["facts"] if f["probe"] == "live"]
    assert first["py_spy"] is None and first["py_spy_from"] is None
    assert second["py_spy_from"].startswith("carried over the transport"), second
    (traced,) = [p for p in second["processes"] if p["pid"] == pid]
    assert traced["stacks_error"] is None and traced["threads"][0]["samples"] >= 1, traced
    assert traced["threads"][0]["activity"] == "sleeping", traced["threads"][0]
    path = str(second["py_spy"])
    assert "/dflash-doctor-py-spy." in path, path
    return path


def test_a_target_without_py_spy_gets_this_machines_carried_and_removed(
    tmp_path: Path,
) -> None:
    """Locally: the target's PATH and its Python's directory hold no py-spy; diagnose
    carries its own into a private directory under the target's TMPDIR, reads the
    stacks with it, and removes the directory."""
    report, pid = carried_run(tmp_path, "local")
    path = Path(assert_carried(report, pid))
    assert path.parent.parent == tmp_path / "tmp", path
    assert not path.parent.exists() and list((tmp_path / "tmp").iterdir()) == []
    # Its transcript replays with no machine: the carry's commands answered from it.
    (transcript,) = (tmp_path / "state").glob("dflash-doctor/sessions/*/transcript.jsonl")
    replayed = cli("replay", str(transcript), "--json", state=tmp_path / "state")
    assert replayed.returncode == 0, replayed.stdout[-2000:] + replayed.stderr[-2000:]


@pytest.mark.ssh
def test_py_spy_is_carried_through_the_real_sshd_too(
    sshd_server: SSHServer, tmp_path: Path
) -> None:
    """A target with no py-spy of its own, reached through the real sshd, gets one carried
    over the transport to read the trainer's stacks; the carried copy's folder is gone
    afterwards."""
    report, pid = carried_run(
        tmp_path,
        sshd_server.uri,
        "--identity",
        str(sshd_server.identity),
        "--known-hosts",
        str(sshd_server.known_hosts),
    )
    path = Path(assert_carried(report, pid))
    assert not path.parent.exists(), path


def diagnosed_live(
    script: str, ws: Path, log: str, records_first: int, *args: str
) -> tuple[dict[str, Any], int]:
    """tests/lib/foreign/``script`` running in ``ws`` with ``args``, diagnosed once its
    ``logs/<log>`` holds ``records_first`` lines; the report and the trainer's pid."""
    proc = start_in_background(script, ws, *args)
    try:
        wait_records(ws / "logs" / log, proc, records_first, ws)
        return diagnose(ws, ws.parent / "state"), proc.pid
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_the_fx_race_running_silently_is_caught_in_the_act(tmp_path: Path) -> None:
    """tests/lib/foreign/fx_race_train.py: a worker thread calls a compiled function
    while an exporter thread FX-traces a module in a loop, dynamo's nested-trace error
    off, so nothing is printed. The live stacks show the exporter tracing while the
    worker is inside the compiled function, in one dump: the FX race, verified."""
    ws = tmp_path / "ws"
    report, _ = diagnosed_live("fx_race_train.py", ws, "steps.jsonl", 20, "--nested", "eager")
    assert "Detected that you are using FX" not in (ws / "train.log").read_text()
    (race,) = [h for h in report["hypotheses"] if h["kind"] == "fx_trace_race"]
    assert race["status"] == "verified", race
    (caught,) = [c["text"] for c in race["claims"] if " FX-traced while thread " in c["text"]]
    assert "thread 'exporter'" in caught and "thread 'worker-0'" in caught, caught
    assert report["verdict"] == "fault found"


def test_a_loop_waiting_on_busy_data_loader_workers_is_input_bound(tmp_path: Path) -> None:
    """tests/lib/foreign/loader_train.py: a DataLoader's two worker processes do real work
    per item while the model step is tiny. The loop's thread waits inside torch's data
    loader in its samples; the cores its workers used are cited: input-bound."""
    report, pid = diagnosed_live("loader_train.py", tmp_path / "ws", "metrics.jsonl", 6)
    found = [h for h in report["hypotheses"] if h["kind"] == "input_bound"]
    (main,) = [h for h in found if f"of pid {pid}" in " ".join(c["text"] for c in h["claims"])]
    assert main["status"] == "verified", main
    said = [c["text"] for c in main["claims"]]
    (workers,) = [t for t in said if t.startswith(f"cores pid {pid}'s 2 child process(es)")]
    assert float(workers.split(" = ")[1].split(" ")[0]) > 0.3, workers


def test_a_recompile_storm_is_compiled_code_not_running(tmp_path: Path) -> None:
    """tests/lib/foreign/recompile_train.py: warm on one length for 12 records, then a new
    length at every step, compiled with dynamic=False and the recompile limit raised in
    the worker, nothing printed. The run slows, and its worker is sampled compiling for
    most of the window: compiled code not running (the eager-fallback family), verified
    on the live stacks alone."""
    report, pid = diagnosed_live("recompile_train.py", tmp_path / "ws", "steps.jsonl", 20)
    (fallback,) = [h for h in report["hypotheses"] if h["kind"] == "silent_eager_fallback"]
    assert fallback["status"] == "verified", fallback
    said = [c["text"] for c in fallback["claims"]]
    assert any(
        t.startswith("what thread 'worker-0'") and f"of pid {pid} mostly did = 'compiling'" in t
        for t in said
    ), said
    assert report["verdict"] == "fault found"
