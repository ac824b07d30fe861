"""The lock-warmup playbook (playbooks.lock_warmup): the trainer's own compile-lock option on its
exec line where its code declares one, else the start-up hook with its lock variable, and the
sentence saying which and why.

The target is a workspace under tmp_path read by the remote operations run in this process."""

from __future__ import annotations

from pathlib import Path

import pytest

from playbooks.base import FX_TRACE
from playbooks.lock_warmup import LockWarmup
from playbooks.startup_hook import HOOK_SOURCE
from tests.lib.in_process_remote import trainer_site

DECLARES = 'import argparse\nargparse.ArgumentParser().add_argument("--compile-lock")\n'
HOOKED = (
    '#!/bin/sh\nexec env "PYTHONPATH={ws}/.dflash-doctor/hook${{PYTHONPATH:+:$PYTHONPATH}}"'
    " DFLASH_DOCTOR_COMPILE_LOCK=1 python train.py\n"
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


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
    site, remote = trainer_site(ws, "#!/bin/sh\nexec python train.py\n", DECLARES)
    (change,) = LockWarmup().changes(site, remote)
    assert (change.path, change.after, change.why) == (
        f"{ws}/launch.sh",
        "#!/bin/sh\nexec python train.py --compile-lock\n",
        f"the trainer declares --compile-lock ({ws}/train.py)",
    )


def test_a_knob_already_on_the_exec_line_needs_no_change(ws: Path) -> None:
    """A launch line that already passes the declared knob is left as it is."""
    site, remote = trainer_site(ws, "#!/bin/sh\nexec python train.py --compile-lock\n", DECLARES)
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
    site, remote = trainer_site(ws, launch, trainer)
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
    site, remote = trainer_site(ws, "#!/bin/sh\nexec ./trainer-bin\n", None)
    changes = LockWarmup().changes(site, remote)
    assert changes[-1].why == (
        "the trainer declares no --compile-lock (not in its launch line nor in the modules it"
        " imports from its tree): the start-up hook wraps torch.compile with the lock instead"
    )


def test_a_hook_already_in_place_needs_no_change(ws: Path) -> None:
    """Where the hook file is the shipped one and the exec line already sets it up, nothing
    changes."""
    site, remote = trainer_site(ws, HOOKED.format(ws=ws), "import argparse\n")
    (ws / ".dflash-doctor" / "hook").mkdir(parents=True)
    (ws / ".dflash-doctor" / "hook" / "sitecustomize.py").write_text(HOOK_SOURCE)
    assert LockWarmup().changes(site, remote) == []
