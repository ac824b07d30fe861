"""Carrying this machine's py-spy to a target that has none (tools.carry): which py-spy is
this machine's, when it may be carried (the target's ``uname -sm`` is this machine's), how
it is put into a private directory of the target's and taken away again, and what is said
where any of that fails."""

from __future__ import annotations

import os
import platform
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tools.carry import CarriedPySpy, carry_py_spy, local_py_spy
from tools.transport import LocalTransport
from tools.transport.base import CommandResult, KeyedStdin

OURS = "/tmp/dflash-doctor-py-spy.AbC123/py-spy"


@dataclass
class Call:
    argv: tuple[str, ...]
    stdin: bytes | None
    timeout: float | None


@dataclass
class ScriptedTransport:
    """A target that answers each command with the next scripted (rc, stdout, stderr)."""

    answers: list[tuple[int, bytes, bytes]]
    name: str = "scripted"
    calls: list[Call] = field(default_factory=list)

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
    ) -> CommandResult:
        self.calls.append(Call(tuple(argv), stdin, timeout))
        rc, out, err = self.answers.pop(0)
        return CommandResult(tuple(argv), rc, out, err, 0.0, self.name)

    def close(self) -> None:
        pass


@pytest.fixture
def here(monkeypatch: pytest.MonkeyPatch) -> str:
    """This machine, as ``uname -sm`` writes it: Linux x86_64."""
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    return "Linux x86_64"


@pytest.fixture
def binary(tmp_path: Path) -> Path:
    path = tmp_path / "py-spy"
    path.write_bytes(b"\x7fELF a py-spy")
    return path


# -- local_py_spy ---------------------------------------------------------------------------


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_py_spy_beside_the_controllers_python_comes_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A py-spy beside the controller's Python (its virtualenv's) is this machine's, even with
    another on the PATH."""
    beside = _executable(tmp_path / "venv" / "bin" / "py-spy")
    _executable(tmp_path / "path" / "py-spy")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    assert local_py_spy() == beside


def test_without_one_beside_python_the_path_is_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no py-spy file beside the Python (a directory of that name is none), the one on
    the PATH is this machine's; with neither, there is none."""
    (tmp_path / "venv" / "bin" / "py-spy").mkdir(parents=True)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    assert local_py_spy() is None
    on_path = _executable(tmp_path / "path" / "py-spy")
    assert local_py_spy() == on_path


# -- carry_py_spy ---------------------------------------------------------------------------


def test_a_py_spy_is_carried_to_a_target_of_this_machines_kind(here: str, binary: Path) -> None:
    """On a target whose ``uname -sm`` is this machine's, the binary's bytes go to a shell on
    the target, keyed for replay as the same question whatever the build; the directory it
    names is where the py-spy now is."""
    transport = ScriptedTransport([(0, b"Linux x86_64\n", b""), (0, f"{OURS}\n".encode(), b"")])
    carried, said = carry_py_spy(transport, binary)
    assert carried is not None and carried.path == OURS
    assert said == f"carried to {OURS}"
    probe, put = transport.calls
    assert probe == Call(("uname", "-sm"), None, 30)
    assert put.argv[:2] == ("sh", "-c") and put.timeout == 300
    assert isinstance(put.stdin, KeyedStdin)
    assert bytes(put.stdin) == b"\x7fELF a py-spy"
    assert put.stdin.replay_key == "py-spy carried by dflash-doctor"


@pytest.mark.parametrize(
    ("uname", "said"),
    [
        ((0, b"Linux aarch64\n", b""), "the target is Linux aarch64"),
        ((0, b"Darwin x86_64\n", b""), "the target is Darwin x86_64"),
        ((127, b"", b"uname: command not found\n"), "the target is unknown"),
    ],
    ids=["other-machine", "other-kernel", "no-uname"],
)
def test_a_target_of_another_kind_gets_nothing(
    here: str, binary: Path, uname: tuple[int, bytes, bytes], said: str
) -> None:
    """Where the target's kernel or machine differs from this one's, or ``uname`` failed,
    nothing is sent, and the reason names both sides."""
    transport = ScriptedTransport([uname])
    assert carry_py_spy(transport, binary) == (
        None,
        f"{said} and this machine's py-spy is for Linux x86_64",
    )
    assert len(transport.calls) == 1


def test_a_binary_that_cannot_be_read_is_not_carried(here: str, tmp_path: Path) -> None:
    """A py-spy that cannot be read here is not carried; the reason names the file."""
    missing = tmp_path / "gone" / "py-spy"
    transport = ScriptedTransport([(0, b"Linux x86_64\n", b"")])
    assert carry_py_spy(transport, missing) == (None, f"{missing}: No such file or directory")
    assert len(transport.calls) == 1


@pytest.mark.parametrize(
    ("put", "said"),
    [
        ((1, b"", b"mktemp: failed\n"), "(rc 1): mktemp: failed"),
        ((0, b"/tmp/elsewhere/py-spy\n", b""), "(rc 0): "),
        ((0, b"/tmp/dflash-doctor-py-spy.AbC12/py-spy\n", b"warn"), "(rc 0): warn"),
        ((0, b"dflash-doctor-py-spy.AbC123/py-spy\n", b""), "(rc 0): "),
        ((2, b"", b"x" * 150 + b"y" * 100), "(rc 2): " + "x" * 100 + "y" * 100),
    ],
    ids=["shell-failed", "not-our-directory", "five-letter-suffix", "relative", "stderr-tail"],
)
def test_an_upload_that_did_not_land_where_expected_is_refused(
    here: str, binary: Path, put: tuple[int, bytes, bytes], said: str
) -> None:
    """An upload that failed, or that names anything but ``<dir>/dflash-doctor-py-spy.XXXXXX/
    py-spy`` (an absolute path, six letters or digits), carried nothing; the reason gives the
    exit status and the last 200 characters of its error output."""
    transport = ScriptedTransport([(0, b"Linux x86_64\n", b""), put])
    assert carry_py_spy(transport, binary) == (
        None,
        f"could not put py-spy on the target {said}",
    )


# -- CarriedPySpy.remove ----------------------------------------------------------------------


def test_removing_takes_away_the_directory_it_was_put_in() -> None:
    """Removal deletes the carried py-spy's directory (``rm -rf --``) and says nothing when
    that worked."""
    transport = ScriptedTransport([(0, b"", b"")])
    assert CarriedPySpy(transport, OURS).remove() is None
    assert transport.calls == [
        Call(("rm", "-rf", "--", "/tmp/dflash-doctor-py-spy.AbC123"), None, 60)
    ]


def test_a_failed_removal_says_which_directory_and_how() -> None:
    """A removal whose ``rm`` failed names the directory and its exit status."""
    transport = ScriptedTransport([(1, b"", b"rm: busy")])
    assert CarriedPySpy(transport, OURS).remove() == (
        "rm of /tmp/dflash-doctor-py-spy.AbC123 exited 1"
    )


@pytest.mark.parametrize(
    "path",
    ["/usr/bin/py-spy", "/tmp/dflash-doctor-py-spy.AbC123/other", "/tmp/py-spy.AbC123/py-spy"],
    ids=["system-binary", "other-file", "other-prefix"],
)
def test_a_directory_this_app_did_not_make_is_never_removed(path: str) -> None:
    """A path that is not a py-spy in a directory this app made is left as it is: no command
    runs, and the reason says so."""
    transport = ScriptedTransport([])
    assert CarriedPySpy(transport, path).remove() == (
        f"{path} is not a directory this app made: left as it is"
    )
    assert transport.calls == []


def test_carrying_and_removing_on_this_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, binary: Path
) -> None:
    """Through the local transport, for real: the py-spy lands, byte for byte and executable
    by its owner only, in a new directory only its owner can enter under the target's
    ``TMPDIR``; removal leaves nothing there."""
    tmpdir = tmp_path / "target-tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    carried, said = carry_py_spy(LocalTransport(), binary)
    assert carried is not None, said
    landed = Path(carried.path)
    assert landed.parent.parent == tmpdir
    assert landed.parent.name.startswith("dflash-doctor-py-spy.")
    assert landed.read_bytes() == binary.read_bytes()
    assert stat.S_IMODE(landed.stat().st_mode) == 0o700
    assert stat.S_IMODE(landed.parent.stat().st_mode) == 0o700
    assert carried.remove() is None
    assert os.listdir(tmpdir) == []
