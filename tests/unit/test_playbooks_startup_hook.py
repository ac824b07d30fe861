"""playbooks.startup_hook: the start-up hook shipped to the target as ``sitecustomize.py``
in the doctor's state directory, and the changes that put it to work: the hook file where
the one there is not the shipped one, and the launch file's exec line with the hook's
directory first on ``PYTHONPATH`` and the playbook's variables set.

What the hook does inside a trainer is specified in tests/unit/test_sitecustomize.py and
tests/e2e/test_startup_hook.py, and each playbook's use of it in
tests/unit/test_recompile_limit.py and tests/unit/test_lock_warmup.py; here the changes
are built directly, on a workspace under tmp_path read by the fix operations run in this
process."""

from __future__ import annotations

import difflib
import hashlib
from pathlib import Path

import pytest

from playbooks.base import FileChange, TrainerSite
from playbooks.remote import Remote
from playbooks.startup_hook import HOOK_SOURCE, LIMIT_ENV, LOCK_ENV, hook_changes
from tests.lib.in_process_remote import InProcess

LAUNCH = "#!/bin/sh\nexec python train.py\n"
WHY = "the trainer declares no knob: the hook does it"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "launch.sh").write_text(LAUNCH)
    return ws


def _site(ws: Path) -> TrainerSite:
    return TrainerSite(str(ws), f"{ws}/launch.sh", f"{ws}/p", f"{ws}/t.log", f"{ws}/o.log")


def _diff(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        f"{path} (now)",
        f"{path} (after the fix)",
    )
    return "".join(lines)


def _hooked(ws: Path, *assignments: str) -> str:
    pythonpath = f'"PYTHONPATH={ws}/.dflash-doctor/hook${{PYTHONPATH:+:$PYTHONPATH}}"'
    return f"#!/bin/sh\nexec env {' '.join([pythonpath, *assignments])} python train.py\n"


def test_the_hook_is_switched_by_the_variables_the_playbooks_set() -> None:
    """The hook shipped reads the two variables the playbooks put on the exec line."""
    assert (LIMIT_ENV, LOCK_ENV) == (
        "DFLASH_DOCTOR_RECOMPILE_LIMIT",
        "DFLASH_DOCTOR_COMPILE_LOCK",
    )
    assert LIMIT_ENV in HOOK_SOURCE and LOCK_ENV in HOOK_SOURCE


def test_a_first_use_writes_the_hook_and_edits_the_exec_line(ws: Path) -> None:
    """With no hook yet, the changes are the new hook file (no digest before, its whole
    text in the diff) and the exec line run with the hook's directory first on
    PYTHONPATH, then the variables in the order given."""
    hook = f"{ws}/.dflash-doctor/hook/sitecustomize.py"
    before_sha = hashlib.sha256(LAUNCH.encode()).hexdigest()
    env = {LIMIT_ENV: "24", "TORCH_LOGS": "recompiles"}
    changes = hook_changes(_site(ws), Remote(InProcess()), LAUNCH, before_sha, env, WHY)
    after = _hooked(ws, f"{LIMIT_ENV}=24", "TORCH_LOGS=recompiles")
    assert changes == [
        FileChange(
            path=hook,
            before_sha256=None,
            after=HOOK_SOURCE,
            diff=_diff(hook, "", HOOK_SOURCE),
            why="the dflash-doctor start-up hook",
        ),
        FileChange(
            path=f"{ws}/launch.sh",
            before_sha256=before_sha,
            after=after,
            diff=_diff(f"{ws}/launch.sh", LAUNCH, after),
            why=WHY,
        ),
    ]


def test_an_outdated_hook_is_replaced_from_its_digest(ws: Path) -> None:
    """A hook file left by an older doctor is replaced by the shipped one: the change
    names the old file's digest and shows the difference from its text."""
    old = "# an older hook\n"
    hook_dir = ws / ".dflash-doctor" / "hook"
    hook_dir.mkdir(parents=True)
    (hook_dir / "sitecustomize.py").write_text(old)
    text = _hooked(ws, f"{LOCK_ENV}=1")
    changes = hook_changes(_site(ws), Remote(InProcess()), text, "f" * 64, {LOCK_ENV: "1"}, WHY)
    hook = f"{hook_dir}/sitecustomize.py"
    assert changes == [
        FileChange(
            path=hook,
            before_sha256=hashlib.sha256(old.encode()).hexdigest(),
            after=HOOK_SOURCE,
            diff=_diff(hook, old, HOOK_SOURCE),
            why="the dflash-doctor start-up hook",
        )
    ]


def test_a_current_hook_leaves_only_the_launch_edit(ws: Path) -> None:
    """Where the shipped hook is in place, only the exec line changes; the digest given
    for the launch file (None: the doctor's own, not written yet) is kept on it."""
    hook_dir = ws / ".dflash-doctor" / "hook"
    hook_dir.mkdir(parents=True)
    (hook_dir / "sitecustomize.py").write_text(HOOK_SOURCE)
    changes = hook_changes(_site(ws), Remote(InProcess()), LAUNCH, None, {LOCK_ENV: "1"}, WHY)
    assert [(c.path, c.before_sha256, c.after, c.why) for c in changes] == [
        (f"{ws}/launch.sh", None, _hooked(ws, f"{LOCK_ENV}=1"), WHY)
    ]


def test_a_hook_in_place_and_set_up_needs_no_change(ws: Path) -> None:
    """The shipped hook and an exec line that already sets it up: nothing to change."""
    hook_dir = ws / ".dflash-doctor" / "hook"
    hook_dir.mkdir(parents=True)
    (hook_dir / "sitecustomize.py").write_text(HOOK_SOURCE)
    text = _hooked(ws, f"{LIMIT_ENV}=24")
    assert (
        hook_changes(_site(ws), Remote(InProcess()), text, "a" * 64, {LIMIT_ENV: "24"}, WHY) == []
    )


def test_a_new_value_replaces_the_one_the_line_set(ws: Path) -> None:
    """A later fix with another value for the same variable changes that value where it
    stands, and PYTHONPATH is not extended a second time."""
    hook_dir = ws / ".dflash-doctor" / "hook"
    hook_dir.mkdir(parents=True)
    (hook_dir / "sitecustomize.py").write_text(HOOK_SOURCE)
    text = _hooked(ws, f"{LIMIT_ENV}=24")
    [edit] = hook_changes(_site(ws), Remote(InProcess()), text, None, {LIMIT_ENV: "48"}, WHY)
    assert edit.after == _hooked(ws, f"{LIMIT_ENV}=48")
