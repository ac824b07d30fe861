"""A profile's regex under a time bound: the stdlib engine stopped by ``SIGALRM``
(``tools.parsers._bounded``, what the bundle ships) beside the ``regex`` module's own
``timeout=`` (the obvious way, where a target has it), and the bound's cost on sane work.

Run: .venv/bin/python benchmarks/pattern_bound_bench.py [--runs 5]

Per run:
- ``stop_*``: seconds until each way is done with ``^(a+)+(?P<step>\\d+)$`` against
  ``a`` x 40 + ``!`` and ``(x+x+)+y`` over ``x`` x 5,000, with a 0.5 s bound (the
  stdlib unbounded takes minutes: not run; ``regex`` answers these two itself);
- ``names_*``: microseconds a name, ``checkpoint-(?P<step>\\d+)`` over 20,000 names,
  unbounded / bounded per call (``Watched``) / ``regex`` with ``timeout=``;
- ``scan_*``: seconds for ``stdoutlog.scan`` of a 64 MB console log with one profile
  signature (no needles), bounded (as shipped) and with the bound taken out.

Prints medians of ``runs``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import regex  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.parsers import _bounded, stdoutlog  # noqa: E402
from tools.parsers._bounded import Budget, Overran  # noqa: E402

RUNAWAY = {
    "name": (r"^(a+)+(?P<step>\d+)$", "a" * 40 + "!"),
    "line": (r"(x+x+)+y", "x" * 5000),
}
NAMES = [f"checkpoint-{i}" for i in range(20_000)]
SANE = r"checkpoint-(?P<step>\d+)"


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def stop_bounded(pattern: str, text: str) -> None:
    try:
        Budget(0.5).run(re.compile(pattern).search, text)
    except Overran:
        return
    raise AssertionError("no overrun")


def stop_regex(pattern: str, text: str) -> None:
    # A timeout, or (as measured) an answer well inside the bound.
    with contextlib.suppress(TimeoutError):
        regex.compile(pattern).search(text, timeout=0.5)


def names_plain() -> None:
    p = re.compile(SANE)
    for n in NAMES:
        p.fullmatch(n)


def names_bounded() -> None:
    p, budget = re.compile(SANE), Budget(1.0)
    for n in NAMES:
        budget.run(p.fullmatch, n)


def names_regex() -> None:
    p = regex.compile(SANE)
    for n in NAMES:
        p.fullmatch(n, timeout=1.0)


def scan(log: Path) -> None:
    with io.FileIO(str(log), "r") as f:
        stdoutlog.scan(f, extra=[{"id": "mine", "pattern": r"shard \d+ stalled"}])


class _Unbounded(Budget):
    def run(self, call: Callable[..., object], *args: object) -> object:  # type: ignore[override]
        return call(*args)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train_stdout.log"
        line = b"step 12 | loss 2.31 | lr 3e-4 | 41,822 tok/s | shard 7 ok\n"
        log.write_bytes(line * ((64 << 20) // len(line)))
        results: dict[str, list[float]] = {}
        for _ in range(runs):
            for what, (pattern, text) in RUNAWAY.items():
                for way, stop in (("bounded", stop_bounded), ("regex", stop_regex)):
                    took = timed(lambda: stop(pattern, text))  # noqa: B023
                    results.setdefault(f"stop_{what}_{way}_s", []).append(took)
            for name, call in (
                ("names_plain_us", names_plain),
                ("names_bounded_us", names_bounded),
                ("names_regex_us", names_regex),
            ):
                results.setdefault(name, []).append(timed(call) / len(NAMES) * 1e6)
            results.setdefault("scan_bounded_s", []).append(timed(lambda: scan(log)))
            shipped = stdoutlog.Budget  # type: ignore[attr-defined]
            stdoutlog.Budget = _Unbounded  # type: ignore[attr-defined]
            try:
                results.setdefault("scan_unbounded_s", []).append(timed(lambda: scan(log)))
            finally:
                stdoutlog.Budget = shipped  # type: ignore[attr-defined]
    assert _bounded.bounded()
    print(f"medians of {runs} runs")
    for name, values in results.items():
        print(f"{name:20s} {statistics.median(values):10.3f}")


if __name__ == "__main__":
    main()
