"""processes: the trainer found in /proc, with threads and compile-steering variables."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.probes import processes
from tools.probes._common import Context, ProbeFailure

TRAINER = """
import sys, threading, time
for i in range(3):
    threading.Thread(target=time.sleep, args=(60,), name=f"drafter-{i}", daemon=True).start()
print("ready", flush=True)
time.sleep(60)
"""


@pytest.fixture
def trainer() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    marker = f"train_dflash_{uuid.uuid4().hex[:8]}.py"
    env = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": "/ws/compile_cache",
        "CUDA_VISIBLE_DEVICES": "0,1,2",
        "HF_TOKEN_FOR_TEST": "x",
        "TORCH_API_KEY": "s3cret",
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", TRAINER, marker], env=env, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    try:
        yield proc, marker
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def test_finds_the_trainer(trainer: tuple[subprocess.Popen[bytes], str]) -> None:
    """Matched by a piece of its command line; threads, names, age and env come along,
    and a variable that looks like a credential is redacted."""
    proc, marker = trainer
    out = processes.collect({"match": [marker]}, Context())
    (p,) = out["processes"]
    assert p["pid"] == proc.pid and p["cmdline"][-1] == marker
    assert p["threads"] == 4
    # Python before 3.14 does not pass thread names to the OS: count, not names.
    assert sum(p["thread_names"].values()) == 4
    assert p["env"]["TORCHINDUCTOR_CACHE_DIR"] == "/ws/compile_cache"
    assert p["env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2"
    assert p["env"]["TORCH_API_KEY"] == "<redacted>"
    assert "HF_TOKEN_FOR_TEST" not in p["env"]
    assert p["age_s"] is not None and 0 <= p["age_s"] < 120
    assert p["start_time"] == pytest.approx(time.time() - p["age_s"], abs=5)


def test_no_match_is_an_empty_list() -> None:
    """No process matching is an empty list, complete (not truncated): the trainer is not
    running."""
    out = processes.collect({"match": [f"no-such-{uuid.uuid4().hex}"]}, Context())
    assert out["processes"] == [] and not out["truncated"]


def test_bad_match() -> None:
    """A match given as a bare string, not a list of patterns, fails the probe."""
    with pytest.raises(ProbeFailure):
        processes.collect({"match": "train"}, Context())


def _sleeper(cwd: Path, *args: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-c", "print('ready', flush=True); import time; time.sleep(60)", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    proc.wait()
    assert proc.stdout is not None
    proc.stdout.close()


def test_a_process_that_works_in_the_workspace_is_found_whatever_its_command(
    tmp_path: Path,
) -> None:
    """``python main.py`` run from the workspace holds no "train"; a process elsewhere
    that names the workspace on its command line works there too; one that does neither
    is not listed."""
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    inside = _sleeper(ws / "sub")
    naming = _sleeper(tmp_path, str(ws / "data"))
    elsewhere = _sleeper(tmp_path)
    try:
        miss = f"no-such-{uuid.uuid4().hex}"
        out = processes.collect({"match": [miss], "workspace": str(ws)}, Context())
        pids = {p["pid"] for p in out["processes"]}
        assert {inside.pid, naming.pid} <= pids and elsewhere.pid not in pids
        working = {w["pid"]: w["state"] for w in out["in_workspace"]}
        assert set(working) == pids and all(s in "RS" for s in working.values())
        assert out["workspace"] == str(ws)
        # Through a symlink to it, as a user may name it: /proc shows the real path.
        link = tmp_path / "link"
        link.symlink_to(ws)
        out = processes.collect({"match": [miss], "workspace": str(link)}, Context())
        assert inside.pid in {w["pid"] for w in out["in_workspace"]}
    finally:
        for proc in (inside, naming, elsewhere):
            _stop(proc)


def test_a_workspace_with_no_live_process_is_an_empty_list(tmp_path: Path) -> None:
    """A zombie (exited, not yet reaped by its parent) runs nothing: not a live process
    of the workspace it ran in."""
    zombie = subprocess.Popen([sys.executable, "-c", "pass"], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while (processes.describe(zombie.pid, None, 100, time.time()) or {}).get("state") != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        out = processes.collect({"match": ["no-such"], "workspace": str(tmp_path)}, Context())
        assert out["in_workspace"] == []
    finally:
        zombie.wait()


def test_without_a_workspace_nothing_is_said_about_one() -> None:
    """Without a workspace the fact says nothing about one: no workspace and no in-workspace
    field."""
    out = processes.collect({"match": [f"no-such-{uuid.uuid4().hex}"]}, Context())
    assert "in_workspace" not in out and "workspace" not in out
