"""tools.probes._checkpoint_files: whether one file of a checkpoint is whole, told without
loading it: a torch zip's directory (and, deep, its CRCs), a safetensors header against
the file's size, a JSON file parsed; a special file is never opened, and every problem is
a sentence in the file's check rather than an exception."""

from __future__ import annotations

import errno
import json
import os
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tools.probes._checkpoint_files import METADATA_MAX, check_file, refused
from tools.probes._common import FileRefused

MTIME = 1_650_000_000.0


def _write(path: Path, content: bytes) -> str:
    path.write_bytes(content)
    os.utime(path, (MTIME, MTIME))
    return str(path)


def _zip(path: Path, members: dict[str, bytes]) -> str:
    """A torch-style zip archive, its members stored uncompressed."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    os.utime(path, (MTIME, MTIME))
    return str(path)


def _safetensors(path: Path, header: Any, data_bytes: int) -> str:
    raw = json.dumps(header).encode()
    return _write(path, struct.pack("<Q", len(raw)) + raw + b"\0" * data_bytes)


def _check(path: str, deep: bool = False) -> dict[str, Any]:
    return dict(check_file(path, os.path.basename(path), deep))


# -- what is not a readable regular file -------------------------------------------------


def test_a_missing_file_is_a_problem_with_the_reason(tmp_path: Path) -> None:
    """A file that vanished is not whole: ok False, the OS's reason, nothing else known."""
    path = str(tmp_path / "model.pt")
    assert check_file(path, "model.pt", False) == {
        "name": "model.pt",
        "ok": False,
        "problem": "No such file or directory",
    }


def test_a_symlink_loop_says_it_is_one(tmp_path: Path) -> None:
    """A link that leads back to itself is reported in words, not as a bare errno."""
    (tmp_path / "model.pt").symlink_to(tmp_path / "model.pt")
    assert _check(str(tmp_path / "model.pt")) == {
        "name": "model.pt",
        "ok": False,
        "problem": "symlink loop (too many levels of symbolic links)",
    }


def test_a_directory_inside_a_checkpoint_has_nothing_to_check(tmp_path: Path) -> None:
    """A shard or state directory is listed with its size and mtime, format ``other``,
    ok None."""
    d = tmp_path / "optimizer_state"
    d.mkdir()
    os.utime(d, (MTIME, MTIME))
    assert _check(str(d)) == {
        "name": "optimizer_state",
        "size": os.stat(d).st_size,
        "mtime": MTIME,
        "ok": None,
        "format": "other",
    }


@pytest.mark.parametrize(
    ("what", "problem"),
    [
        ("fifo", "not a regular file (a FIFO); not opened"),
        ("link-to-device", "not a regular file (a character device); not opened"),
    ],
    ids=["fifo", "link-to-dev-null"],
)
def test_a_special_file_is_never_opened_and_is_a_problem(
    tmp_path: Path, what: str, problem: str
) -> None:
    """A FIFO (reading it would block) or a link to a device named like a weight file is a
    problem saying what it is; it is not opened."""
    path = tmp_path / "model.pt"
    if what == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(os.devnull)
    assert _check(str(path)) == {
        "name": "model.pt",
        "format": "other",
        "ok": False,
        "problem": problem,
    }


@pytest.mark.parametrize("name", ["model.pt", "model.safetensors", "meta.json", "notes.txt"])
def test_an_empty_file_is_a_problem_whatever_its_name(tmp_path: Path, name: str) -> None:
    """A zero-byte file (a save that never wrote) is ``empty file``; no format is claimed."""
    path = _write(tmp_path / name, b"")
    assert _check(path) == {
        "name": name,
        "size": 0,
        "mtime": MTIME,
        "ok": False,
        "problem": "empty file",
    }


# -- torch files ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["model.pt", "model.pth", "pytorch_model.bin", "last.CKPT"])
def test_a_whole_torch_zip_is_ok_with_its_member_count(tmp_path: Path, name: str) -> None:
    """Any torch extension (any case) holding an intact zip is ``torch-zip``, ok, with the
    number of members its directory lists."""
    path = _zip(
        tmp_path / name, {"archive/data.pkl": b"\x80\x02}q\x00.", "archive/data/0": b"x" * 64}
    )
    assert _check(path) == {
        "name": name,
        "size": os.path.getsize(path),
        "mtime": MTIME,
        "ok": True,
        "format": "torch-zip",
        "members": 2,
    }


@pytest.mark.parametrize(
    "head", [b"\x80\x02\x8a\x0alZ", b"\x80\x04\x95\x00"], ids=["protocol-2", "protocol-4"]
)
def test_a_legacy_torch_pickle_has_nothing_to_check(tmp_path: Path, head: bytes) -> None:
    """A file saved without the zip format (a bare pickle stream, first byte 0x80) is
    ``torch-legacy`` with ok None: there is no directory to check it against."""
    path = _write(tmp_path / "model.pt", head + b"rest of the pickle")
    check = _check(path)
    assert (check["format"], check["ok"]) == ("torch-legacy", None)
    assert "problem" not in check


def test_a_torch_file_that_is_no_zip_is_a_problem(tmp_path: Path) -> None:
    """A torch file that is neither a pickle nor a zip says it is not a readable zip."""
    path = _write(tmp_path / "model.bin", b"this is not an archive at all")
    check = _check(path)
    assert check["format"] == "torch-zip" and check["ok"] is False
    assert check["problem"] == "not a readable zip (truncated?): File is not a zip file"


def test_a_torch_zip_cut_short_is_a_problem(tmp_path: Path) -> None:
    """A zip whose end (its central directory) was cut off is not readable."""
    path = _zip(tmp_path / "model.pt", {"archive/data/0": b"w" * 4000})
    Path(path).write_bytes(Path(path).read_bytes()[:2000])
    check = _check(path)
    assert check["ok"] is False
    assert check["problem"] == "not a readable zip (truncated?): File is not a zip file"


def test_deep_names_the_member_whose_crc_does_not_match(tmp_path: Path) -> None:
    """Only a deep check reads the members; it names the first whose CRC is wrong, and
    the member count is still given."""
    path = _zip(tmp_path / "model.pt", {"archive/version": b"3\n", "archive/data/0": b"A" * 500})
    raw = bytearray(Path(path).read_bytes())
    raw[raw.index(b"A" * 500) + 10] = ord("B")
    Path(path).write_bytes(bytes(raw))
    assert _check(path, deep=False)["ok"] is True
    check = _check(path, deep=True)
    assert (check["ok"], check["members"]) == (False, 2)
    assert check["problem"] == "CRC mismatch in member archive/data/0"


# -- safetensors -------------------------------------------------------------------------


def test_a_whole_safetensors_file_is_ok(tmp_path: Path) -> None:
    """Tensor data that ends exactly at the end of the file is whole; ``__metadata__`` is
    not a tensor and its fields do not count."""
    header = {
        "__metadata__": {"format": "pt", "data_offsets": [0, 999999]},
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]},
    }
    path = _safetensors(tmp_path / "model.safetensors", header, 24)
    check = _check(path)
    assert (check["format"], check["ok"]) == ("safetensors", True)
    assert "problem" not in check


def test_safetensors_data_one_byte_short_is_truncated(tmp_path: Path) -> None:
    """The problem says where the tensor data should end and how long the file is."""
    header = {"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
    raw_len = len(json.dumps(header).encode())
    path = _safetensors(tmp_path / "model.safetensors", header, 15)
    size = 8 + raw_len + 15
    check = _check(path)
    assert check["ok"] is False
    assert check["problem"] == (
        f"tensor data ends at byte {8 + raw_len + 16}, file has {size} (truncated)"
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"\x05\x00\x00", "shorter than its 8-byte header length"),
        (struct.pack("<Q", 100) + b"{}", "header length 100 past the end of the file"),
        (
            struct.pack("<Q", 4) + b"{bad",
            "does not parse: Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)",
        ),
        (struct.pack("<Q", 6) + b'"text"', "header is not a JSON object"),
    ],
    ids=["no-length", "length-past-the-end", "header-not-json", "header-a-string"],
)
def test_safetensors_header_problems(tmp_path: Path, content: bytes, problem: str) -> None:
    """A header that cannot be what the format says is a problem of the file, in words."""
    path = _write(tmp_path / "model.safetensors", content)
    check = _check(path)
    assert (check["format"], check["ok"], check["problem"]) == ("safetensors", False, problem)


def test_a_safetensors_header_length_over_100_mib_is_refused_unread(tmp_path: Path) -> None:
    """A header length beyond 100 MiB is taken as damage even when the file is that long:
    the header is not read into memory."""
    n = 200 << 20
    path = tmp_path / "model.safetensors"
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", n))
        f.truncate(n + (50 << 20))  # sparse: no disk used
    check = _check(str(path))
    assert check["problem"] == f"header length {n} past the end of the file"


# -- JSON and everything else ------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "ok", "problem"),
    [
        (b'{"step": 10, "loss": NaN}', True, None),
        (b"[1, 2, 3]", True, None),
        (
            b'{"step": 10,',
            False,
            "does not parse: Expecting property name enclosed in double quotes: "
            "line 1 column 13 (char 12)",
        ),
        (b"[" * 100_000, False, "does not parse: nested too deep for a JSON parser"),
    ],
    ids=["object-with-nan", "list", "cut-object", "too-deep"],
)
def test_json_files_are_parsed(
    tmp_path: Path, content: bytes, ok: bool, problem: str | None
) -> None:
    """A JSON file is whole when it parses (any JSON value); else the problem quotes the
    parser, and nesting too deep for it is said in words."""
    path = _write(tmp_path / "config.json", content)
    check = _check(path)
    assert (check["format"], check["ok"], check.get("problem")) == ("json", ok, problem)


def test_a_json_file_over_the_read_limit_is_not_read(tmp_path: Path) -> None:
    """A JSON file larger than 16 metadata records is not read: nothing to check (its NUL
    bytes, which would not parse, prove it)."""
    path = tmp_path / "huge.json"
    with open(path, "wb") as f:
        f.truncate(METADATA_MAX * 16 + 1)
    check = _check(str(path))
    assert (check["format"], check["ok"]) == ("json", None)
    assert "problem" not in check


def test_a_file_of_another_kind_has_nothing_to_check(tmp_path: Path) -> None:
    """A file of no format this module knows is ``other``, ok None, with size and mtime."""
    path = _write(tmp_path / "README.md", b"# run 7\n")
    assert _check(path) == {
        "name": "README.md",
        "size": 8,
        "mtime": MTIME,
        "ok": None,
        "format": "other",
    }


def test_the_name_given_is_the_one_reported(tmp_path: Path) -> None:
    """The check names the file as the caller does (a path relative to the checkpoint),
    and the format follows that name."""
    path = _write(tmp_path / "blob", b'{"a": 1}')
    check = check_file(path, "sub/meta.json", False)
    assert (check["name"], check["format"], check["ok"]) == ("sub/meta.json", "json", True)


# -- how an OSError is worded --------------------------------------------------------------


def test_refused_passes_a_refusal_through() -> None:
    """A refusal already worded is returned as it is."""
    given = FileRefused("not_a_file", "not a regular file (a FIFO); not opened", "/c/p")
    assert refused(given, "/elsewhere") is given


def test_refused_words_the_error_as_the_path_is_now(tmp_path: Path) -> None:
    """An OSError for a path that is now a directory is worded as opening it words it."""
    result = refused(OSError(errno.EIO, "Input/output error"), str(tmp_path))
    assert (result.kind, result.reason) == ("is_a_directory", "is a directory")


def test_refused_keeps_the_error_when_the_file_opens_fine(tmp_path: Path) -> None:
    """When the file opens fine now, the original error is kept, as an ``io_error``
    naming the path."""
    path = _write(tmp_path / "model.pt", b"x")
    result = refused(OSError(errno.EIO, "Input/output error"), path)
    assert (result.kind, result.reason, str(result)) == (
        "io_error",
        "Input/output error",
        f"{path}: Input/output error",
    )
