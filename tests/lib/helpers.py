"""Small helpers shared by tests."""

from __future__ import annotations

import os


def processes_with(marker: str) -> list[int]:
    """PIDs whose command line contains ``marker`` (used to prove a command is gone)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found
