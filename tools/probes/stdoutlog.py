"""The trainer's console log (``train_stdout.log``) searched for the error signatures
of ``tools.parsers.signatures.SIGNATURES`` (plus a profile's own): counts, first and
last line, tracebacks with their exception and thread.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

from typing import Any

from ..parsers import stdoutlog as parser
from . import layout
from ._common import Context, ProbeFailure, open_regular, pulse

NAME = "stdoutlog"
TIMEOUT = 120.0


def collect(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    path, source = layout.chosen(params, "stdout_logs", "console log")
    try:
        parser.compile_signatures(params.get("extra_signatures", []))
    except ValueError as exc:
        raise ProbeFailure("bad_params", str(exc)) from None
    f = open_regular(path)
    with f:
        value = parser.scan(
            f,
            extra=params.get("extra_signatures", []),
            max_scan=int(params.get("max_scan", 512 << 20)),
            head=int(params.get("head", 8 << 20)),
            max_line=int(params.get("max_line", 1 << 20)),
        )
    value["file"] = pulse(path)
    value["source"] = source
    return value


VALUE = dict  # the parser documents the shape
