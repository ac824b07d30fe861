"""tools.probes.applies: the doctor's own apply journal and apply lock in
``WORKSPACE/.dflash-doctor/``, read as facts: which apply, playbook and step the journal
holds and whether that step ends an apply, and how long ago the lock's heartbeat was
last touched and by whom.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tools.probes import applies
from tools.probes._common import Context

NOW = 1_000_000.0


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The workspace's state directory, with the probe's clock fixed at ``NOW``."""
    monkeypatch.setattr(applies, "time", SimpleNamespace(time=lambda: NOW))
    path = tmp_path / ".dflash-doctor"
    path.mkdir()
    return path


def collect(state: Path) -> applies.AppliesValue:
    return applies.collect({"workspace": str(state.parent)}, Context())


def journal_of(state: Path) -> Any:
    return collect(state)["journal"]


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            {
                "apply": "a1b2",
                "playbook": "lock-warmup",
                "step": "backed_up",
                "at": 1700000000,
                "backups": [{"path": "x"}, {"path": "y"}],
                "hypothesis": "fx_trace_race",
            },
            {
                "apply": "a1b2",
                "playbook": "lock-warmup",
                "step": "backed_up",
                "at": 1700000000.0,
                "backups": 2,
                "interrupted": True,
            },
        ),
        (
            {"step": "applied"},
            {
                "apply": "",
                "playbook": "",
                "step": "applied",
                "at": None,
                "backups": 0,
                "interrupted": False,
            },
        ),
        (
            {"step": "rolled_back", "apply": None, "at": 12.5, "backups": []},
            {
                "apply": "",
                "playbook": "",
                "step": "rolled_back",
                "at": 12.5,
                "backups": 0,
                "interrupted": False,
            },
        ),
        (
            {"step": "started", "at": True, "backups": {"path": "x"}},
            {
                "apply": "",
                "playbook": "",
                "step": "started",
                "at": None,
                "backups": 0,
                "interrupted": True,
            },
        ),
        (
            {"step": "Applied", "at": "1700000000", "playbook": 7},
            {
                "apply": "",
                "playbook": "7",
                "step": "Applied",
                "at": None,
                "backups": 0,
                "interrupted": True,
            },
        ),
    ],
    ids=[
        "mid-apply",
        "applied-bare",
        "rolled-back",
        "odd-types-dropped",
        "step-compared-exactly",
    ],
)
def test_journal_fields(state: Path, entry: dict[str, Any], expected: dict[str, Any]) -> None:
    """The journal's apply, playbook and step are read as written; ``at`` only when it is a
    number (a truth value or string is none); ``backups`` is how many rows it lists; the apply
    is interrupted unless its step is exactly one a finished apply ends at."""
    path = state / "apply.journal"
    path.write_text(json.dumps(entry))
    assert journal_of(state) == {"path": str(path), **expected}


@pytest.mark.parametrize(
    "at",
    [b"1" + b"0" * 400, b"NaN", b"-Infinity", b"1e999"],
    ids=["400-digit-int", "nan", "minus-infinity", "overflowing-float"],
)
def test_a_journal_time_no_float_holds_finite_is_none(state: Path, at: bytes) -> None:
    """An ``at`` that is no finite time (a 400-digit number, which ``float`` refuses; a
    NaN or an infinity, which strict JSON cannot hold) is none: the rest of the journal is
    still read, and the fact stays strict JSON."""
    path = state / "apply.journal"
    path.write_bytes(b'{"apply": "a1", "playbook": "p", "step": "started", "at": ' + at + b"}")
    found = journal_of(state)
    assert found == {
        "path": str(path),
        "apply": "a1",
        "playbook": "p",
        "step": "started",
        "at": None,
        "backups": 0,
        "interrupted": True,
    }
    json.dumps(found, allow_nan=False)


@pytest.mark.parametrize(
    "content",
    [
        b'{"step": 3}',
        b'{"apply": "a1"}',
        b'["step", "applied"]',
        b'{"step": "applied"',
        b'{"step": "\xff"}',
        b"",
    ],
    ids=["step-not-text", "no-step", "not-an-object", "cut-short", "not-utf8", "empty"],
)
def test_a_journal_an_apply_did_not_write_is_interrupted(state: Path, content: bytes) -> None:
    """A journal that is not a JSON object with a text ``step`` is reported as an
    interrupted apply whose journal is not what an apply writes: an apply was begun and
    its record is damaged, which needs a person's look."""
    path = state / "apply.journal"
    path.write_bytes(content)
    assert journal_of(state) == {
        "path": str(path),
        "error": "not the JSON an apply writes",
        "interrupted": True,
    }


def test_a_journal_over_the_size_limit_is_not_parsed(state: Path) -> None:
    """A journal larger than ``MAX_JOURNAL`` is not parsed in part; it is reported like a
    damaged one."""
    path = state / "apply.journal"
    path.write_bytes(b'{"step": "applied"}' + b" " * applies.MAX_JOURNAL)
    assert journal_of(state)["error"] == "not the JSON an apply writes"


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: p.symlink_to(p.parent / "gone"), "No such file or directory"),
        (lambda p: p.symlink_to(p), "symlink loop (too many levels of symbolic links)"),
        (lambda p: p.mkdir(), "is a directory"),
    ],
    ids=["dangling-symlink", "symlink-loop", "directory"],
)
def test_a_journal_that_cannot_be_read_says_why(state: Path, make: Any, reason: str) -> None:
    """A journal path that exists but cannot be read as a file (a dangling symlink, a loop,
    a directory) is an interrupted apply with the reason it could not be read."""
    path = state / "apply.journal"
    make(path)
    assert journal_of(state) == {
        "path": str(path),
        "error": f"cannot read: {reason}",
        "interrupted": True,
    }


@pytest.mark.parametrize(
    ("mtime", "age"),
    [(NOW - 100.0, 100.0), (NOW - 12.3456, 12.346), (NOW + 50.0, 0.0)],
    ids=["100s-old", "rounded-to-ms", "clock-ahead-is-zero"],
)
def test_a_lock_files_age_is_since_its_mtime(state: Path, mtime: float, age: float) -> None:
    """A lock's age is the time since it was last touched, to the millisecond, never
    negative when the file's clock is ahead; a lock that is a plain file names no owner."""
    lock = state / "apply.lock"
    lock.write_text("")
    os.utime(lock, (mtime, mtime))
    assert collect(state)["lock"] == {"path": str(lock), "age_s": age}


def test_a_lock_directory_names_its_owner(state: Path) -> None:
    """A lock directory's ``owner`` file is its owner, as text (bytes that are no UTF-8
    replaced)."""
    lock = state / "apply.lock"
    lock.mkdir()
    (lock / "owner").write_bytes(b'{"pid": 42}\xff')
    os.utime(lock, (NOW - 3.0, NOW - 3.0))
    assert collect(state)["lock"] == {
        "path": str(lock),
        "age_s": 3.0,
        "owner": '{"pid": 42}\ufffd',
    }


def test_a_lock_directory_without_an_owner_says_unknown(state: Path) -> None:
    """A lock directory whose owner file is missing (or not a file) has an unknown owner,
    not an error."""
    lock = state / "apply.lock"
    (lock / "owner").mkdir(parents=True)
    os.utime(lock, (NOW, NOW))
    assert collect(state)["lock"] == {"path": str(lock), "age_s": 0.0, "owner": "unknown"}


def test_journal_and_lock_are_read_independently(state: Path) -> None:
    """A lock with no journal (a fresh apply, before its first step) is reported alone."""
    lock = state / "apply.lock"
    lock.write_text("")
    os.utime(lock, (NOW - 1.0, NOW - 1.0))
    assert collect(state) == {
        "state_dir": str(state),
        "journal": None,
        "lock": {"path": str(lock), "age_s": 1.0},
    }
