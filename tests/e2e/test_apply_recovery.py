"""A killed apply is found and recovered; a dead owner's lock is broken, not waited on
(issue 14, item 4).

Each case starts a real trainer (tests/lib/user_threaded_train.py, torch threads) from its
own launch file, runs an apply in a child process that SIGKILLs itself at one point
(tests/lib/apply_killed.py), and then does what the operator's next run does: plan, which is
the recovery of the interrupted apply, and apply that. Checked: the journal says where
the apply stopped; the lock of the dead apply is broken at once; the files are back
byte-identical (the hook the fix created is gone); the trainer runs as it was started
before, never twice; and the next plan is the fix again, not "already applied".
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from playbooks import Remote
from playbooks.journal import stale, this_process
from tests.lib.apply_killed import transaction
from tools.errors import ApplyRefused
from tools.transport import LocalTransport

pytestmark = [pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).parents[1] / "lib" / "user_threaded_train.py"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree(ws: Path) -> dict[str, str]:
    """The workspace's files and their sha256, logs and the doctor's own state left out."""
    return {
        str(p.relative_to(ws)): sha(p)
        for p in sorted(ws.rglob("*"))
        if p.is_file() and p.parts[len(ws.parts)] not in ("logs", ".dflash-doctor")
    }


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _trainer_pid(ws: Path) -> int | None:
    try:
        pid = int((ws / "logs" / "train.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if _running(pid) else None


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(e.decode().split("=", 1) for e in raw if b"=" in e)


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    """A workspace whose launch file starts a long run of the user's trainer (it writes
    its pid, as many launch scripts do), with that trainer running."""
    ws = tmp_path / "ws"
    (ws / "logs").mkdir(parents=True)
    shutil.copy(SCRIPT, ws / "train_threads.py")
    flags = ["--steps", "100000", "--workers", "1", "--lengths", "16", "--load-s", "0.05"]
    run = shlex.join([sys.executable, "train_threads.py", *flags])
    (ws / "launch.sh").write_text(
        "#!/bin/sh\n"
        f"cd {shlex.quote(str(ws))}\n"
        "echo $$ > logs/train.pid\n"
        f"exec env PYTHONPATH={shlex.quote(str(REPO))} {run} >> logs/console.txt 2>&1\n"
    )
    first = subprocess.Popen(
        ["sh", str(ws / "launch.sh")], start_new_session=True, stdin=subprocess.DEVNULL
    )
    # Running as far as the apply can tell (its pid file names a live process); whether
    # it got past importing torch does not matter to any step of the apply.
    deadline = time.monotonic() + 120
    while _trainer_pid(ws) is None:
        assert time.monotonic() < deadline, (ws / "logs" / "console.txt").read_text()
        time.sleep(0.2)
    yield ws
    # Stop every trainer this test started: each wrote its pid to logs/train.pid, and
    # only processes running this workspace's copy of the script are signalled.
    for _ in range(3):
        pid = _trainer_pid(ws)
        if pid is None:
            break
        if str(ws) in Path(f"/proc/{pid}/cmdline").read_text() or _cwd(pid) == ws:
            os.kill(pid, 9)
        time.sleep(0.5)
    first.kill()
    first.wait(timeout=30)


def _cwd(pid: int) -> Path | None:
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return None


def _killed_apply(ws: Path, kill_at: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.lib.apply_killed", str(ws), kill_at],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
    )


# Where the apply is killed; what its recovery must put back ("launch": the launch file
# was changed, "hook": the hook the fix created is there); whether the trainer that ran
# before is still the one running.
CASES = [
    ("step:backed_up", (), True),
    ("step:writing", (), True),
    ("step:stopping", ("launch", "hook"), True),
    ("op:stop", ("launch", "hook"), False),  # the trainer stopped, nothing started yet
    ("step:started", ("launch", "hook"), False),  # the fixed trainer runs
    ("step:verifying", ("launch", "hook"), False),
    ("step:rolling_back", ("launch", "hook"), False),
    ("restore", ("hook",), False),  # the rollback restored the launch file, then died
]


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.parametrize(("kill_at", "left", "same_trainer"), CASES)
def test_a_killed_apply_is_recovered_byte_identical(
    ws: Path, kill_at: str, left: tuple[str, ...], same_trainer: bool
) -> None:
    """An apply killed at each step is recovered by the next plan and apply: the plan writes
    nothing, the stale lock is broken rather than waited on, the workspace comes back byte
    for byte, and exactly one trainer runs without the hook's environment."""
    before = tree(ws)
    launch = sha(ws / "launch.sh")
    original = _trainer_pid(ws)
    assert original is not None

    killed = _killed_apply(ws, kill_at)
    assert killed.returncode == -9, (killed.returncode, killed.stdout, killed.stderr[-3000:])
    journal = json.loads((ws / ".dflash-doctor" / "apply.journal").read_text())
    step = kill_at.split(":")[1] if kill_at.startswith("step:") else journal["step"]
    assert journal["step"] == step and journal["step"] not in ("applied", "rolled_back")
    assert (ws / ".dflash-doctor" / "apply.lock").is_dir()  # the dead apply's lock
    hook = ws / ".dflash-doctor" / "hook" / "sitecustomize.py"
    assert (sha(ws / "launch.sh") != launch) is ("launch" in left)
    assert hook.exists() is ("hook" in left)
    assert (_trainer_pid(ws) == original) is same_trainer

    # The next run on the target: its plan is the recovery, and writes nothing.
    remote = Remote(LocalTransport(), interpreter=sys.executable)
    tx = transaction(str(ws), remote, baseline_tok_s=1.0, run_timeout=8)
    state_before = tree(ws), sha(ws / ".dflash-doctor" / "apply.journal")
    plan = tx.plan()
    assert (tree(ws), sha(ws / ".dflash-doctor" / "apply.journal")) == state_before
    assert plan.recovers == journal["apply"]
    assert plan.steps[0].startswith("recover the interrupted apply (lock-warmup, begun at ")
    assert f"stopped at step {journal['step']}" in plan.steps[0]
    paths = {"launch": str(ws / "launch.sh"), "hook": str(hook)}
    assert sorted(c.path for c in plan.changes) == sorted(paths[k] for k in left)

    started = time.monotonic()
    outcome = tx.apply(plan)
    assert time.monotonic() - started < 120  # the dead owner's lock was not waited on
    assert outcome.status == "rolled_back", outcome
    assert outcome.detail.startswith("recovered the interrupted apply (lock-warmup"), outcome
    assert any(e.startswith("broke the stale lock") and "is gone" in e for e in tx.events)

    # Byte-identical: the launch file as it was, the hook the fix created gone.
    assert tree(ws) == before
    assert sha(ws / "launch.sh") == launch
    assert not hook.exists()
    assert not (ws / ".dflash-doctor" / "apply.lock").exists()
    assert json.loads((ws / ".dflash-doctor" / "apply.journal").read_text())["step"] == (
        "rolled_back"
    )
    # One trainer runs, started as before: without the hook's environment.
    deadline = time.monotonic() + 60
    while _trainer_pid(ws) is None:
        assert time.monotonic() < deadline, outcome
        time.sleep(0.2)
    now = _trainer_pid(ws)
    assert now is not None
    assert (now == original) is same_trainer, (now, original, outcome.detail)
    assert "DFLASH_DOCTOR_COMPILE_LOCK" not in _environ(now)
    trainers = [
        p
        for p in os.listdir("/proc")
        if p.isdigit()
        and _running(int(p))
        and _cwd(int(p)) == ws
        and b"train_threads.py" in Path(f"/proc/{p}/cmdline").read_bytes()
    ]
    assert len(trainers) == 1, trainers

    # And the fix can be planned again: not "already applied", not another recovery.
    again = tx.plan()
    assert not again.recovers and again.changes, again


def test_a_lock_is_stale_only_when_its_owner_is_known_dead_or_silent() -> None:
    """A lock is broken only when its owner is known dead, its pid reused, or it outlived
    its lease; a live owner's lock, or one of unknown age, is never stale."""
    me = this_process()
    assert stale(me.record(), age_s=10_000) is None  # alive on this host: never broken
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = json.dumps({"host": me.host, "pid": dead.pid, "started": me.started})
    assert "is gone" in (stale(gone, age_s=0) or "") or "another process" in (
        stale(gone, age_s=0) or ""
    )
    reused = json.dumps({"host": me.host, "pid": me.pid, "started": "another-boot:1"})
    assert stale(reused, age_s=0) == f"its owner's pid {me.pid} now belongs to another process"
    other = json.dumps({"host": "another-controller", "pid": 1, "started": "x:1"})
    assert stale(other, age_s=30, lease_s=300) is None
    assert stale(other, age_s=301, lease_s=300) == "nothing has touched it for 301s (lease 300s)"
    assert stale("an operator's note", age_s=301, lease_s=300) is not None
    assert stale("an operator's note", age_s=None, lease_s=300) is None


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.parametrize("name", ["started.pid", "launch.log", "apply.journal"])
def test_a_symlinked_state_file_is_refused_before_anything_changes(
    ws: Path, tmp_path: Path, name: str
) -> None:
    """``WS/.dflash-doctor/started.pid`` as a symlink used to be met only after the fixed
    trainer was started: the apply stopped there, reported "rolled_back", and the trainer
    it started ran on. Now each file of the doctor's state an apply writes is checked
    first: the apply is refused (exit 2), nothing is written, the trainer is untouched."""
    outside = tmp_path / "outside"
    outside.write_text("precious\n")
    state = ws / ".dflash-doctor"
    state.mkdir()
    (state / name).symlink_to(outside)
    before = tree(ws)
    launch = sha(ws / "launch.sh")
    original = _trainer_pid(ws)
    remote = Remote(LocalTransport(), interpreter=sys.executable)
    tx = transaction(str(ws), remote, baseline_tok_s=1e12, run_timeout=8)
    plan = tx.plan() if name != "apply.journal" else None
    with pytest.raises(ApplyRefused) as refused:
        tx.apply(plan if plan is not None else tx.plan())
    assert refused.value.exit_code == 2
    assert str(state / name) in str(refused.value), refused.value
    assert tree(ws) == before and sha(ws / "launch.sh") == launch
    assert outside.read_text() == "precious\n"
    assert _trainer_pid(ws) == original
    assert sorted(p.name for p in state.iterdir()) == [name]  # no lock left, no backup made
