"""The lock-warmup playbook (playbooks.lock_warmup): the trainer's own compile-lock option on its
exec line where its code declares one, else the start-up hook with its lock variable, and the
sentence saying which and why.

The target is a workspace under tmp_path read by the remote operations run in this process."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

import playbooks._remote_ops as ops
from playbooks.base import FX_TRACE, TrainerSite
from playbooks.lock_warmup import LockWarmup
from playbooks.remote import Remote
from playbooks.startup_hook import HOOK_SOURCE
from tools.transport.base import CommandResult

DECLARES = 'import argparse\nargparse.ArgumentParser().add_argument("--compile-lock")\n'
HOOKED = (
    '#!/bin/sh\nexec env "PYTHONPATH={ws}/.dflash-doctor/hook${{PYTHONPATH:+:$PYTHONPATH}}"'
    " DFLASH_DOCTOR_COMPILE_LOCK=1 python train.py\n"
)


@dataclass
class InProcess:
    """Carries the operations program's argv to its ``main`` in this process."""

    name: str = "here"

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
    ) -> CommandResult:
        ops.op.clear()
        out = io.StringIO()
        saved = sys.argv
        sys.argv = ["-c", argv[-1]]
        try:
            with contextlib.redirect_stdout(out):
                ops.main()
        finally:
            sys.argv = saved
            ops.op.clear()  # the program's global: no operation outlives its run
        return CommandResult(tuple(argv), 0, out.getvalue().encode(), b"", 0.0, self.name)

    def close(self) -> None:
        pass


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def target(ws: Path, launch: str, trainer: str | None) -> tuple[TrainerSite, Remote]:
    (ws / "launch.sh").write_text(launch)
    if trainer is not None:
        (ws / "train.py").write_text(trainer)
    site = TrainerSite(str(ws), f"{ws}/launch.sh", f"{ws}/p", f"{ws}/t.log", f"{ws}/o.log")
    return site, Remote(InProcess())


def test_it_answers_the_fx_trace_race_judged_by_the_fx_trace_error() -> None:
    """The playbook is offered for a verified FX-trace race and judged by the FX-trace error's
    absence."""
    playbook = LockWarmup()
    assert (playbook.name, playbook.requires, playbook.answers) == (
        "lock-warmup",
        frozenset({"fx_trace_race"}),
        "fx_trace_race",
    )
    assert playbook.signature == FX_TRACE


def test_a_trainer_that_declares_the_knob_gets_it_on_its_exec_line(ws: Path) -> None:
    """Where the trainer's code declares --compile-lock, the fix adds it to the exec line, citing
    the file that declares it."""
    site, remote = target(ws, "#!/bin/sh\nexec python train.py\n", DECLARES)
    (change,) = LockWarmup().changes(site, remote)
    assert (change.path, change.after, change.why) == (
        f"{ws}/launch.sh",
        "#!/bin/sh\nexec python train.py --compile-lock\n",
        f"the trainer declares --compile-lock ({ws}/train.py)",
    )


def test_a_knob_already_on_the_exec_line_needs_no_change(ws: Path) -> None:
    """A launch line that already passes the declared knob is left as it is."""
    site, remote = target(ws, "#!/bin/sh\nexec python train.py --compile-lock\n", DECLARES)
    assert LockWarmup().changes(site, remote) == []


@pytest.mark.parametrize(
    ("launch", "trainer", "knob", "why"),
    [
        (
            "#!/bin/sh\nexec python train.py\n",
            "import argparse\n",
            "--compile-lock",
            "the trainer declares no --compile-lock (not in {ws}/train.py nor in the modules it"
            " imports from its tree): the start-up hook wraps torch.compile with the lock instead",
        ),
        (
            "#!/bin/sh\nexec python train.py\n",
            DECLARES,
            None,
            "the hook route (no knob asked for)",
        ),
    ],
    ids=["knob-not-declared", "no-knob-asked-for"],
)
def test_otherwise_the_start_up_hook_takes_the_lock(
    ws: Path, launch: str, trainer: str, knob: str | None, why: str
) -> None:
    """A trainer without the knob (or a playbook asked to use none) gets the hook file and an exec
    line that puts the hook's folder first on PYTHONPATH and sets the lock variable to 1."""
    site, remote = target(ws, launch, trainer)
    hook, edit = LockWarmup(knob=knob).changes(site, remote)
    assert (hook.path, hook.before_sha256, hook.after) == (
        f"{ws}/.dflash-doctor/hook/sitecustomize.py",
        None,
        HOOK_SOURCE,
    )
    assert (edit.path, edit.after, edit.why) == (
        f"{ws}/launch.sh",
        HOOKED.format(ws=ws),
        why.format(ws=ws),
    )


def test_a_launch_line_that_runs_no_python_file_says_so(ws: Path) -> None:
    """When the exec line names no Python file, the knob cannot be looked for: the hook is used and
    the sentence says the launch line was all there was to read."""
    site, remote = target(ws, "#!/bin/sh\nexec ./trainer-bin\n", None)
    changes = LockWarmup().changes(site, remote)
    assert changes[-1].why == (
        "the trainer declares no --compile-lock (not in its launch line nor in the modules it"
        " imports from its tree): the start-up hook wraps torch.compile with the lock instead"
    )


def test_a_hook_already_in_place_needs_no_change(ws: Path) -> None:
    """Where the hook file is the shipped one and the exec line already sets it up, nothing
    changes."""
    site, remote = target(ws, HOOKED.format(ws=ws), "import argparse\n")
    (ws / ".dflash-doctor" / "hook").mkdir(parents=True)
    (ws / ".dflash-doctor" / "hook" / "sitecustomize.py").write_text(HOOK_SOURCE)
    assert LockWarmup().changes(site, remote) == []
