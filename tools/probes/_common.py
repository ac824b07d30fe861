"""What every probe shares: the failure type, the error kinds, small stat helpers.

This module, like every probe and parser module, is shipped in the probe bundle and
runs on the target's interpreter: stdlib only, Python >= 3.8 syntax and library
(no string methods or statements newer than 3.8, no runtime ``X | Y`` types). Annotations are
strings (``from __future__ import annotations``), so modern annotation syntax is fine.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import subprocess
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TypedDict
else:
    # pydantic (on the doctor's side) validates probe values against these TypedDicts
    # and, before Python 3.12, needs typing_extensions' flavour; the target may not have
    # typing_extensions, and there the class only documents the shape.
    try:
        from typing_extensions import TypedDict
    except ImportError:
        from typing import TypedDict

__all__ = [
    "ERROR_KINDS",
    "Context",
    "ProbeFailure",
    "TypedDict",
    "classify_oserror",
    "failure_from_oserror",
    "file_entry",
]

# The closed set of ways a probe can fail; the doctor renders them, rules may match them.
ERROR_KINDS = (
    "not_found",  # a path the profile names does not exist
    "permission_denied",  # exists, but this user may not read it
    "not_a_directory",  # a directory was expected
    "is_a_directory",  # a file was expected
    "not_a_file",  # a FIFO, socket or device where a regular file was expected
    "timeout",  # the probe outlived its time limit and was killed
    "crashed",  # the probe's process died (signal, exit) without a result
    "bad_params",  # the doctor sent parameters the probe cannot use
    "unavailable",  # a tool or module the probe needs is not installed there
    "io_error",  # any other OS error while reading
    "error",  # a bug or an unexpected exception in the probe itself
    "bundle_failed",  # the bundle did not run at all (no interpreter, syntax, killed)
    "malformed",  # the bundle answered, but not in the declared shape
    "skipped",  # not run: another probe or a dependency made it moot
)


class ProbeFailure(Exception):
    """Raised inside a probe to fail it with a kind the doctor understands."""

    def __init__(self, kind: str, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind if kind in ERROR_KINDS else "error"
        self.message = message
        self.path = path


_ERRNO_KINDS = {
    errno.ENOENT: "not_found",
    errno.EACCES: "permission_denied",
    errno.EPERM: "permission_denied",
    errno.ENOTDIR: "not_a_directory",
    errno.EISDIR: "is_a_directory",
}


def classify_oserror(exc: OSError) -> str:
    return _ERRNO_KINDS.get(exc.errno or 0, "io_error")


def failure_from_oserror(exc: OSError, path: str) -> ProbeFailure:
    reason = exc.strerror or str(exc)
    return ProbeFailure(classify_oserror(exc), f"{path}: {reason}", path)


class FileEntry(TypedDict, total=False):
    path: str
    kind: str  # file | dir | symlink | fifo | socket | device | other
    size: int
    mtime: float
    mode: str
    error: str
    error_kind: str


def _kind_of(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "other"


def file_entry(path: str, st: os.stat_result | None = None) -> FileEntry:
    """A stat as a fact; a stat that fails is a fact too (``error``/``error_kind``)."""
    if st is None:
        try:
            st = os.stat(path)
        except OSError as exc:
            return {
                "path": path,
                "error": exc.strerror or str(exc),
                "error_kind": classify_oserror(exc),
            }
    return {
        "path": path,
        "kind": _kind_of(st.st_mode),
        "size": st.st_size,
        "mtime": st.st_mtime,
        "mode": oct(stat.S_IMODE(st.st_mode)),
    }


def open_regular(path: str) -> io.FileIO:
    """Open ``path`` for binary reading, or fail with the reason as a ProbeFailure.

    A FIFO would block forever and a directory cannot be read: both are refused before
    ``open``, so a misnamed path never hangs a probe.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise failure_from_oserror(exc, path) from None
    if stat.S_ISDIR(st.st_mode):
        raise ProbeFailure("is_a_directory", f"{path}: is a directory", path)
    if not stat.S_ISREG(st.st_mode):
        raise ProbeFailure(
            "not_a_file", f"{path}: not a regular file ({_kind_of(st.st_mode)})", path
        )
    try:
        return open(path, "rb", buffering=0)
    except OSError as exc:
        raise failure_from_oserror(exc, path) from None


class CommandRecord(TypedDict):
    argv: list[str]
    rc: int | None


class Context:
    """Handed to every probe: the subprocesses it ran are recorded, so a fact can name
    the command behind it (``nvidia-smi --query-gpu=…``) and anyone can re-run it."""

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = deadline
        self.commands: list[CommandRecord] = []

    def remaining(self, default: float = 60.0) -> float:
        if self.deadline is None:
            return default
        return max(0.1, self.deadline - time.monotonic())

    def run(self, argv: list[str], timeout: float | None = None) -> tuple[int | None, bytes, bytes]:
        """Run ``argv`` (no shell); rc is None when the command is missing or timed out."""
        record: CommandRecord = {"argv": list(argv), "rc": None}
        self.commands.append(record)
        limit = self.remaining() if timeout is None else min(timeout, self.remaining())
        try:
            proc = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=limit,
            )
        except FileNotFoundError:
            return None, b"", (f"{argv[0]}: command not found").encode()
        except subprocess.TimeoutExpired:
            return None, b"", (f"{argv[0]}: timed out after {limit:.0f}s").encode()
        record["rc"] = proc.returncode
        return proc.returncode, proc.stdout, proc.stderr
