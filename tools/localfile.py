"""Reading a file the user named on this machine (a transcript, a profile): a regular file
only, opened without blocking, read up to a limit. A FIFO would block ``open`` forever and
``/dev/zero`` would be read until memory runs out; both are refused in one line instead.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# What the reader refuses to read past: far above any real transcript or profile.
MAX_BYTES = 256 << 20

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file at ``path``; OSError with a reason otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, f"is {kind_of(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise OSError(0, f"is {st.st_size:,} bytes, over the {limit:,}-byte limit")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            total += len(chunk)
            if total > limit:  # grew while read
                raise OSError(0, f"grew past the {limit:,}-byte limit while read")
            chunks.append(chunk)
    finally:
        os.close(fd)
