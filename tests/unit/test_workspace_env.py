"""tools.probes._workspace_env: the environment variables (only the names asked for) of each
live process whose working directory lies in a workspace, read from ``/proc/PID/environ``
(where a trainer points ``TORCH_TRACE`` or the Flight Recorder's dumps)."""

from __future__ import annotations

import builtins
import os
from pathlib import Path
from typing import IO, Any

import pytest

from tools.probes import _workspace_env
from tools.probes._workspace_env import MAX_ENVIRON, in_workspace

NAMES = ("TORCH_TRACE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")


class _FakeProc:
    """A /proc laid out under ``root``: ``add`` makes a process with a working directory
    (a symlink, as the kernel shows it) and an environ block."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir()

    def add(self, pid: str, cwd: str | None, environ: bytes | None) -> None:
        d = self.root / pid
        d.mkdir()
        if cwd is not None:
            (d / "cwd").symlink_to(cwd)
        if environ is not None:
            (d / "environ").write_bytes(environ)

    def path(self, path: str) -> str:
        assert path == "/proc" or path.startswith("/proc/"), path
        return str(self.root) + path[len("/proc") :]

    def listdir(self, path: str) -> list[str]:
        return os.listdir(self.path(path))

    def readlink(self, path: str) -> str:
        return os.readlink(self.path(path))

    def open(self, path: str, mode: str = "r") -> IO[Any]:
        return builtins.open(self.path(path), mode)


@pytest.fixture
def proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> _FakeProc:
    """The module reads a fake /proc instead of the machine's."""
    fake = _FakeProc(tmp_path / "proc")
    monkeypatch.setattr(_workspace_env, "os", fake)
    monkeypatch.setattr(_workspace_env, "open", fake.open, raising=False)
    return fake


def test_processes_working_in_the_workspace_and_setting_a_name(proc: _FakeProc) -> None:
    """A process whose working directory is the workspace or below it, and that sets a
    name asked for, is listed with those names only; its other variables are not."""
    proc.add("100", "/ws", b"HOME=/root\0TORCH_TRACE=/ws/trace\0SECRET=x\0")
    proc.add("200", "/ws/runs/7", b"TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/ws/fr_\0PATH=/bin\0")
    assert sorted(in_workspace("/ws", NAMES)) == [
        ("100", {"TORCH_TRACE": "/ws/trace"}),
        ("200", {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "/ws/fr_"}),
    ]


@pytest.mark.parametrize(
    ("cwd", "listed"),
    [
        ("/ws", True),
        ("/ws/a/b", True),
        ("/ws-old", False),
        ("/wsx/a", False),
        ("/", False),
        ("/other/ws", False),
    ],
    ids=[
        "the-workspace",
        "below-it",
        "sibling-with-its-prefix",
        "prefix-then-below",
        "root",
        "elsewhere",
    ],
)
@pytest.mark.parametrize("workspace", ["/ws", "/ws/"], ids=["plain", "trailing-slash"])
def test_only_working_directories_inside_the_workspace_count(
    proc: _FakeProc, workspace: str, cwd: str, listed: bool
) -> None:
    """The workspace is a directory, not a string prefix: ``/ws-old`` is not in ``/ws``;
    a trailing slash on the workspace changes nothing."""
    proc.add("42", cwd, b"TORCH_TRACE=/t\0")
    expected = [("42", {"TORCH_TRACE": "/t"})] if listed else []
    assert in_workspace(workspace, NAMES) == expected


def test_a_process_that_sets_none_of_the_names_is_not_listed(proc: _FakeProc) -> None:
    """Working in the workspace is not enough: a process is listed only for a name it sets,
    and a name set to the empty string is not set."""
    proc.add("1", "/ws", b"PATH=/bin\0")
    proc.add("2", "/ws", b"TORCH_TRACE=\0PATH=/bin\0")
    proc.add("3", "/ws", b"")
    assert in_workspace("/ws", NAMES) == []


@pytest.mark.parametrize(
    ("environ", "value"),
    [
        (b"TORCH_TRACE=/a=b/c\0", "/a=b/c"),
        (b"junk-without-equals\0TORCH_TRACE=/t\0", "/t"),
        (b"TORCH_TRACE=/t", "/t"),
        (b"TORCH_TRACE=/caf\xff\0", "/caf\ufffd"),
    ],
    ids=["equals-in-value", "entry-without-equals", "no-final-nul", "not-utf8"],
)
def test_environ_block_parsing(proc: _FakeProc, environ: bytes, value: str) -> None:
    """``NAME=value`` entries split at the first ``=``, separated by NULs; an entry with
    no ``=`` is passed over, bytes that are not UTF-8 are replaced."""
    proc.add("7", "/ws", environ)
    assert in_workspace("/ws", ("TORCH_TRACE",)) == [("7", {"TORCH_TRACE": value})]


def test_only_the_first_mebibyte_of_an_environ_is_read(proc: _FakeProc) -> None:
    """A name set past ``MAX_ENVIRON`` bytes of the block is not seen: the read is
    bounded."""
    pad = b"PAD=" + b"x" * MAX_ENVIRON + b"\0"
    proc.add("8", "/ws", b"TORCH_TRACE=/early\0" + pad + b"TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/late\0")
    assert in_workspace("/ws", NAMES) == [("8", {"TORCH_TRACE": "/early"})]


def test_processes_that_cannot_be_read_are_passed_over(proc: _FakeProc) -> None:
    """A process whose working directory cannot be read (gone, another user's) or whose
    environ cannot be read is skipped, not a failure; entries of /proc that are not
    process ids are not looked at."""
    proc.add("10", None, b"TORCH_TRACE=/t\0")
    proc.add("11", "/ws", None)
    proc.add("12", "/ws", b"TORCH_TRACE=/kept\0")
    proc.add("self", "/ws", b"TORCH_TRACE=/not-a-pid\0")
    (proc.root / "meminfo").write_text("MemTotal: 1 kB\n")
    assert in_workspace("/ws", NAMES) == [("12", {"TORCH_TRACE": "/kept"})]


def test_no_proc_means_no_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where /proc cannot be listed (not Linux, a locked-down container) there is nothing
    to report, and no error."""
    fake = _FakeProc(tmp_path / "empty")
    fake.root.rmdir()
    monkeypatch.setattr(_workspace_env, "os", fake)
    assert in_workspace("/ws", NAMES) == []


def test_the_real_proc_lists_this_process_working_in_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Linux, this very process, once working in the workspace, is found with a name
    from the environment it started with (what the kernel shows in its environ)."""
    with open(f"/proc/{os.getpid()}/environ", "rb") as fh:
        entries = [item.partition(b"=") for item in fh.read().split(b"\0")]
    started = {k.decode(): v.decode() for k, eq, v in entries if eq and v}
    name = "PATH" if "PATH" in started else sorted(started)[0]
    monkeypatch.chdir(tmp_path)
    found = dict(in_workspace(str(tmp_path), (name,)))
    assert found == {str(os.getpid()): {name: started[name]}}
