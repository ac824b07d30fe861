"""The environment of each live process that works in a workspace (its working directory
there): where a trainer points torch's records (``TORCH_TRACE``, the Flight Recorder's
dump prefix), read from ``/proc/PID/environ``. Only the names asked for are returned.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import os

MAX_ENVIRON = 1 << 20


def _environ(pid: str) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            raw = fh.read(MAX_ENVIRON)
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        key, eq, value = item.partition(b"=")
        if eq:
            out[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return out


def in_workspace(workspace: str, names: tuple[str, ...]) -> list[tuple[str, dict[str, str]]]:
    """(pid, {name: value}) for each live process whose working directory is in
    ``workspace`` and that sets one of ``names``."""
    root = workspace.rstrip("/")
    out = []
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
    for pid in pids:
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd != root and not cwd.startswith(root + "/"):
            continue
        env = _environ(pid)
        picked = {n: env[n] for n in names if env.get(n)}
        if picked:
            out.append((pid, picked))
    return out
