"""The training log (``train_log.jsonl``) summarised where it lies: steps, tokens/s
(windowed medians, per device when the log has devices), loss, time gaps, restarts,
malformed lines. See ``tools.parsers.trainlog`` for what the summary holds and how a
multi-GB log is read (head and tail, bounded memory).

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

from typing import Any

from ..parsers import trainlog as parser
from ._common import Context, ProbeFailure, file_entry, open_regular

NAME = "trainlog"
TIMEOUT = 120.0


def collect(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    path = params.get("path")
    if not path:
        raise ProbeFailure("bad_params", "trainlog needs a path")
    f = open_regular(path)
    with f:
        try:
            value = parser.summarize(
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
    value["file"] = file_entry(path)
    return value


VALUE = dict  # the parser documents the shape
