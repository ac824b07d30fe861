"""live: a real process's threads sampled by the real py-spy, each classified by what its
stacks show (sleeping, waiting on a lock, computing in its own code), with its CPU share
over the window; the host's other busy processes; the permission preflight."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.facts import Fact, Ledger
from agent.hypotheses import verify
from agent.rules.base import Evidence
from agent.rules.own_code import OwnCodeTime
from tests.lib.need import need
from tools.probes import live
from tools.probes._common import Context
from tools.sweep import SweepSpec, build_plan, render

# Three threads doing three things, each in the script's own code: one sleeps in a
# function of its own, two wait on each other's lock (a deadlock), one spins a loop.
TRAINER = textwrap.dedent(
    """
    import threading, time
    a, b = threading.Lock(), threading.Lock()

    def nap():
        while True:
            time.sleep(0.5)

    def first():
        with a:
            time.sleep(0.2)
            with b:
                pass

    def second():
        with b:
            time.sleep(0.2)
            with a:
                pass

    def spin():
        x = 0
        while True:
            x = (x * 31 + 7) % 1000003

    for fn, name in ((nap, "napper"), (first, "first"), (second, "second"), (spin, "spinner")):
        threading.Thread(target=fn, name=name, daemon=True).start()
    time.sleep(0.5)
    print("ready", flush=True)
    time.sleep(600)
    """
)


def py_spy() -> str:
    found = Path(sys.executable).parent / "py-spy"
    need(found.exists(), "py-spy", "py-spy is a dependency: make .venv installs it")
    return str(found)


@pytest.fixture
def trainer(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "train.py").write_text(TRAINER)
    proc = subprocess.Popen([sys.executable, "train.py"], cwd=ws, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        yield proc
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def threads_of(out: dict[str, Any], pid: int) -> dict[str, dict[str, Any]]:
    (proc,) = [p for p in out["processes"] if p["pid"] == pid]
    assert proc["stacks_error"] is None, proc
    return {t["name"]: t for t in proc["threads"]}


def test_each_thread_is_what_its_stacks_show(
    trainer: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    params = {"match": [], "workspace": str(tmp_path / "ws"), "py_spy": py_spy()}
    out = live.collect({**params, "samples": 4, "spacing": 0.2}, Context())
    assert out["py_spy_from"] == "the path the doctor gave" and out["samples"] == 4
    threads = threads_of(out, trainer.pid)
    nap, first, spinner = threads["napper"], threads["first"], threads["spinner"]
    assert (nap["activity"], nap["activity_share"]) == ("sleeping", 1.0)
    assert nap["own_frame"].endswith("train.py:7 nap") and nap["own_frame_samples"] == 4
    assert nap["stack"][0]["text"] == "time.sleep(0.5)"
    # Each deadlocked thread waits on the other's lock, at the line that takes it.
    assert first["activity"] == "waiting" and first["stack"][0]["text"] == "with b:"
    assert threads["second"]["stack"][0]["text"] == "with a:"
    # The spinning thread computes in its own code and keeps a core busy.
    assert spinner["activity"] == "own_code" and spinner["own_frame"].endswith("spin")
    assert spinner["cpu_share"] > 0.3 and nap["cpu_share"] < 0.1
    assert out["processes"][0]["cpu_share"] >= spinner["cpu_share"] - 0.05


def test_a_busy_neighbour_is_named_with_its_cpu(
    trainer: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    """Another process on the host eating a core is listed by name and CPU; the
    trainer's own threads are not in the list."""
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        params = {"match": [], "workspace": str(tmp_path / "ws"), "py_spy": py_spy()}
        out = live.collect({**params, "samples": 3, "spacing": 0.3}, Context())
    finally:
        hog.kill()
        hog.wait()
    others = {o["pid"]: o for o in out["host"]["others"]}
    assert hog.pid in others and others[hog.pid]["cpu_share"] > 0.3, out["host"]
    assert trainer.pid not in others
    assert out["host"]["cpus"] >= 1 and len(out["host"]["load"]) == 3


def test_without_py_spy_the_cpu_is_still_read_and_the_fact_says_why(
    trainer: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    params = {"match": [], "workspace": str(tmp_path / "ws"), "py_spy": str(tmp_path / "none")}
    out = live.collect({**params, "samples": 2, "spacing": 0.2}, Context())
    assert out["py_spy"] is None and out["py_spy_from"] is None
    (proc,) = out["processes"]
    assert proc["pid"] == trainer.pid and proc["threads"], proc
    assert all(t["samples"] == 0 for t in proc["threads"])
    assert any((t["cpu_s"] or 0) > 0 for t in proc["threads"])


def test_the_preflight_says_what_may_attach_and_the_remedy_for_this_kind_of_host() -> None:
    found = live.preflight()
    assert found["euid"] == 0 or found["cap_sys_ptrace"] is not None
    assert found["remedy_if_denied"] == live.REMEDY[found["container"]]
    scope = Path("/proc/sys/kernel/yama/ptrace_scope")
    assert found["ptrace_scope"] == (int(scope.read_text()) if scope.exists() else None)


def test_no_trainer_running_is_an_empty_list_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    out = live.collect({"match": ["no-such-trainer-x"], "workspace": str(tmp_path)}, Context())
    assert out["processes"] == [] and out["samples"] == 0
    assert time.monotonic() - started < 5


SYSTEM_PYTHON = Path("/usr/bin/python3")


def test_a_probe_that_may_not_attach_says_why_and_what_would_let_it(
    trainer: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    """The live bundle run as another user (nobody, no CAP_SYS_PTRACE) against root's
    trainer: py-spy's own refusal is the fact, the CPU is still read, and the family is
    unverifiable with the one-line remedy for this case: probe as the trainer's user."""
    need(os.geteuid() == 0 and shutil.which("setpriv") is not None, "setpriv", "needs root")
    need(SYSTEM_PYTHON.exists(), "/usr/bin/python3", "the probe runs on the target's Python")
    # nobody must be able to run py-spy: a copy in a directory anyone may enter (the
    # checkout's may sit below a private one, as a clean clone under mktemp -d does).
    shared = Path(tempfile.mkdtemp(prefix="live-py-spy-"))
    try:
        shared.chmod(0o755)
        shutil.copy(py_spy(), shared / "py-spy")
        spec = SweepSpec(
            interpreter=str(SYSTEM_PYTHON),
            workspace=str(tmp_path / "ws"),
            py_spy=str(shared / "py-spy"),
        )
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        run = subprocess.run(
            [*nobody, str(SYSTEM_PYTHON), "-B", "-"],
            input=render(build_plan(spec, only=["live"])),
            capture_output=True,
            timeout=120,
            check=True,
        )
    finally:
        shutil.rmtree(shared)
    doc = json.loads(run.stdout.split(b"@@dflash-doctor-bundle@@", 1)[1])
    (result,) = doc["results"]
    value = result["value"]
    assert value["py_spy"] == str(shared / "py-spy"), value["py_spy"]
    assert value["preflight"]["euid"] == 65534 and value["preflight"]["cap_sys_ptrace"] is False
    (proc,) = [p for p in value["processes"] if p["pid"] == trainer.pid]
    assert proc["stacks_error"].startswith("Permission Denied"), proc["stacks_error"]
    assert proc["uid"] == 0 and all(t["samples"] == 0 for t in proc["threads"])
    ledger = Ledger()
    fact = ledger.append(Fact(probe="live", target="local", value=value))
    (found,) = [
        h
        for h in OwnCodeTime().propose(Evidence(ledger, [fact.id]))
        if f"pid {trainer.pid}'s" in h.predictions[0].expect
    ]
    checked = verify(found, ledger)
    assert checked.status == "unverifiable", checked
    assert found.predictions[0].expect.endswith(
        "probe as the trainer's user (uid 0) or as root (the probe ran as uid 65534)"
    )
