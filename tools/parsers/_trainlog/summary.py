"""The entry point: which format the log is in, which byte ranges are read, in one
process or in forked pieces, and the summary with what was read (``coverage``).

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import io
import json
import math
import os
from typing import Any

from .. import logformats
from .._lines import plan_ranges
from .fields import UNIT_SCALE
from .forked import PARALLEL_MIN, idle_cpus, scan_forked
from .reader import pieces, scan
from .result import result
from .summarizer import Summarizer
from .values import SAMPLE_BYTES, SAMPLES, TOO_DEEP, clip_record, clip_value, loads


def _trainer_state(
    f: io.FileIO,
    size: int,
    fields: dict[str, Any],
    scale: float | None,
    max_scan: int,
    windows: int,
    max_values: int,
) -> dict[str, Any]:
    """A ``trainer_state.json``: one JSON document, read whole (it holds one entry per
    logging step, so even a long run's is a few MB), its ``log_history`` the records."""
    steps: list[dict[str, Any]] = []
    summaries: list[dict[str, Any]] = []
    evals = 0
    state: dict[str, Any] = {}
    positions: list[int] = []
    problem = None
    f.seek(0)
    data = f.read(max_scan + 1)
    if len(data) > max_scan:
        problem = "too_large"
    else:
        try:
            steps, summaries, evals, state = logformats.trainer_state_records(
                loads(data), positions
            )
        except RecursionError:
            problem = TOO_DEEP
        except json.JSONDecodeError as exc:
            # Ends inside the document: written only in part (a copy or a save cut off).
            at_end = exc.pos >= len(data.rstrip()) or exc.msg.startswith("Unterminated string")
            problem = "cut_document" if at_end else "not_json"
        except ValueError:
            problem = "not_trainer_state"
    window = max(1, math.ceil(len(steps) / max(1, windows)))
    summ = Summarizer(fields, scale, window, max_values, "trainer_state")
    if problem is not None:
        summ.bad(problem, None, 0, data[:SAMPLE_BYTES])
    # A record's "line" is its place in log_history (1-based): the document has no
    # lines a figure could cite (``line_unit``).
    lines: list[int | None] = (
        list(positions) if len(positions) == len(steps) else [None] * len(steps)
    )
    summ.batch(steps, lines, [0] * len(steps))
    out = result(summ)
    out["schema"]["why"]["format"] = "a JSON document with a log_history (Trainer's state)"
    out["trainer_state"] = {k: clip_value(v) for k, v in state.items()}
    out["run_summaries"] = [clip_record(d) for d in summaries[-SAMPLES:]]
    out["eval_records"] = evals
    out["line_unit"] = "log_history entry"
    out["size"] = size
    out["coverage"] = {
        "mode": "full" if problem != "too_large" else "none",
        "ranges": [[0, min(size, len(data))]],
        "bytes_read": len(data),
        "skipped_bytes": max(0, size - len(data)),
        "lines_read": None,
    }
    out["unterminated_last_line"] = False
    out["cut_last_line"] = problem == "cut_document"
    return out


def summarize_log(
    f: io.FileIO,
    *,
    fields: dict[str, Any] | None = None,
    throughput_unit: str | None = None,
    max_scan: int = 512 << 20,
    head: int = 8 << 20,
    max_line: int = 1 << 20,
    windows: int = 200,
    max_values: int = 100_000,
    workers: int | None = None,
) -> dict[str, Any]:
    """Summarise the training log open in ``f`` (binary, unbuffered is fine): JSON
    lines, CSV, text lines or a ``trainer_state.json``, as ``logformats.sniff`` finds
    (or ``fields["format"]`` names).

    ``fields`` maps roles (``step``, ``loss``, ``throughput``, ``time``) to the log's
    own field names, and ``group`` to the fields that split it into series (a list; an
    empty list for one series); ``throughput_unit`` (``tok/s``, ``ktok/s``, ``mtok/s``)
    overrides the unit guessed from the field name. ``workers``: processes that read
    pieces of a large log side by side (default: one per idle CPU, at most 4, for logs
    over ``PARALLEL_MIN`` bytes; 1 reads in this process).
    """
    size = os.fstat(f.fileno()).st_size
    ranges = plan_ranges(size, max_scan, head)
    scale = None
    if throughput_unit is not None:
        scale = UNIT_SCALE.get(throughput_unit.lower())
        if scale is None:
            known = ", ".join(sorted(UNIT_SCALE))
            raise ValueError(f"unknown throughput unit {throughput_unit!r} (know {known})")
    # Size the windows from a first look at the line length, so a log of any length
    # gives about ``windows`` of them.
    f.seek(0)
    sample = f.read(64 << 10)
    name = f.name if isinstance(f.name, str) else ""
    fmt, fmt_why = logformats.sniff(name, sample, (fields or {}).get("format") or None)
    if fmt == "trainer_state":
        return _trainer_state(f, size, dict(fields or {}), scale, max_scan, windows, max_values)
    header = None
    if fmt == "csv":
        header = logformats.csv_header((logformats.text_lines(sample) or [b""])[0])
        if header is None:
            fmt, fmt_why = "text", "no CSV header row: read as text lines"
    avg = max(1.0, len(sample) / max(1, sample.count(b"\n")))
    scanned = sum(e - s for s, e in ranges)
    window = max(1, math.ceil(scanned / avg / max(1, windows)))

    def new() -> Summarizer:
        return Summarizer(dict(fields or {}), scale, window, max_values, fmt, header)

    if workers is None:
        workers = idle_cpus() if scanned >= PARALLEL_MIN else 1
    whole = pieces(f, ranges, size, 1)
    read = None
    if workers > 1 and hasattr(os, "fork"):
        read = scan_forked(f, pieces(f, ranges, size, workers), new, max_line)
    if read is None:
        read = scan(f, whole, new(), max_line)
    out = result(read.summ)
    out["schema"]["why"]["format"] = fmt_why
    out["size"] = size
    out["coverage"] = {
        "mode": "full" if len(ranges) == 1 else "head+tail",
        "ranges": [[s, e] for s, e in ranges],
        "bytes_read": read.bytes_read,
        "skipped_bytes": size - scanned,
        "lines_read": read.lines,
    }
    # A last line without its newline that still parses is a complete record whose
    # writer has not finished the line (a live log); one that does not parse was cut.
    out["unterminated_last_line"] = read.cut and read.unterminated
    out["cut_last_line"] = read.cut and not read.unterminated
    return out
