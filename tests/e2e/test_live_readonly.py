"""A health check of a live trainer reads its stacks and changes nothing: traced with the
real strace, the health run and every process it starts (the bundle, py-spy) open no file
of the workspace for writing, create, rename or remove none, never ptrace-attach to the
trainer (py-spy's ``--nonblocking`` reads its memory without stopping it) and send it no
signal; and the stacks were read."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.lib.foreign_trainers import start_in_background
from tests.lib.need import need
from tools.transcript import read_transcript

pytestmark = [pytest.mark.slow, pytest.mark.torch]

CLI = str(Path(sys.executable).parent / "dflash-doctor")
WRITE_FLAGS = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND")
CHANGES = re.compile(
    r"^(?:mkdir|mkdirat|unlink|unlinkat|rmdir|rename|renameat2?|creat|truncate|"
    r"ftruncate|link|linkat|symlink|symlinkat|chmod|fchmodat|chown|fchownat|utimensat)\("
)


def test_a_health_check_of_a_live_trainer_writes_nothing_and_never_stops_it(
    tmp_path: Path,
) -> None:
    """Under strace, a health check of a live trainer writes nothing in its workspace, never
    ptrace-attaches, signals or writes into it, yet reads its stacks."""
    need(shutil.which("strace") is not None, "strace", "apt-get install strace")
    ws = tmp_path / "ws"
    trainer = start_in_background("loop_train.py", ws, "--log-every", "10")
    log = ws / "runs" / "progress.csv"
    trace = tmp_path / "trace"
    try:
        deadline = time.monotonic() + 120
        while not log.exists() or len(log.read_text().splitlines()) < 30:
            assert trainer.poll() is None, (ws / "train.log").read_text()[-2000:]
            assert time.monotonic() < deadline
            time.sleep(0.2)
        done = subprocess.run(
            [
                "strace",
                "-f",
                "-qq",
                "-o",
                str(trace),
                "-e",
                "trace=%file,ptrace,kill,tgkill,tkill,process_vm_writev",
                CLI,
                "-q",
                "health",
                "--target",
                "local",
                "--workspace",
                str(ws),
                "--interpreter",
                sys.executable,
                "--format",
                "json",
            ],
            capture_output=True,
            timeout=300,
            cwd=tmp_path,
        )
    finally:
        trainer.kill()
        trainer.wait(timeout=30)
    assert done.stdout.strip(), done.stderr.decode()[-3000:]
    (checked,) = json.loads(done.stdout)["targets"]
    # Its figures are labelled in the trainer's own unit: the loop states samples/s.
    assert checked["metrics"]["tokens_per_s"]["label"] == "samples/s", checked["metrics"]
    calls = [line.split(None, 1)[1] for line in trace.read_text().splitlines() if " " in line]
    root = str(ws)
    writes = [
        c
        for c in calls
        if root in c
        and (
            (c.startswith(("open(", "openat(")) and WRITE_FLAGS.search(c.split(")", 1)[0]))
            or CHANGES.match(c)
        )
    ]
    assert not writes, writes[:20]
    attach = [c for c in calls if c.startswith("ptrace(") and re.search(r"ATTACH|SEIZE", c)]
    assert not attach, attach[:10]
    pid = trainer.pid
    signals = [c for c in calls if re.match(rf"(?:kill|tkill)\({pid}\b|tgkill\({pid}\b", c)]
    assert not signals, signals
    assert not [c for c in calls if c.startswith("process_vm_writev(")]
    # The stacks were read: py-spy ran, and the live fact holds the trainer's samples.
    assert any(c.startswith("execve(") and "py-spy" in c for c in calls), calls[:40]
    _header, events = read_transcript(Path(checked["transcript"]))
    (live,) = [
        e["fact"]["value"] for e in events if e["type"] == "fact" and e["fact"]["probe"] == "live"
    ]
    (proc,) = [p for p in live["processes"] if p["pid"] == pid]
    assert proc["stacks_error"] is None and proc["threads"][0]["samples"] >= 1, proc
