"""Reading a file the user named on this machine (a transcript, a profile, known_hosts):
a regular file only, opened without blocking, read up to a limit. A FIFO would block
``open`` forever and ``/dev/zero`` would be read until memory runs out; both are refused
in one line instead.

The same rule as the probes' (``tools.probes._common.read_capped``), which this uses: one
definition of "a file that is safe to read", on the target and here alike.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tools.errors import UsageError
from tools.probes._common import kind_words, read_capped

# What the reader refuses to read past: far above any real transcript or profile.
MAX_BYTES = 256 << 20


def read_regular(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file at ``path``; OSError with a reason otherwise (its
    ``strerror`` says what the path is: "not a regular file (a FIFO); not opened")."""
    data, more = read_capped(str(path), limit)
    if more:
        raise OSError(0, f"over the {limit:,}-byte limit; not read")
    return data


def read_state(path: Path, what: str, limit: int = MAX_BYTES) -> str:
    """The UTF-8 text of a file read whole on this machine (a session's ``session.json``,
    a baseline, an ssh config); a UsageError in one line for anything else in its place
    (a FIFO, a link to /dev/zero, a directory, bytes that are not UTF-8)."""
    try:
        return read_regular(path, limit).decode("utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: {what} is not UTF-8 text (byte {exc.start})") from None


def refuse_special(path: Path, what: str) -> None:
    """UsageError when ``path`` exists as anything but a regular file (a link is not
    followed): a FIFO would block whoever opens it, a device would be read or written."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"{path}: cannot use it as {what}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(
            f"{path}: {kind_words(st.st_mode)}, not a regular file; not used as {what}"
        )


def may_write(path: Path, *, force: bool, what: str) -> None:
    """UsageError unless ``write_file`` may write ``path``: checked before the work whose
    result it will hold, so a refusal costs nothing and is the only thing said."""
    refuse_special(path, what)
    if path.exists() and not force:
        raise UsageError(f"{path} exists; not overwriting it (use --force)")


def write_file(path: Path, text: str, *, force: bool, what: str) -> None:
    """``text`` written to ``path`` whole, or nothing written: a file there is kept
    unless ``force`` (then replaced, never written through: a temporary file beside it
    is renamed over it), anything but a regular file refused."""
    may_write(path, force=force, what=what)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write {what}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise UsageError(f"{path}: cannot write {what}: {exc.strerror}") from None
