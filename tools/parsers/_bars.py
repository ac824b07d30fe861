# Shipped to targets running Python 3.8: zip(strict=) is 3.10+.
# ruff: noqa: B905
"""Progress bars on a trainer's console: tqdm's meter, the speed most trainers state
without being asked (Hugging Face ``Trainer``, Lightning's progress bar, torchtune, most
hand-written loops).

A bar redraws itself with ``\\r``, so in a log file its updates share one line until
something prints a newline. Each update ends in tqdm's right-hand meter::

    Epoch 0:  40%|████      | 40/100 [00:12<00:18,  3.21it/s, loss=4.5]
     12%|█▏        | 24/200 [00:03<00:25,  6.98it/s]
    128it [00:40,  1.61s/it]

read here as the count ``n`` (and ``total``), the elapsed clock (``[H:]MM:SS``, whole
seconds) and the rate tqdm printed (``5.2f`` digits, or three significant ones with a
k/M suffix; ``s/it`` is its inverse). The rate is tqdm's own figure: by default a moving
average over its last updates (``smoothing=0.3``).

Updates are grouped into families by their description (what stands before the ``: ``
ahead of the percentage, or of the count where no bar is drawn, as without a total;
digits blanked: ``Epoch 0`` and ``Epoch 1`` are one family), total and unit; the family
with the most updates is taken for the training bar (evaluation and save bars are
short). Within a family a new bar (an epoch, a restart) begins where the count or the
clock goes back.

Windows: the family's updates with a rate, in at most ``WINDOWS`` runs of equal count
(``MIN_UPDATES`` at least); each
window's ``speed`` is the median of their printed rates (per second), and it cites its
first and last update (line, byte offset, count). What the oracle recomputes.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import re
from typing import Any

from ._trainlog.stats import middle

__all__ = ["Bars"]

WINDOWS = 48  # at most; fewer when the bar has fewer updates with a rate
# Updates a window holds at least: tqdm's rate is a moving average that takes a few
# updates to follow a change (and it adapts how often it redraws), so a window of one
# update would show that lag as a change of its own.
MIN_UPDATES = 5
MAX_UPDATES = 1_000_000  # per family; past it the family is marked truncated
MAX_FAMILIES = 16
MAX_NAMES = 4096  # left parts of bars remembered (a bar's drawing repeats)
_METER = re.compile(
    rb"\[(?P<el>(?:[0-9]+:)?[0-9]{2}:[0-9]{2})(?:<[^,\]\r\n]{0,16})?, *"
    rb"(?P<rate>\?|[0-9]+(?:\.[0-9]+)?[kMGTPEZY]?)"
    rb"(?:(?P<inv>s/)(?P<iunit>[^\s\]\r\n,/]{1,24})|(?P<unit>[^\s\]\r\n,/]{0,24})/s)"
    rb"(?=[,\]])"
)
# What stands before the meter's "[": "n/total " or "n<unit> ", and before that the
# left bar ("desc: 40%|███   | ").
# A count may be scaled as its rate is ("1.50k" under unit_scale).
_COUNT = re.compile(
    rb"(?:\|\s*|^|[\r\n]|\s)(?P<n>[0-9]+(?:\.[0-9]+)?[kMGTPEZY]?)"
    rb"(?:/(?P<total>[0-9]+(?:\.[0-9]+)?[kMGTPEZY]?|\?)|[a-zA-Z]*) ?$"
)
_DESC = re.compile(
    rb"(?:^|[\r\n])(?:(?P<desc>[^\r\n|]{0,120}?): ?)?\s*[0-9]{1,3}%\|[^|\r\n]*\|\s*$"
)
# Without a total tqdm draws no bar (``{desc}: {n}{unit} [``): the description ends at
# the ": " the count follows.
_DESC_UNTOTALLED = re.compile(rb"(?:^|[\r\n])(?P<desc>[^\r\n]{1,120}?): $")
_SUFFIX = {
    b"k": 1e3,
    b"M": 1e6,
    b"G": 1e9,
    b"T": 1e12,
    b"P": 1e15,
    b"E": 1e18,
    b"Z": 1e21,
    b"Y": 1e24,
}
_BACK = 200  # bytes before a meter searched for its count and description


def clock_seconds(text: str) -> int:
    """tqdm's ``format_interval``: ``[H:]MM:SS`` back to whole seconds."""
    parts = [int(p) for p in text.split(":")]
    out = 0
    for p in parts:
        out = out * 60 + p
    return out


def rate_value(text: bytes) -> tuple[float, float]:
    """A printed rate and the rounding bound of its digits: ``5.2f`` is good to 0.005,
    ``format_sizeof``'s three significant digits to half a unit of the last one."""
    scale = _SUFFIX.get(text[-1:], 1.0)
    digits = text[:-1] if scale != 1.0 else text
    value = float(digits) * scale
    decimals = len(digits.split(b".")[1]) if b"." in digits else 0
    return value, 0.5 * 10.0**-decimals * scale


class _Family:
    """One family's updates that print a rate, in the order read."""

    __slots__ = (
        "desc",
        "elapsed",
        "errors",
        "last",
        "lines",
        "n",
        "offsets",
        "pending_start",
        "rates",
        "starts",
        "total",
        "truncated",
        "unit",
        "updates",
    )

    def __init__(self, desc: str, total: str | None, unit: str) -> None:
        self.desc, self.total, self.unit = desc, total, unit
        self.updates = 0  # every update read, with a rate or not
        self.n: list[int] = []
        self.elapsed: list[int] = []
        self.rates: list[float] = []
        self.errors: list[float] = []
        self.lines: list[int | None] = []
        self.offsets: list[int] = []
        self.starts: list[int] = []  # where each bar begins: an index into the lists
        self.last: tuple[int, int] | None = None  # (n, elapsed) of the update before
        self.pending_start = True
        self.truncated = False

    def add(
        self,
        n: int,
        elapsed: int,
        rate: tuple[float, float] | None,
        line: int | None,
        offset: int,
    ) -> None:
        self.updates += 1
        if self.last is not None and (n < self.last[0] or elapsed < self.last[1]):
            self.pending_start = True  # the count or the clock went back: a new bar
        self.last = (n, elapsed)
        if rate is None or rate[0] <= 0:
            return  # tqdm prints "?" until a bar's second update
        # The last update with a rate, repeated (count, clock, rate), is tqdm redrawing it.
        again = bool(self.n) and (self.n[-1], self.elapsed[-1], self.rates[-1]) == (
            n,
            elapsed,
            rate[0],
        )
        if again and not self.pending_start:
            return  # redrawn unchanged after a message (tqdm.write): one update, not two
        if len(self.n) >= MAX_UPDATES:
            self.truncated = True
            return
        if self.pending_start:
            self.starts.append(len(self.n))
            self.pending_start = False
        self.n.append(n)
        self.elapsed.append(elapsed)
        self.rates.append(rate[0])
        self.errors.append(rate[1])
        self.lines.append(line)
        self.offsets.append(offset)

    def windows(self) -> list[dict[str, Any]]:
        """``WINDOWS`` runs of equal count (a bar's start opens a new one), each the
        median of its printed rates."""
        count = len(self.n)
        if not count:
            return []
        size = max(MIN_UPDATES, -(-count // WINDOWS))
        cuts = sorted({*range(0, count, size), *self.starts})
        out = []
        for a, b in zip(cuts, [*cuts[1:], count]):
            median = middle(sorted(self.rates[a:b]))
            out.append(
                {
                    "first_step": self.n[a],
                    "last_step": self.n[b - 1],
                    "first_line": self.lines[a],
                    "last_line": self.lines[b - 1],
                    "first_offset": self.offsets[a],
                    "last_offset": self.offsets[b - 1],
                    "updates": b - a,
                    "speed": median,
                    "speed_error": max(self.errors[a:b]),
                    "bar_start": a in self.starts,
                }
            )
        return out

    def summary(self, chosen: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "desc": self.desc,
            "total": self.total,
            "unit": f"{self.unit}/s",
            "updates": self.updates,
            "with_rate": len(self.n),
            "bars": len(self.starts),
            "truncated": self.truncated,
        }
        if chosen:
            out["windows"] = self.windows()
            out["bar_starts"] = [
                {"line": self.lines[i], "offset": self.offsets[i], "n": self.n[i]}
                for i in self.starts
            ]
            if self.n:
                out["last"] = {
                    "n": self.n[-1],
                    "elapsed_s": self.elapsed[-1],
                    "rate": self.rates[-1],
                    "line": self.lines[-1],
                    "offset": self.offsets[-1],
                }
        return out


class Bars:
    """Reads the meters of every block the console scan reads (``feed``), in order."""

    def __init__(self) -> None:
        self.families: dict[tuple[str, str, str], _Family] = {}
        self.overflow = 0  # updates of families past MAX_FAMILIES
        self.names: dict[bytes, str] = {}  # a bar's left part read once: its family's name

    def gap(self) -> None:
        """The scan skipped part of the log: what follows starts a new bar's windows."""
        for family in self.families.values():
            family.pending_start = True

    def feed(self, data: bytes, first_line: int | None, offset: int) -> None:
        if b"/s" not in data and b"s/" not in data:
            return
        line, counted = first_line, 0
        for m in _METER.finditer(data):
            start = m.start()
            # The update's own piece: from the last \r or \n before it (tqdm redraws).
            lo = max(0, start - _BACK)
            piece = max(data.rfind(b"\r", lo, start), data.rfind(b"\n", lo, start))
            before = data[piece if piece >= 0 else lo : start]
            count = _COUNT.search(before)
            if count is None:
                continue
            if line is not None:
                line += data.count(b"\n", counted, start)
            counted = start
            self._update(m, count, before[: count.start() + 1], line, offset + start)

    def _update(
        self, m: re.Match[bytes], count: re.Match[bytes], left: bytes, line: int | None, at: int
    ) -> None:
        name = self.names.get(left)
        if name is None:
            desc_m = _DESC.search(left) or _DESC_UNTOTALLED.search(left)
            desc = (desc_m.group("desc") or b"").strip() if desc_m else b""
            name = re.sub(r"[0-9]+", "#", desc.decode("utf-8", "replace"))
            if len(self.names) < MAX_NAMES:
                self.names[left] = name
        total = count.group("total")
        unit = (m.group("iunit") or m.group("unit") or b"").decode("ascii", "replace")
        # An epoch's bar may count to another total: the family is whether it has one.
        key = (name, "n/total" if total and total != b"?" else "n", unit)
        family = self.families.get(key)
        if family is None:
            if len(self.families) >= MAX_FAMILIES:
                self.overflow += 1
                return
            family = self.families[key] = _Family(name, total.decode() if total else None, unit)
        elif total:
            family.total = total.decode()
        raw = m.group("rate")
        rate = None
        if raw != b"?":
            value, error = rate_value(raw)
            if m.group("inv"):
                # "1.23s/it": the rate is its inverse; the bound goes through 1/x.
                rate = (1.0 / value, error / (value * (value - error))) if value > error else None
            else:
                rate = (value, error)
        family.add(
            round(rate_value(count.group("n"))[0]),
            clock_seconds(m.group("el").decode()),
            rate,
            line,
            at,
        )

    def result(self) -> dict[str, Any]:
        """Every family's counts, the chosen one's windows: ``chosen`` is the family
        with the most updates that print a rate (None: no bar)."""
        ranked = sorted(self.families.values(), key=lambda f: len(f.n), reverse=True)
        chosen = ranked[0] if ranked and ranked[0].n else None
        return {
            "how": (
                "the median of the rates tqdm printed on the bar's updates (its moving"
                " average), per window of equal count; the bar with the most updates"
            ),
            "families": [f.summary(f is chosen) for f in ranked],
            "chosen": ranked.index(chosen) if chosen is not None else None,
            "overflow_updates": self.overflow,
        }
