"""The training log summarised where it lies: steps, tokens/s (windowed medians, per
device when the log has devices), loss, time gaps, restarts, malformed lines, and the
schema read (format, which field is what). See ``tools.parsers.trainlog`` for what the
summary holds and how a multi-GB log is read (head and tail, bounded memory).

Which file: the one the profile names (``path``), else the workspace's candidates as
``layout.discover`` ranks them, the first that holds training steps. ``source`` in the
value says which file was read and why, and why the candidates before it were not.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

from typing import Any

from ..parsers import trainlog as parser
from ._common import Context, ProbeFailure, open_regular, pulse

NAME = "trainlog"
TIMEOUT = 120.0
MAX_CANDIDATES = 5  # workspace candidates read before giving up on finding steps


def _summarize(path: str, params: dict[str, Any]) -> dict[str, Any]:
    f = open_regular(path)
    with f:
        try:
            value = parser.summarize_log(
                f,
                fields=params.get("fields") or None,
                throughput_unit=params.get("throughput_unit"),
                max_scan=int(params.get("max_scan", 512 << 20)),
                head=int(params.get("head", 8 << 20)),
                max_line=int(params.get("max_line", 1 << 20)),
                windows=int(params.get("windows", 200)),
            )
        except ValueError as exc:
            raise ProbeFailure("bad_params", str(exc), path) from None
    value["file"] = pulse(path)
    return value


def _candidates(workspace: str) -> list[dict[str, Any]]:
    from . import layout  # only a workspace sweep needs the walk

    found: Any = dict(layout.discover(workspace)).get("train_logs") or []
    return [dict(c) for c in found if isinstance(c, dict) and c.get("path")]


def collect(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    path = params.get("path")
    if path:
        value = _summarize(path, params)
        value["source"] = {
            "path": path,
            "why": params.get("because") or "named by the profile",
            "tried": [],
        }
        return value
    workspace = params.get("workspace")
    if not workspace:
        raise ProbeFailure("bad_params", "trainlog needs a path or a workspace")
    candidates = _candidates(workspace)
    if not candidates:
        raise ProbeFailure(
            "not_found", f"no training log found under {workspace} (layout walk)", workspace
        )
    tried: list[dict[str, Any]] = []
    first: dict[str, Any] | None = None
    for cand in candidates[:MAX_CANDIDATES]:
        try:
            value = _summarize(str(cand["path"]), params)
        except ProbeFailure as exc:
            tried.append({"path": cand["path"], "why_not": f"{exc.kind}: {exc}"})
            continue
        source = {"path": cand["path"], "why": cand.get("why"), "kind": cand.get("kind")}
        if value["steps"]["count"]:
            value["source"] = dict(source, tried=tried)
            return value
        tried.append({"path": cand["path"], "why_not": "no training step records in it"})
        if first is None:
            first = value
            first["source"] = source
    if first is None:
        raise ProbeFailure(
            "not_found",
            f"no readable training log under {workspace}: "
            + "; ".join(f"{t['path']}: {t['why_not']}" for t in tried),
            workspace,
        )
    # None holds steps: the best-ranked one readable is the fact, and it says so.
    first["source"]["tried"] = tried
    first["source"]["why"] = str(first["source"].get("why")) + (
        "; no candidate held training step records"
    )
    return first


VALUE = dict  # the parser documents the shape
