"""Step numbers of a series: range, restarts (the step went back), duplicates, the
typical increment and the largest jumps; and the union of several series' steps.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from .columns import Col, differences, largest
from .stats import Top
from .values import SAMPLES


class Steps:
    """Step numbers of one series (one device, or the whole log when it has no devices):
    range, restarts (the step went back), duplicates, the typical increment, the largest
    jumps."""

    def __init__(self) -> None:
        self.count = 0
        self.first: float | None = None
        self.first_at: tuple[int | None, int] = (None, 0)  # line and offset of ``first``
        self.last: float | None = None
        self.lo = math.inf
        self.hi = -math.inf
        self.restarts = 0
        self.restart_samples: list[dict[str, Any]] = []
        self.duplicates = 0
        self.increments: Counter[float] = Counter()
        self.jumps = Top(SAMPLES)

    def add(self, steps: Col, lines: list[int | None], offsets: list[int]) -> None:
        vals, idx = steps.present()
        if not vals:
            return
        self.count += len(vals)
        if self.first is None:
            self.first = vals[0]
            i0 = 0 if idx is None else idx[0]
            self.first_at = (lines[i0], offsets[i0])
        self.lo = min(self.lo, min(vals))
        self.hi = max(self.hi, max(vals))
        prev = self.last
        diffs, base = differences(vals, prev)
        self.last = vals[-1]

        def at(k: int) -> dict[str, Any]:
            i = k + base if idx is None else idx[k + base]
            before = vals[k + base - 1] if k + base > 0 else prev
            return {
                "line": lines[i],
                "offset": offsets[i],
                "from_step": before,
                "to_step": vals[k + base],
            }

        if not diffs:
            return
        if min(diffs) < 0:
            for k, dd in enumerate(diffs):
                if dd < 0:
                    self.restarts += 1
                    if len(self.restart_samples) < SAMPLES:
                        self.restart_samples.append(at(k))
        self.duplicates += diffs.count(0)
        if len(self.increments) < 1000:
            self.increments.update(diffs)
        for k in largest(diffs, self.jumps.floor()):
            self.jumps.push(diffs[k], at(k))

    def absorb(self, other: Steps, continuous: bool = True) -> None:
        """Append the steps of the part that followed; ``continuous`` when nothing of
        the log lies between the two parts (so a step going back there is a restart)."""
        if not other.count:
            return
        assert other.first is not None
        if continuous and self.last is not None:
            inc = other.first - self.last
            line, offset = other.first_at
            sample = {
                "line": line,
                "offset": offset,
                "from_step": self.last,
                "to_step": other.first,
            }
            if inc < 0:
                self.restarts += 1
                if len(self.restart_samples) < SAMPLES:
                    self.restart_samples.append(sample)
            elif inc == 0:
                self.duplicates += 1
            else:
                self.increments[inc] += 1
                self.jumps.push(inc, sample)
        if self.first is None:
            self.first, self.first_at = other.first, other.first_at
        self.count += other.count
        self.lo = min(self.lo, other.lo)
        self.hi = max(self.hi, other.hi)
        self.last = other.last
        self.restarts += other.restarts
        self.restart_samples = (self.restart_samples + other.restart_samples)[:SAMPLES]
        self.duplicates += other.duplicates
        if len(self.increments) < 1000:
            self.increments.update(other.increments)
        self.jumps.absorb(other.jumps)

    def summary(self) -> dict[str, Any]:
        positive = [(c, inc) for inc, c in self.increments.items() if inc > 0]
        typical = max(positive)[1] if positive else None
        # The heap keeps the largest differences whatever their sign (a series that only
        # goes back fills it with restarts): a jump is a step forward, past the usual.
        floor = typical if typical is not None else 0
        jumps = [j for j in self.jumps.items() if j["to_step"] - j["from_step"] > floor]
        return {
            "count": self.count,
            "first": self.first,
            "last": self.last,
            "min": self.lo if self.count else None,
            "max": self.hi if self.count else None,
            "typical_increment": typical,
            "restarts": self.restarts,
            "restart_samples": self.restart_samples,
            "duplicates": self.duplicates,
            "largest_jumps": jumps,
        }


def merge_steps(parts: list[dict[str, Any]]) -> dict[str, Any]:
    counted = [p for p in parts if p["count"]]
    samples = [s for p in counted for s in p["restart_samples"]]
    # Source order (lines unknown in a tail sort last, by offset).
    samples.sort(key=lambda s: (s["line"] is None, s["line"] or 0, s["offset"]))
    samples = samples[:SAMPLES]
    return {
        "count": sum(p["count"] for p in counted),
        "min": min((p["min"] for p in counted), default=None),
        "max": max((p["max"] for p in counted), default=None),
        "restarts": sum(p["restarts"] for p in counted),
        "restart_samples": samples,
        "duplicates": sum(p["duplicates"] for p in counted),
        "per_group": True,
    }
