"""Reading a file the user named on this machine (a transcript, a profile, known_hosts):
a regular file only, opened without blocking, read up to a limit. A FIFO would block
``open`` forever and ``/dev/zero`` would be read until memory runs out; both are refused
in one line instead.

The same rule as the probes' (``tools.probes._common.read_capped``), which this uses: one
definition of "a file that is safe to read", on the target and here alike.
"""

from __future__ import annotations

from pathlib import Path

from tools.probes._common import read_capped

# What the reader refuses to read past: far above any real transcript or profile.
MAX_BYTES = 256 << 20


def read_regular(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file at ``path``; OSError with a reason otherwise (its
    ``strerror`` says what the path is: "not a regular file (a FIFO); not opened")."""
    data, more = read_capped(str(path), limit)
    if more:
        raise OSError(0, f"over the {limit:,}-byte limit; not read")
    return data
