"""What every probe shares: the failure type, the error kinds, small stat helpers.

This module, like every probe and parser module, is shipped in the probe bundle and
runs on the target's interpreter: stdlib only, Python >= 3.8 syntax and library
(no string methods or statements newer than 3.8, no runtime ``X | Y`` types). Annotations are
strings (``from __future__ import annotations``), so modern annotation syntax is fine.
"""

from __future__ import annotations

import errno
import glob
import io
import json
import os
import stat
import subprocess
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

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
    "OPEN_FLAGS",
    "RECORD_MAX",
    "SOURCE_MAX",
    "Context",
    "FileRefused",
    "ProbeFailure",
    "TypedDict",
    "classify_oserror",
    "expand_globs",
    "failure_from_oserror",
    "file_entry",
    "file_kind",
    "is_regular",
    "open_regular",
    "profile_places",
    "read_capped",
    "read_text_capped",
    "walk_shallow",
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


def loads_strict(data: bytes | str) -> Any:
    """JSON read from a file on the target, with ``NaN`` and ``±Infinity`` (which Python's
    json accepts and no strict JSON reader does) kept as their text: a fact that quotes
    the file must still be strict JSON in the ledger and the transcript."""
    return json.loads(data, parse_constant=str)


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
    age_s: float  # pulse(): seconds since it last changed
    mode: str
    error: str
    error_kind: str


def file_kind(mode: int) -> str:
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


def is_regular(path: str, follow_symlinks: bool = True) -> bool:
    """Whether ``path`` is a regular file (a symlink to one too, unless
    ``follow_symlinks`` is False); a path that cannot be stat()ed is not."""
    try:
        return stat.S_ISREG(os.stat(path, follow_symlinks=follow_symlinks).st_mode)
    except OSError:
        return False


def expand_globs(
    paths: Iterable[str], most: int | None = None
) -> tuple[list[tuple[str, str | None]], list[str]]:
    """The paths ``paths`` name, in order, each with the glob pattern it matched (None
    for a path given as it is; a pattern's matches sorted, its first ``most``), and the
    patterns that matched nothing: a fact names those rather than dropping them."""
    found: list[tuple[str, str | None]] = []
    unmatched: list[str] = []
    for p in paths:
        if not glob.has_magic(p):
            found.append((p, None))
            continue
        matches = sorted(glob.glob(p))
        if not matches:
            unmatched.append(p)
        found.extend((m, p) for m in matches[:most])
    return found, unmatched


def profile_places(params: dict[str, Any], what: str) -> list[tuple[str, str]]:
    """The places the profile names (``paths``) as (place, why it is looked at). A probe
    that looks there and in the workspace fails without either: it has nowhere to look."""
    given = params.get("paths") or []
    if not given and not params.get("workspace"):
        raise ProbeFailure("bad_params", f"needs {what} paths or a workspace")
    return [(str(g), "named by the profile") for g in given]


def walk_shallow(root: str, depth: int) -> Iterator[tuple[str, list[str]]]:
    """(directory, its file names) for ``root`` and the directories below it, at most
    ``depth`` levels down; hidden directories (``.git``, a ``.venv``) are not entered."""
    # Depth by slashes, the root's trailing one left out: os.walk hands the root back as
    # given ("/ws/"), and counting its slash would take the root for a level down.
    base = root.rstrip("/").count("/")
    for top, dirs, files in os.walk(root):
        if top.rstrip("/").count("/") - base >= depth:
            dirs[:] = []
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        yield top, files


def file_entry(path: str, st: os.stat_result | None = None) -> FileEntry:
    """A stat as a fact; a stat that fails is a fact too (``error``/``error_kind``)."""
    if st is None:
        try:
            st = os.stat(path)
        except OSError as exc:
            refused = _refuse_oserror(exc, path)  # its wording: a symlink loop says so
            return {"path": path, "error": refused.reason, "error_kind": refused.kind}
    return {
        "path": path,
        "kind": file_kind(st.st_mode),
        "size": st.st_size,
        "mtime": st.st_mtime,
        "mode": oct(stat.S_IMODE(st.st_mode)),
    }


def pulse(path: str) -> FileEntry:
    """``file_entry`` with ``age_s``: seconds since the file last changed, on the
    target's own clock (a log that stopped growing while its trainer lives is a stall)."""
    entry = file_entry(path)
    if "mtime" in entry:
        entry["age_s"] = round(time.time() - entry["mtime"], 3)
    return entry


# How an open for reading is made: never blocking (a FIFO nobody writes to), never
# taking a terminal as the controlling one, never leaking into a subprocess.
OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
RECORD_MAX = 4 << 20  # bytes of a metadata/JSON record or a text file read whole
SOURCE_MAX = 8 << 20  # bytes of a script or source file read to be scanned

_KIND_WORDS = {
    "dir": "a directory",
    "fifo": "a FIFO",
    "socket": "a socket",
    "symlink": "a symlink",
    "other": "not a file",
}


def kind_words(mode: int) -> str:
    """What a file of ``mode`` is, in words ("a FIFO", "a character device")."""
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return _KIND_WORDS.get(file_kind(mode), "not a file")


class FileRefused(ProbeFailure, OSError):
    """A file that was not read, and why: both a ProbeFailure (kind, message naming the
    path) and an OSError, so a caller's ``except OSError`` takes it as a per-file problem.
    ``reason`` is the message without the path."""

    def __init__(self, kind: str, reason: str, path: str, err: int = errno.EINVAL) -> None:
        OSError.__init__(self, err, reason, path)
        self.kind = kind if kind in ERROR_KINDS else "error"
        self.reason = reason
        self.message = f"{path}: {reason}"
        self.path = path

    def __str__(self) -> str:
        return self.message


def _refuse_oserror(exc: OSError, path: str) -> FileRefused:
    if exc.errno == errno.ELOOP:
        reason = "symlink loop (too many levels of symbolic links)"
    elif exc.errno == errno.ENXIO:
        reason = "not a regular file (a socket or a device without a reader); not opened"
        return FileRefused("not_a_file", reason, path, exc.errno)
    else:
        reason = exc.strerror or str(exc)
    return FileRefused(classify_oserror(exc), reason, path, exc.errno or errno.EIO)


def _refuse_mode(mode: int, path: str, opened: bool) -> FileRefused:
    if stat.S_ISDIR(mode):
        return FileRefused("is_a_directory", "is a directory", path, errno.EISDIR)
    what = "not read" if opened else "not opened"
    return FileRefused("not_a_file", f"not a regular file ({kind_words(mode)}); {what}", path)


def open_regular(path: str) -> io.FileIO:
    """Open ``path`` for binary reading, or raise ``FileRefused`` saying why not.

    Only a regular file is opened: the path is stat()ed first, so a device is never
    opened at all (opening one may act: a tape rewinds, a watchdog arms), then opened
    with ``OPEN_FLAGS`` (a FIFO swapped in meanwhile cannot block) and the descriptor
    fstat()ed, so what is read is what was checked. A symlink to a regular file is
    followed; one to a device, a FIFO or a directory is refused, and a loop is a refusal.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _refuse_oserror(exc, path) from None
    if not stat.S_ISREG(st.st_mode):
        raise _refuse_mode(st.st_mode, path, opened=False)
    try:
        fd = os.open(path, OPEN_FLAGS)
    except OSError as exc:
        raise _refuse_oserror(exc, path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse_mode(st.st_mode, path, opened=True)
        f = io.FileIO(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise
    f.name = path  # as open() names it: parsers sniff by name
    return f


def read_capped(path: str, cap: int) -> tuple[bytes, bool]:
    """At most ``cap`` bytes of the regular file ``path`` and whether there were more.

    Raises ``FileRefused`` (an OSError) for anything ``open_regular`` refuses. The read
    is bounded by ``cap``, never by the size stat() gave: a file of /proc says 0 and a
    file being written grows."""
    with open_regular(path) as f:
        parts: list[bytes] = []
        left = cap + 1
        while left > 0:
            buf = f.read(min(left, 1 << 20))
            if not buf:
                break
            parts.append(buf)
            left -= len(buf)
    data = b"".join(parts)
    return data[:cap], len(data) > cap


def read_text_capped(path: str, cap: int) -> tuple[str, bool]:
    """``read_capped`` decoded as UTF-8 (undecodable bytes replaced)."""
    data, truncated = read_capped(path, cap)
    return data.decode("utf-8", "replace"), truncated


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
