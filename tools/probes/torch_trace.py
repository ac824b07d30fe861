"""torch's structured trace directory (``TORCH_TRACE=DIR``): per compile id its function,
cache sizes, compile time, failure and restarts, and per function its compiles and
recompiles, read streaming and bounded (``tools.parsers.torch_trace``).

Where: the profile's ``paths`` (directories or files); the ``TORCH_TRACE`` the trainer's
processes in the workspace set; directories in the workspace holding torch's trace
files (``dedicated_log_torch_trace_*.log``). The newest ``MAX_FILES`` files are read.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import io
import os
from typing import Any

from ..parsers import torch_trace as parser
from . import _workspace_env
from ._common import Context, is_regular, open_regular, profile_places, walk_shallow

NAME = "torch_trace"
TIMEOUT = 60.0

PREFIX = "dedicated_log_torch_trace_"  # torch/_logging/_internal.py LOG_PREFIX
MAX_FILES = 16
MAX_WALK = 5000
WALK_DEPTH = 4
MAX_BYTES = 256 << 20  # per file


def _files_in(directory: str) -> list[str]:
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    out = []
    for name in names:
        path = os.path.join(directory, name)
        if (
            name.startswith(PREFIX)
            and name.endswith(".log")
            and is_regular(path, follow_symlinks=False)
        ):
            out.append(path)
    return out


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def _dirs_in_workspace(workspace: str) -> list[str]:
    out, seen = [], 0
    for top, files in walk_shallow(workspace, WALK_DEPTH):
        seen += len(files)
        if any(f.startswith(PREFIX) for f in files):
            out.append(top)
        if seen > MAX_WALK:
            break
    return out


def collect(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    workspace = params.get("workspace")
    where = profile_places(params, "trace")
    if workspace:
        for pid, env in _workspace_env.in_workspace(str(workspace), ("TORCH_TRACE",)):
            where.append((env["TORCH_TRACE"], f"TORCH_TRACE of pid {pid}"))
        where += [(d, "in the workspace") for d in _dirs_in_workspace(str(workspace))]
    found: dict[str, str] = {}
    for place, why in where:
        for path in _files_in(place) if os.path.isdir(place) else [place]:
            if is_regular(path, follow_symlinks=False):
                found.setdefault(path, why)
    newest = sorted(found, key=_mtime, reverse=True)[:MAX_FILES]
    traces = []
    for path in sorted(newest):
        entry: dict[str, Any] = {
            "path": path,
            "why": found[path],
            "rank": parser.rank_of(os.path.basename(path)),
        }
        try:
            # Buffered: a raw file's readline reads a byte at a time.
            with io.BufferedReader(open_regular(path), 1 << 20) as fh:
                entry.update(parser.read_trace(fh, max_bytes=MAX_BYTES))
        except OSError as exc:
            entry["error"] = exc.strerror or str(exc)
        traces.append(entry)
    return {
        "looked": [{"where": p, "why": why} for p, why in where],
        "files_found": len(found),
        "traces": traces,
    }


VALUE = dict
