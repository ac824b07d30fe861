# Shipped to targets running Python 3.8: zip(strict=) is 3.10+.
# ruff: noqa: B905
"""A large log read in forked pieces side by side, and the pieces' summarizers merged
in file order into the one a sequential read gives (only the windows, cut at the piece
boundaries, and the block offsets differ).

Worth it where CPUs are idle. Measured with ``benchmarks/trainlog_bench.py`` on 2 CPUs
(1,000,000 lines, 146 MB, medians of 5 runs, two pieces / one process): 3.86 / 6.30 s
at load average 0.5-1.0; at load 2-3.4 neither won (three runs: 6.35 / 6.57,
7.55 / 8.51 and 9.50 / 7.72 s); at load 6, 8.23 / 7.64 s (BENCHMARKS.md). Hence the
default: as many pieces as CPUs are idle (at most 4), and one process for a log under
``PARALLEL_MIN``.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import io
import os
import pickle
from collections.abc import Callable
from typing import Any

from .reader import Piece, Scan, scan
from .summarizer import Summarizer
from .values import SAMPLES

PARALLEL_MIN = 64 << 20  # below this a log is read in one process: forking costs more


def idle_cpus() -> int:
    """CPUs nobody is using right now, at most 4: on a box busy with training, reading
    in parallel only competes with the trainer (and with itself)."""
    cpus = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except OSError:
        busy = 0.0
    return max(1, min(4, int(cpus - busy + 0.5)))


def scan_forked(
    f: io.FileIO, pieces: list[Piece], new: Callable[[], Summarizer], max_line: int
) -> Scan | None:
    """Each piece in a forked child, merged here in file order; None if any child
    failed (the caller then reads sequentially)."""
    children: list[tuple[int, int]] = []
    for piece in pieces:
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            try:
                os.close(rfd)
                # A file of its own: forked processes share a descriptor's offset.
                # The very file the parent checked (a regular one), not whatever the path
                # names now: /proc/self/fd where there is one.
                name = f"/proc/self/fd/{f.fileno()}"
                if not os.path.exists(name):
                    name = f.name if isinstance(f.name, str) else name
                with io.FileIO(name, "r") as own:
                    data = pickle.dumps(scan(own, [piece], new(), max_line), protocol=4)
                view = memoryview(data)
                while view:
                    view = view[os.write(wfd, view) :]
            finally:
                os._exit(0)
        os.close(wfd)
        children.append((pid, rfd))
    parts: list[Scan | None] = []
    for pid, rfd in children:
        chunks = []
        while True:
            chunk = os.read(rfd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(rfd)
        os.waitpid(pid, 0)
        try:
            parts.append(pickle.loads(b"".join(chunks)))
        except Exception:
            parts.append(None)
    if any(p is None for p in parts):
        return None
    done: list[Scan] = [p for p in parts if p is not None]
    merged = done[0]
    summ, lines = merged.summ, merged.lines
    numbered_lines = merged.lines if pieces[0].numbered else 0
    for piece, part in zip(pieces[1:], done[1:]):
        shift_lines(part.summ, numbered_lines if piece.numbered else None)
        absorb(summ, part.summ, continuous=not piece.after_gap)
        if piece.numbered:
            numbered_lines += part.lines
        lines += part.lines
    last = done[-1]
    return Scan(summ, lines, sum(p.bytes_read for p in done), last.cut, last.unterminated)


def shift_lines(summ: Summarizer, delta: int | None) -> None:
    """Renumber a part read on its own (lines counted from 1) to its place in the
    file; ``delta`` None when that place is unknown (the tail of a huge log)."""

    def move(d: dict[str, Any], key: str = "line") -> None:
        if d.get(key) is not None:
            d[key] = None if delta is None else d[key] + delta

    for d in (
        summ.malformed_samples
        + summ.unusable_samples
        + summ.schema_changes
        + summ.windows
        + summ.other_samples
    ):
        move(d)
        move(d, "first_line")
        move(d, "last_line")
    for d in summ.windows:
        for key in ("speed_from", "speed_to"):
            if isinstance(d.get(key), dict):
                move(d[key])
    summ.speed.shift_lines(delta)
    for first in (summ.loss_first_nonfinite, summ.grad_first_nonfinite):
        if first is not None:
            move(first)
    summ.win_speed.shift_lines(delta)
    if summ.win.first_line is not None:
        summ.win.first_line = None if delta is None else summ.win.first_line + delta
    if summ.win.last_line is not None:
        summ.win.last_line = None if delta is None else summ.win.last_line + delta
    for grp in [summ.all, *summ.groups.values()]:
        st = grp.steps
        for d in st.restart_samples:
            move(d)
        for _, _, d in st.jumps.heap:
            move(d)
        if st.first_at[0] is not None:
            st.first_at = (None if delta is None else st.first_at[0] + delta, st.first_at[1])
    for _, _, d in summ.gaps.heap:
        move(d)
    for role, (name, line) in summ.first_keys.items():
        if line is not None:
            summ.first_keys[role] = (name, None if delta is None else line + delta)
    if summ.t_first_at[0] is not None:
        summ.t_first_at = (
            None if delta is None else summ.t_first_at[0] + delta,
            summ.t_first_at[1],
        )


def _absorb_keys(summ: Summarizer, other: Summarizer) -> None:
    """The field names ``other`` saw, and where it found one under another name: a
    name that changed between the pieces is a schema change at the first record of
    ``other`` that holds the field, before ``other``'s own changes."""
    for k, v in other.keys_seen.items():
        if k in summ.keys_seen or len(summ.keys_seen) < 64:
            summ.keys_seen[k] = summ.keys_seen.get(k, 0) + v
    # Compared with the name ``other`` started on, not the one it ended on: a rename
    # inside ``other`` is already among its own changes.
    seam: list[dict[str, Any]] = []
    for role, (name, line) in other.first_keys.items():
        before = summ.keys[role]
        if before is None:
            summ.first_keys[role] = (name, line)
        elif name != before:
            seam.append({"line": line, "field": role, "from": before, "to": name})
    for role, key in other.keys.items():
        if key is not None:
            summ.keys[role] = key
    summ.schema_changes = (summ.schema_changes + seam + other.schema_changes)[:SAMPLES]


def _absorb_clock(summ: Summarizer, other: Summarizer, continuous: bool) -> None:
    """The records' clock: the seconds between the two parts count as one interval (a
    gap, or a clock that went back) unless a part between was not read."""
    if other.t_count:
        assert other.t_first is not None
        if continuous and summ.t_last is not None:
            dt = other.t_first - summ.t_last
            if dt < 0:
                summ.t_backwards += 1
            else:
                summ.intervals.extend([dt])
                line, offset = other.t_first_at
                summ.gaps.push(
                    dt,
                    {
                        "line": line,
                        "offset": offset,
                        "seconds": dt,
                        "from_t": summ.t_last,
                        "to_t": other.t_first,
                    },
                )
        if summ.t_first is None:
            summ.t_first, summ.t_first_at = other.t_first, other.t_first_at
        summ.t_last = summ.prev_t = other.t_last
    summ.t_count += other.t_count
    summ.t_backwards += other.t_backwards
    summ.t_unparsed += other.t_unparsed
    summ.intervals.absorb(other.intervals)
    summ.gaps.absorb(other.gaps)


def absorb(summ: Summarizer, other: Summarizer, continuous: bool) -> None:
    """Append ``other``, the summarizer of the part of the file that follows the part
    ``summ`` read; ``continuous`` as for ``Steps.absorb``."""
    summ.close_window()
    other.close_window()
    summ.records += other.records
    summ.blank += other.blank
    summ.other_lines += other.other_lines
    summ.other_samples = (summ.other_samples + other.other_samples)[:SAMPLES]
    for k, v in other.shapes.items():
        summ.shapes[k] = summ.shapes.get(k, 0) + v
    if summ.derived is None:
        summ.derived = other.derived
    if summ.cumulative is None:
        summ.cumulative = other.cumulative
    for k, v in other.malformed.items():
        summ.malformed[k] = summ.malformed.get(k, 0) + v
    summ.malformed_samples = (summ.malformed_samples + other.malformed_samples)[:SAMPLES]
    for k, v in other.unusable_count.items():
        summ.unusable_count[k] = summ.unusable_count.get(k, 0) + v
    summ.unusable_samples = (summ.unusable_samples + other.unusable_samples)[:SAMPLES]
    _absorb_keys(summ, other)
    if other.records:
        summ.scale = other.scale
    summ.all.absorb(other.all, continuous)
    for g, grp in other.groups.items():
        if g in summ.groups:
            summ.groups[g].absorb(grp, continuous)
        else:
            summ.groups[g] = grp
    if summ.group_keys is None:
        summ.group_keys = other.group_keys
    for k, v in other.nonfinite.items():
        summ.nonfinite[k] += v
    if summ.loss_first_nonfinite is None:
        summ.loss_first_nonfinite = other.loss_first_nonfinite
    if summ.grad_first_nonfinite is None:
        summ.grad_first_nonfinite = other.grad_first_nonfinite
    _absorb_clock(summ, other, continuous)
    summ.windows.extend(other.windows)
    summ.speed.absorb(other.speed, continuous, other.windows)
    if other.last_records:
        summ.last_records = other.last_records
