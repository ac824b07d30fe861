"""The operations program a target's Python runs (playbooks._remote_ops): writes confined under the
workspace one directory at a time with no symlink followed, files written whole keeping their
mode, only regular files read, the lock directory and its owner, what a path is, whether a
process runs, where a trainer's code declares an option, and the one JSON line each run answers.

Its functions are called in this process on a workspace under tmp_path; the operation's
arguments are the module's ``op``, emptied after each test. Starting and stopping processes is
left to the end-to-end tests."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import playbooks._remote_ops as ops


@pytest.fixture(autouse=True)
def fresh_op() -> Iterator[None]:
    """Each test starts from an empty operation and leaves none behind."""
    ops.op.clear()
    yield
    ops.op.clear()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    ops.op["root"] = str(ws)
    return ws


def unused_pid() -> int:
    """A pid no process can have: pids stay below pid_max."""
    return int(Path("/proc/sys/kernel/pid_max").read_text())


def run_main(operation: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The JSON line the program prints for ``operation``, given as its one argument."""
    monkeypatch.setattr(sys, "argv", ["-c", json.dumps(operation)])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ops.main()
    (line,) = out.getvalue().splitlines()
    answer: dict[str, Any] = json.loads(line)
    return answer


def test_a_write_creates_its_folders_and_answers_the_sha256(ws: Path) -> None:
    """Writing a new file makes the folders above it, gives the file mode 0644, leaves no
    temporary file, and answers the sha256 of what is now there."""
    path = ws / "state" / "hook" / "sitecustomize.py"
    assert ops.write_under(str(path), b"print(1)\n") == hashlib.sha256(b"print(1)\n").hexdigest()
    assert path.read_bytes() == b"print(1)\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in path.parent.iterdir()] == ["sitecustomize.py"]


def test_a_rewritten_file_keeps_its_mode(ws: Path) -> None:
    """A file written over keeps its permission bits (an executable launch script stays
    executable)."""
    path = ws / "launch.sh"
    path.write_text("old\n")
    path.chmod(0o750)
    ops.write_under(str(path), b"new\n")
    assert (path.read_bytes(), stat.S_IMODE(path.stat().st_mode)) == (b"new\n", 0o750)


def test_a_write_through_a_followed_link_stays_a_link(ws: Path) -> None:
    """With follow_last, a path that is a symlink to a file in the workspace is written where it
    points, and the link stays a link."""
    (ws / "real.sh").write_text("old\n")
    (ws / "launch.sh").symlink_to(ws / "real.sh")
    ops.write_under(str(ws / "launch.sh"), b"new\n", follow_last=True)
    assert (ws / "launch.sh").is_symlink()
    assert (ws / "real.sh").read_bytes() == b"new\n"


def refusal(ws: Path, path: str, **how: bool) -> str:
    with pytest.raises(ops.Refused) as caught:
        fd, _ = ops.under(path, **how)
        os.close(fd)
    return str(caught.value)


def test_a_path_outside_the_workspace_is_refused(ws: Path, tmp_path: Path) -> None:
    """A path that is not below the workspace (the workspace itself, a sibling, one that climbs
    out with ``..``) is refused, naming the path and the workspace."""
    for path in (str(tmp_path / "other" / "x"), f"{ws}/../x", str(ws)):
        shown = os.path.normpath(path)
        assert refusal(ws, path) == (
            f"{shown} is outside the workspace {ws}: the doctor writes only under it"
        )


def test_a_symlinked_folder_inside_the_workspace_is_not_written_through(
    ws: Path, tmp_path: Path
) -> None:
    """A folder on the way that is a symlink (to anywhere) is refused, naming it."""
    (tmp_path / "elsewhere").mkdir()
    (ws / "state").symlink_to(tmp_path / "elsewhere")
    assert refusal(ws, f"{ws}/state/journal", create=True) == (
        f"{ws}/state is a symlink or not a directory: the doctor does not write through it"
    )


@pytest.mark.parametrize(
    ("target", "follow", "message"),
    [
        ("real.sh", False, "{ws}/launch.sh is a symlink: the doctor does not write through it"),
        (
            "../outside.sh",
            True,
            "{tmp}/outside.sh is outside the workspace {ws}: the doctor writes only under it",
        ),
    ],
    ids=["not-followed", "link-out-of-the-workspace"],
)
def test_a_final_symlink_is_followed_only_when_asked_and_only_into_the_workspace(
    ws: Path, tmp_path: Path, target: str, follow: bool, message: str
) -> None:
    """A final symlink is refused unless following was asked for; followed, what it names must be
    inside the workspace."""
    (tmp_path / "outside.sh").write_text("x\n")
    (ws / "real.sh").write_text("x\n")
    (ws / "launch.sh").symlink_to(ws / target)
    got = refusal(ws, f"{ws}/launch.sh", follow_last=follow)
    assert got == message.format(ws=ws, tmp=tmp_path)


def test_a_followed_chain_of_links_is_written_at_its_end(ws: Path) -> None:
    """A launch file that links to a link is followed to the file at the end of the chain, the
    links left as they are."""
    (ws / "final.sh").write_text("old\n")
    (ws / "real.sh").symlink_to(ws / "final.sh")
    (ws / "launch.sh").symlink_to(ws / "real.sh")
    ops.write_under(str(ws / "launch.sh"), b"new\n", follow_last=True)
    assert (ws / "final.sh").read_bytes() == b"new\n"
    assert ((ws / "launch.sh").is_symlink(), (ws / "real.sh").is_symlink()) == (True, True)


def test_a_fifo_is_neither_written_nor_read(ws: Path) -> None:
    """A FIFO where a file is expected is refused, for a write and for a read (which must not
    block waiting for a writer)."""
    os.mkfifo(ws / "pipe")
    assert refusal(ws, f"{ws}/pipe") == f"{ws}/pipe is not a regular file"
    ops.op["path"] = f"{ws}/pipe"
    with pytest.raises(ops.Refused, match=f"^{re.escape(str(ws))}/pipe is not a regular file$"):
        ops.op_read()


def test_a_read_answers_base64_and_the_sha256(ws: Path) -> None:
    """Reading a file answers its bytes as base64 and their sha256."""
    (ws / "f").write_bytes(b"\x00\xffdata")
    ops.op["path"] = str(ws / "f")
    assert ops.op_read() == {
        "data": "AP9kYXRh",
        "sha256": hashlib.sha256(b"\x00\xffdata").hexdigest(),
    }


def test_a_read_from_an_offset_answers_the_rest_and_the_size(ws: Path) -> None:
    """Reading from an offset answers at most ``limit`` bytes from there, and the file's size."""
    (ws / "log").write_bytes(b"0123456789")
    ops.op.update(path=str(ws / "log"), offset=4, limit=3)
    assert ops.op_read_from() == {"data": "NDU2", "size": 10}  # b"456"


def test_stat_says_whether_a_path_exists_and_a_files_sha256(ws: Path) -> None:
    """A missing path does not exist; a file has its size and sha256; a folder has a size and no
    sha256."""
    (ws / "f").write_bytes(b"abc")
    (ws / "d").mkdir()
    answers = []
    for name in ("none", "f", "d"):
        ops.op["path"] = str(ws / name)
        answers.append(ops.op_stat())
    assert answers[0] == {"exists": False}
    assert answers[1] == {
        "exists": True,
        "size": 3,
        "sha256": hashlib.sha256(b"abc").hexdigest(),
    }
    assert (answers[2]["exists"], answers[2]["sha256"]) == (True, None)


def test_kinds_names_each_path_without_following_links(ws: Path) -> None:
    """Each path is missing, a file, a link (even to a file), a directory, or special (a FIFO)."""
    (ws / "f").write_text("x")
    (ws / "l").symlink_to(ws / "f")
    (ws / "d").mkdir()
    os.mkfifo(ws / "p")
    ops.op["paths"] = [str(ws / n) for n in ("none", "f", "l", "d", "p")]
    assert ops.op_kinds() == {"kinds": ["missing", "file", "link", "directory", "special"]}


def test_a_lock_is_a_directory_naming_its_owner(ws: Path) -> None:
    """The first to lock makes the directory with its owner inside; the next is told the owner
    and the lock's age; unlocking removes it."""
    lock = ws / "state" / "apply.lock"
    ops.op.update(path=str(lock), owner='{"pid": 1}')
    assert ops.op_lock() == {"locked": True}
    assert (lock / "owner").read_text() == '{"pid": 1}'
    ops.op["owner"] = '{"pid": 2}'
    held = ops.op_lock()
    assert (held["locked"], held["owner"]) == (False, '{"pid": 1}')
    assert 0 <= held["age"] < 60
    assert ops.op_unlock() == {}
    assert not lock.exists()


def test_a_broken_lock_is_kept_beside_under_another_name(ws: Path) -> None:
    """Breaking a lock renames it to ``NAME.stale-XXXXXXXX`` (its owner kept), so a fresh lock can
    be taken."""
    lock = ws / "apply.lock"
    ops.op.update(path=str(lock), owner="old")
    ops.op_lock()
    assert ops.op_break() == {}
    (kept,) = list(ws.iterdir())
    assert (
        kept.name.startswith("apply.lock.stale-") and len(kept.name) == len("apply.lock.stale-") + 8
    )
    assert (kept / "owner").read_text() == "old"


def test_a_heartbeat_touches_the_lock(ws: Path) -> None:
    """While a long operation works for a lock, ``beat`` sets the lock's mtime to now."""
    lock = ws / "apply.lock"
    lock.mkdir()
    os.utime(lock, (0, 0))
    ops.op["beat"] = str(lock)
    ops.beat()
    assert lock.stat().st_mtime > 1e9


def test_remove_deletes_a_file_and_passes_over_a_missing_one(ws: Path) -> None:
    """Removing deletes a regular file; a path already gone is no error; a folder is refused."""
    (ws / "f").write_text("x")
    (ws / "d").mkdir()
    for name in ("f", "gone"):
        ops.op["path"] = str(ws / name)
        assert ops.op_remove() == {}
    assert not (ws / "f").exists()
    ops.op["path"] = str(ws / "d")
    with pytest.raises(ops.Refused, match=f"^{re.escape(str(ws))}/d is not a regular file$"):
        ops.op_remove()


@pytest.mark.parametrize(
    ("content", "answer"),
    [
        (lambda: f"{os.getpid()}\n", lambda: {"pid": os.getpid(), "alive": True}),
        (lambda: f"{unused_pid()}\n", lambda: {"pid": None, "alive": False}),
        (lambda: "not a pid\n", lambda: {"pid": None, "alive": False}),
        (lambda: "", lambda: {"pid": None, "alive": False}),
        (None, lambda: {"pid": None, "alive": False}),
    ],
    ids=["live", "gone", "junk", "empty", "missing"],
)
def test_a_pid_file_names_a_running_process_or_none(
    ws: Path, content: Callable[[], str] | None, answer: Callable[[], dict[str, Any]]
) -> None:
    """A pid file gives its pid when that process runs; a dead pid, junk, an empty or missing
    file give none."""
    if content is not None:
        (ws / "train.pid").write_text(content())
    ops.op["path"] = str(ws / "train.pid")
    assert ops.op_pid() == answer()


def test_this_process_runs_and_an_unused_pid_has_exited() -> None:
    """The test's own process runs and has not exited; a pid no process has does not run, has
    exited, and has no start time."""
    assert (ops.running(os.getpid()), ops.exited(os.getpid())) == (True, False)
    assert (ops.running(unused_pid()), ops.exited(unused_pid())) == (False, True)
    assert ops.proc_start(unused_pid()) is None


def test_a_process_start_time_is_field_22_of_its_stat_line() -> None:
    """A process's start time is its starttime in /proc (clock ticks since boot), which tells it
    from a later process given the same pid."""
    fields = Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()
    assert ops.proc_start(os.getpid()) == fields[22 - 3]  # fields 1 and 2: pid and (name)


def test_a_gone_process_writes_to_no_file() -> None:
    """A process that does not exist has neither stdout nor stderr to keep writing to."""
    ops.op["pid"] = unused_pid()
    assert ops.op_stdio() == {"1": None, "2": None}


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    """A trainer whose options are declared across its own tree: the script, a module beside it,
    a package's module reached by a relative import, and a folder it puts on sys.path."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "extra.py").write_text('WORKERS = ("--workers", "processes")\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .flags import LOCK\n")
    (tmp_path / "pkg" / "flags.py").write_text('LOCK = "--compile-lock"\n')
    (tmp_path / "opts.py").write_text(
        'import pkg\nLIMITS = ["--recompile-limit", "--cache-size-limit"]\n'
    )
    (tmp_path / "broken.py").write_text('this is not python "--never"\n')
    script = tmp_path / "train.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(tmp_path / 'lib')!r})\n"
        "import opts, broken, extra, json\n"
        'parser_help = "--lr"\n'
    )
    return script


@pytest.mark.parametrize(
    ("flag", "value", "found"),
    [
        ("--lr", None, "train.py"),
        ("--recompile-limit", None, "opts.py"),
        ("--compile-lock", None, "pkg/flags.py"),
        ("--workers", "processes", "lib/extra.py"),
        ("--workers", "threads", None),
        ("--never", None, None),
    ],
    ids=[
        "in-the-script",
        "imported-module",
        "relative-import",
        "sys-path-folder",
        "other-value",
        "unparsable-file",
    ],
)
def test_an_option_is_found_where_the_trainers_code_declares_it(
    trainer: Path, flag: str, value: str | None, found: str | None
) -> None:
    """An option (with its value, where one is asked for) is a string literal in the script or a
    module it imports from its tree: beside it, through a relative import, or from a folder it
    puts on sys.path; a file that does not parse declares nothing."""
    ops.op.update(script=str(trainer), flag=flag, value=value)
    answer = ops.op_knob()
    where = None if found is None else str(trainer.parent / found)
    assert (answer["found"], answer["literal"]) == (where, None if found is None else flag)


def test_an_option_like_a_pattern_is_the_first_literal_it_matches_whole(trainer: Path) -> None:
    """With a pattern, the answer is the first file holding a literal the pattern matches whole,
    and of its matching literals the first in sorted order."""
    ops.op.update(script=str(trainer), flag=None, pattern=r"--[a-z-]*limit")
    answer = ops.op_knob()
    assert (answer["found"], answer["literal"]) == (
        str(trainer.parent / "opts.py"),
        "--cache-size-limit",
    )


def test_an_unknown_operation_is_an_error() -> None:
    """An operation name the program does not know is an error naming it."""
    with pytest.raises(ValueError, match=r"^unknown op chmod$"):
        ops.perform("chmod")


def test_each_run_answers_one_json_line(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run prints one JSON line: ok with the operation's answer; a refusal marked refused; any
    other failure with its exception's type and text."""
    (ws / "f").write_bytes(b"abc")
    assert run_main({"op": "stat", "path": str(ws / "f")}, monkeypatch) == {
        "ok": True,
        "exists": True,
        "size": 3,
        "sha256": hashlib.sha256(b"abc").hexdigest(),
    }
    outside = {"op": "write", "path": "/etc/x", "data": "", "root": str(ws)}
    assert run_main(outside, monkeypatch) == {
        "ok": False,
        "error": f"/etc/x is outside the workspace {ws}: the doctor writes only under it",
        "refused": True,
    }
    ops.op.clear()
    assert run_main({"op": "chmod"}, monkeypatch) == {
        "ok": False,
        "error": "ValueError: unknown op chmod",
    }
