"""Where a series of window medians changes regime, and whether a change is sustained.

Change points: binary segmentation on the L1 cost of log tokens/s, not ``ruptures``.
The series is at most a few hundred window medians, so an exhaustive split search costs
nothing; the acceptance test is the ratio a human asks about ("it fell to a third"),
where PELT's penalty would have to be tuned per log and would bring numpy and scipy to a
controller that otherwise needs neither.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

DROP = 0.8  # after/before below this: a drop
RISE = 1.25  # at least this: a rise
MIN_WINDOWS = 3  # on each side of a change point
STEADY_MIN = 4  # windows for a steady claim: the last quarter (at least 2) against all
LEAST_SHARE = 10  # and a tenth of the log's windows
MAX_CHANGES = 3  # regimes per series, at most MAX_CHANGES + 1
Z_SUSTAINED = 3.09  # one-sided p < 0.001 under the normal approximation of U


def _l1(ys: Sequence[float]) -> float:
    m = statistics.median(ys)
    return sum(abs(y - m) for y in ys)


def best_split(ys: Sequence[float], least: int) -> int | None:
    """The split k (ys[:k] | ys[k:]) that leaves the least absolute deviation from each
    side's median: the robust L1 cost, which one slow window moves little and which
    lands on the change itself (a score scaled by the sides' sizes drifts to the
    middle)."""
    splits = range(least, len(ys) - least + 1)
    if not splits:
        return None
    return min(splits, key=lambda k: (_l1(ys[:k]) + _l1(ys[k:]), k))


def sustained_ratio(left: Sequence[float], right: Sequence[float]) -> float | None:
    """The ratio of the medians (right / left) when it is a sustained change: below
    ``DROP`` (or at least ``RISE``), and the windows of one side below those of the other
    beyond chance: Mann-Whitney's U, one-sided, z > ``Z_SUSTAINED`` (p < 0.001). Too few
    windows can never pass (3 and 3, or 6 and 6, cannot reach it): a short log's wobble is
    no change."""
    ratio = math.exp(statistics.median(right) - statistics.median(left))
    if DROP <= ratio < RISE:
        return None
    n1, n2 = len(left), len(right)
    lower = sum((r < x) + 0.5 * (r == x) for r in right for x in left)
    u = lower if ratio < 1 else n1 * n2 - lower
    z = (u - n1 * n2 / 2) / math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
    return ratio if z > Z_SUSTAINED else None


def change_points(values: Sequence[float]) -> list[int]:
    """Indices k where a new regime starts (values[k] is its first).

    Candidates come from binary segmentation, split on the L1 cost whatever the split's
    size, three levels deep (a drop and a recovery leave no change between the series'
    halves, only inside them). Then each candidate is tested against the segments on
    either side of it, and the weakest that fails is removed until all pass: what stays
    is a sustained change between its neighbours."""
    ys = [math.log(v) for v in values]
    # A regime lasts a tenth of the log at least (and MIN_WINDOWS): a few slow windows
    # in a long noisy log are not a change, and a crawl shorter than that is not told.
    least = max(MIN_WINDOWS, len(ys) // LEAST_SHARE)
    cuts: set[int] = set()

    def segment(lo: int, hi: int, depth: int) -> None:
        if depth == 0 or hi - lo < 2 * least:
            return
        k = best_split(ys[lo:hi], least)
        if k is None:
            return
        cuts.add(lo + k)
        segment(lo, lo + k, depth - 1)
        segment(lo + k, hi, depth - 1)

    segment(0, len(ys), 3)
    while cuts:
        order = sorted(cuts)
        bounds = [0, *order, len(ys)]
        failing = []
        for j, k in enumerate(order):
            left, right = ys[bounds[j] : k], ys[k : bounds[j + 2]]
            if min(len(left), len(right)) < least or sustained_ratio(left, right) is None:
                gap = abs(statistics.median(right) - statistics.median(left))
                failing.append((gap, k))
        if not failing:
            break
        cuts.discard(min(failing)[1])
    # Each cut found in a wider segment may sit a few windows off (a segment that holds
    # two regimes has a flat cost around them): place it again between its neighbours.
    order = sorted(cuts)
    for j in range(len(order)):
        lo = order[j - 1] if j else 0
        hi = order[j + 1] if j + 1 < len(order) else len(ys)
        moved = best_split(ys[lo:hi], least)
        if moved is not None and sustained_ratio(ys[lo : lo + moved], ys[lo + moved : hi]):
            order[j] = lo + moved
    cuts = set(order)
    strongest = sorted(cuts, key=lambda k: -abs(_jump(ys, sorted(cuts), k)))
    return sorted(strongest[:MAX_CHANGES])


def _jump(ys: Sequence[float], order: list[int], k: int) -> float:
    bounds = [0, *order, len(ys)]
    j = order.index(k)
    return statistics.median(ys[k : bounds[j + 2]]) - statistics.median(ys[bounds[j] : k])


POSSIBLE_LEAST = 2  # windows on each side of a drop that is possible, not confirmed

# A drop too short to confirm is told only when it is large: a few windows of a short
# run on a shared machine swing by a third (a neighbour's burst, a checkpoint save inside
# a logging interval), and a halving is no such swing.
POSSIBLE_DROP = 0.5


def possible_drop(values: Sequence[float]) -> tuple[int, float] | None:
    """A drop too short or too few windows long to be sustained (``change_points``),
    yet plain: (k, ratio) where every window from ``k`` on is below the median before it
    and their median is below ``POSSIBLE_DROP`` times that. A run that slowed in its last few
    records is said to have possibly slowed, never to be fine."""
    ys = [math.log(v) for v in values]
    k = best_split(ys, POSSIBLE_LEAST)
    if k is None:
        return None
    before, after = values[:k], values[k:]
    ratio = statistics.median(after) / statistics.median(before)
    if ratio >= POSSIBLE_DROP or max(after) >= statistics.median(before):
        return None
    return k, ratio


def why_unconfirmed(k: int, n: int) -> str:
    """Why a possible drop is not a confirmed one, in the terms ``change_points`` uses."""
    least = max(MIN_WINDOWS, n // LEAST_SHARE)
    if min(k, n - k) < least:
        return (
            f"{n - k} window(s) after it and {k} before; a sustained change needs {least}"
            " on each side"
        )
    return "the windows on either side do not differ beyond chance: Mann-Whitney p ≥ 0.001"
