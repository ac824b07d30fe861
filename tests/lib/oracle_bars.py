"""An independent re-reading of a console's progress bars (tqdm's meter), the speed a
``stdoutlog`` fact's ``progress`` cites; nothing from ``tools`` or ``agent``.

What it takes as the specification:

- the console is cut at every ``\\r`` and ``\\n``; each piece that ends in tqdm's meter
  (``n/total [elapsed<remaining, rate]``, or ``n<unit> [elapsed, rate]`` without a total)
  is one update; its place is the byte offset of the meter's ``[``, its line the 1-based
  ``\\n``-line holding it;
- the rate is what tqdm printed, per second: ``12.34it/s``, the inverse of ``1.23s/it``,
  with a k/M/G… suffix multiplying; ``?`` is no rate;
- a family is the description (before ``: NN%|``, or where no bar is drawn before the
  ``: `` the count follows, as in tqdm's ``{desc}: {n}{unit} [...]`` without a total;
  digits read as ``#``), whether a total is printed, and the unit; the family with the
  most updates with a rate is the bar read (the first seen of equals);
- a bar starts at the family's first update with a rate, and at the first update with a
  rate after one whose count or clock went back; an update that repeats the previous
  one's count, clock and rate (a redraw after a message) is not counted twice;
- windows: the updates with a rate cut every ``max(5, ceil(count / 48))`` updates and at
  every bar start; a window's figure is the median of its rates.
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
from pathlib import Path
from typing import Any, NamedTuple

from tests.lib.oracle import Mismatch

REL = 1e-9
PER_WINDOW, MOST_WINDOWS = 5, 48
_TAIL = re.compile(
    rb"(?P<n>[\d.]+[kMGTPEZY]?)(?P<total>/(?:[\d.]+[kMGTPEZY]?|\?))?[A-Za-z]* ?"
    rb"\[(?P<clock>\d+:\d\d(?::\d\d)?)(?:<[^,\]]*)?, *"
    rb"(?P<rate>\?|[\d.]+[kMGTPEZY]?)(?P<per>s/[^\s,\]/]+|[^\s,\]/]*/s)[,\]]"
)
_LEFT = re.compile(rb"^(?:(?P<desc>[^|]*?): ?)?\s*\d+%\|[^|]*\|\s*$")
_LEFT_NO_TOTAL = re.compile(rb"^(?P<desc>.*): $")
SCALE = dict(zip(b"kMGTPEZY", (10.0 ** (3 * i) for i in range(1, 9)), strict=True))


class Update(NamedTuple):
    family: tuple[str, bool, str]
    n: int
    clock: int
    rate: float | None
    line: int
    offset: int


def _seconds(clock: str) -> int:
    total = 0
    for part in clock.split(":"):
        total = total * 60 + int(part)
    return total


def _scaled(raw: bytes) -> float:
    scale = SCALE.get(raw[-1], 1.0)
    return float(raw[:-1] if scale != 1.0 else raw) * scale


def _rate(raw: bytes, per: bytes) -> tuple[float | None, str]:
    unit = per[2:] if per.startswith(b"s/") else per[:-2]
    if raw == b"?":
        return None, unit.decode()
    value = _scaled(raw)
    if per.startswith(b"s/"):
        return (1.0 / value if value else None), unit.decode()
    return value, unit.decode()


def updates(data: bytes) -> list[Update]:
    """Every meter in ``data``, in order."""
    out: list[Update] = []
    line, pos = 1, 0
    for piece in re.split(rb"([\r\n])", data):
        if piece == b"\n":
            line += 1
        if piece in (b"\r", b"\n"):
            pos += 1
            continue
        meters = list(_TAIL.finditer(piece))
        m = meters[-1] if meters else None  # the last meter of the piece is the update
        if m is not None:
            left = _LEFT.search(piece[: m.start("n")])
            if left is None:
                left = _LEFT_NO_TOTAL.search(piece[: m.start("n")])
            desc = (left.group("desc") or b"").strip() if left else b""
            name = re.sub(r"\d+", "#", desc.decode("utf-8", "replace"))
            rate, unit = _rate(m.group("rate"), m.group("per"))
            has_total = bool(m.group("total")) and m.group("total") != b"/?"
            bracket = piece.index(b"[", m.start())
            out.append(
                Update(
                    (name, has_total, unit),
                    round(_scaled(m.group("n"))),
                    _seconds(m.group("clock").decode()),
                    rate,
                    line,
                    pos + bracket,
                )
            )
        pos += len(piece)
    return out


class Family(NamedTuple):
    key: tuple[str, bool, str]
    rated: list[Update]
    starts: list[int]


def families(found: list[Update]) -> list[Family]:
    """Per family, its counted updates with a rate and where each bar starts."""
    out: dict[tuple[str, bool, str], Family] = {}
    previous: dict[tuple[str, bool, str], Update] = {}
    fresh: dict[tuple[str, bool, str], bool] = {}
    for u in found:
        fam = out.setdefault(u.family, Family(u.family, [], []))
        before = previous.get(u.family)
        if before is not None and (u.n < before.n or u.clock < before.clock):
            fresh[u.family] = True
        previous[u.family] = u
        if u.rate is None or u.rate <= 0:
            continue
        last = fam.rated[-1] if fam.rated else None
        starting = fresh.get(u.family, True)
        if (
            not starting
            and last is not None
            and (last.n, last.clock, last.rate) == (u.n, u.clock, u.rate)
        ):
            continue
        if starting:
            fam.starts.append(len(fam.rated))
            fresh[u.family] = False
        fam.rated.append(u)
    return list(out.values())


def windows(fam: Family) -> list[dict[str, Any]]:
    count = len(fam.rated)
    size = max(PER_WINDOW, math.ceil(count / MOST_WINDOWS))
    edges = [*sorted(set(range(0, count, size)) | set(fam.starts)), count]
    out = []
    for a, b in itertools.pairwise(edges):
        part = fam.rated[a:b]
        out.append(
            {
                "first_step": part[0].n,
                "last_step": part[-1].n,
                "first_offset": part[0].offset,
                "last_offset": part[-1].offset,
                "first_line": part[0].line,
                "updates": len(part),
                "speed": statistics.median(u.rate for u in part if u.rate is not None),
                "bar_start": a in fam.starts,
            }
        )
    return out


def chosen(fams: list[Family]) -> Family | None:
    best = max(fams, key=lambda f: len(f.rated), default=None)
    return best if best is not None and best.rated else None


def check(path: Path, progress: dict[str, Any]) -> list[Mismatch]:
    """The chosen bar's windows as the fact states them, against the raw console."""
    fam = chosen(families(updates(path.read_bytes())))
    bad: list[Mismatch] = []
    picked = progress.get("chosen")
    if fam is None:
        if picked is not None:
            bad.append(Mismatch("progress.chosen", None, picked, str(path)))
        return bad
    stated = progress["families"][picked]
    if stated.get("with_rate") != len(fam.rated):
        bad.append(Mismatch("with_rate", len(fam.rated), stated.get("with_rate"), str(path)))
    mine, theirs = windows(fam), stated.get("windows") or []
    if len(mine) != len(theirs):
        return [*bad, Mismatch("windows", len(mine), len(theirs), str(path))]
    for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        for key, value in a.items():
            got = b.get(key)
            same = (
                math.isclose(value, got, rel_tol=REL)
                if isinstance(value, float) and isinstance(got, int | float)
                else value == got
            )
            if not same:
                bad.append(Mismatch(f"windows[{i}].{key}", value, got, str(path)))
    return bad


def check_report(report: dict[str, Any]) -> list[Mismatch]:
    """Every console fact's progress bar in a ``diagnose --json`` report, recomputed from
    the console it names."""
    bad: list[Mismatch] = []
    for fact in report["facts"]:
        value = fact.get("value")
        if fact["probe"] != "stdoutlog" or fact.get("baseline") or not isinstance(value, dict):
            continue
        progress = value.get("progress")
        path = Path(str((value.get("source") or {}).get("path", "")))
        if not isinstance(progress, dict) or not path.is_file():
            continue
        if value.get("coverage", {}).get("mode") != "full":
            continue  # a head and a tail: the oracle reads whole files only
        bad += [m._replace(where=f"{fact['id']} {m.where}") for m in check(path, progress)]
    return bad
