"""Reading and writing a file the user named on this machine (tools.localfile): only a regular
file is read, never past a limit, and anything else is refused in one line naming the path
and what it is; a file is written whole or not at all, never over an existing one unless
forced, and never through a link."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tools.errors import UsageError
from tools.localfile import may_write, read_regular, read_state, refuse_special, write_file


def _refused(message: str) -> str:
    """A ``match`` for exactly ``message``."""
    return f"^{re.escape(message)}$"


# -- read_regular ---------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 9, 10], ids=["empty", "under", "at-the-limit"])
def test_a_regular_file_up_to_the_limit_is_read_whole(tmp_path: Path, size: int) -> None:
    """A regular file of up to ``limit`` bytes is read whole."""
    path = tmp_path / "f"
    path.write_bytes(b"x" * size)
    assert read_regular(path, limit=10) == b"x" * size


def test_a_symlink_to_a_regular_file_is_read(tmp_path: Path) -> None:
    """A link to a regular file is followed: what is read is the file."""
    (tmp_path / "real").write_bytes(b"data")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert read_regular(tmp_path / "link") == b"data"


@pytest.mark.parametrize(
    ("limit", "reason"),
    [(10, "over the 10-byte limit; not read"), (1000, "over the 1,000-byte limit; not read")],
    ids=["ten", "thousands-separated"],
)
def test_a_file_over_the_limit_is_not_read(tmp_path: Path, limit: int, reason: str) -> None:
    """A file longer than the limit is refused with an OSError whose reason gives the limit,
    thousands separated."""
    path = tmp_path / "f"
    path.write_bytes(b"x" * (limit + 1))
    with pytest.raises(OSError) as refused:
        read_regular(path, limit=limit)
    assert refused.value.strerror == reason


def test_what_is_not_a_regular_file_is_refused_saying_what_it_is(tmp_path: Path) -> None:
    """A FIFO (which would block the open), ``/dev/zero`` (it would be read without end), a
    directory and a missing path are refused with a reason that says what the path is."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reasons = {}
    for name, path in [
        ("fifo", fifo),
        ("dev-zero", Path("/dev/zero")),
        ("directory", tmp_path),
        ("missing", tmp_path / "gone"),
    ]:
        with pytest.raises(OSError) as refused:
            read_regular(path)
        reasons[name] = refused.value.strerror
    assert reasons == {
        "fifo": "not a regular file (a FIFO); not opened",
        "dev-zero": "not a regular file (a character device); not opened",
        "directory": "is a directory",
        "missing": "No such file or directory",
    }


# -- read_state -----------------------------------------------------------------------------


def test_a_state_file_is_read_as_utf8_text(tmp_path: Path) -> None:
    """A state file's bytes are its UTF-8 text."""
    path = tmp_path / "session.json"
    path.write_bytes('{"host": "nœud"}'.encode())
    assert read_state(path, "the session") == '{"host": "nœud"}'


def test_a_state_file_that_is_not_utf8_is_refused_naming_the_byte(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 are refused in one line naming the file, what it was read
    as and the offset of the first bad byte."""
    path = tmp_path / "session.json"
    path.write_bytes(b"ok\xff rest")
    with pytest.raises(
        UsageError, match=_refused(f"{path}: the session is not UTF-8 text (byte 2)")
    ):
        read_state(path, "the session")


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("fifo", "not a regular file (a FIFO); not opened"),
        ("link-to-dev-zero", "not a regular file (a character device); not opened"),
        ("directory", "is a directory"),
        ("missing", "No such file or directory"),
        ("too-long", "over the 4-byte limit; not read"),
    ],
    ids=["fifo", "link-to-dev-zero", "directory", "missing", "too-long"],
)
def test_a_state_file_that_cannot_be_read_is_refused_in_one_line(
    tmp_path: Path, kind: str, reason: str
) -> None:
    """Anything but a regular file within the limit is a UsageError naming the path, what it
    was read as, and why."""
    path = tmp_path / "state"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link-to-dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "too-long":
        path.write_text("12345")
    with pytest.raises(UsageError, match=_refused(f"{path}: cannot read a baseline: {reason}")):
        read_state(path, "a baseline", limit=4)


# -- refuse_special and may_write -----------------------------------------------------------


@pytest.mark.parametrize("kind", ["missing", "regular"])
def test_a_missing_or_regular_path_may_be_used(tmp_path: Path, kind: str) -> None:
    """A path where nothing is, or a regular file, is no special file."""
    path = tmp_path / "report.md"
    if kind == "regular":
        path.write_text("old")
    refuse_special(path, "the report")


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("directory", "a directory"),
        ("fifo", "a FIFO"),
        ("link-to-file", "a symlink"),
        ("dangling-link", "a symlink"),
    ],
    ids=["directory", "fifo", "link-to-file", "dangling-link"],
)
def test_a_special_path_is_refused_saying_what_it_is(tmp_path: Path, kind: str, words: str) -> None:
    """A directory, a FIFO or a link (not followed, even to a regular file) is refused, naming
    the path, what it is and what it was to be used as."""
    path = tmp_path / "report.md"
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "link-to-file":
        (tmp_path / "real").write_text("x")
        path.symlink_to(tmp_path / "real")
    else:
        path.symlink_to(tmp_path / "gone")
    message = f"{path}: {words}, not a regular file; not used as the report"
    with pytest.raises(UsageError, match=_refused(message)):
        refuse_special(path, "the report")


def test_an_existing_file_may_be_written_only_when_forced(tmp_path: Path) -> None:
    """A path with nothing there may be written; a regular file there only with force, and
    the refusal says how to force it."""
    path = tmp_path / "report.md"
    may_write(path, force=False, what="the report")
    path.write_text("old")
    with pytest.raises(
        UsageError, match=_refused(f"{path} exists; not overwriting it (use --force)")
    ):
        may_write(path, force=False, what="the report")
    may_write(path, force=True, what="the report")


def test_force_does_not_allow_writing_a_special_file(tmp_path: Path) -> None:
    """Forcing does not make a FIFO writable: it is refused as it is without force."""
    path = tmp_path / "report.md"
    os.mkfifo(path)
    with pytest.raises(UsageError, match="a FIFO, not a regular file; not used as the report"):
        may_write(path, force=True, what="the report")


# -- write_file -----------------------------------------------------------------------------


def test_a_new_file_is_written_whole_as_utf8(tmp_path: Path) -> None:
    """A new file holds the text as UTF-8 and nothing is left beside it."""
    path = tmp_path / "report.md"
    write_file(path, "# Report\nnœud ✓\n", force=False, what="the report")
    assert path.read_bytes() == "# Report\nnœud ✓\n".encode()
    assert os.listdir(tmp_path) == ["report.md"]


def test_an_existing_file_is_kept_unless_forced(tmp_path: Path) -> None:
    """Without force an existing file is refused and kept as it was; with force it is
    replaced."""
    path = tmp_path / "report.md"
    path.write_text("old")
    with pytest.raises(UsageError, match="exists; not overwriting it"):
        write_file(path, "new", force=False, what="the report")
    assert path.read_text() == "old"
    write_file(path, "new", force=True, what="the report")
    assert path.read_text() == "new"


def test_a_forced_write_replaces_the_file_never_writes_through_it(tmp_path: Path) -> None:
    """A forced write puts a new file in the path's place: another name for the old file (a
    hard link) keeps the old content."""
    other = tmp_path / "other-name"
    other.write_text("old")
    path = tmp_path / "report.md"
    os.link(other, path)
    write_file(path, "new", force=True, what="the report")
    assert (path.read_text(), other.read_text()) == ("new", "old")


def test_a_link_planted_at_the_temporary_name_is_not_followed(tmp_path: Path) -> None:
    """A link standing where the temporary file would be made is neither followed nor
    replaced: the write is refused naming the path, and the link's target is untouched."""
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    path = tmp_path / "report.md"
    planted = tmp_path / f".report.md.{os.getpid()}.tmp"
    planted.symlink_to(victim)
    with pytest.raises(UsageError, match=_refused(f"{path}: cannot write the report: File exists")):
        write_file(path, "new", force=False, what="the report")
    assert victim.read_text() == "keep me" and not path.exists()


def test_a_file_in_a_missing_directory_is_refused_in_one_line(tmp_path: Path) -> None:
    """A path whose directory does not exist is refused naming the path and the reason."""
    path = tmp_path / "gone" / "report.md"
    message = f"{path}: cannot write the report: No such file or directory"
    with pytest.raises(UsageError, match=_refused(message)):
        write_file(path, "new", force=False, what="the report")
