"""The console-log scan on a 2,000,000-line train_stdout.log that prints a step on every
line: the stdoutlog parser (every signature, tracebacks tied to threads, each first hit
dated by the step printed before it) against ``grep -c`` for the FX error alone, and
against the naive way of dating lines (a step regex run on every line in Python).

Run: .venv/bin/python benchmarks/stdoutlog_bench.py [--lines 2000000] [--runs 5]

Each contender runs in its own process, alternating, ``runs`` times; medians of wall
seconds are printed as one JSON document with the ratios to the parser.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FX = (
    "torch._dynamo.exc.InternalTorchDynamoError: RuntimeError: Detected that you are "
    "using FX to symbolically trace a dynamo-optimized function. This is not supported "
    "at the moment."
)

PARSER = (
    "import io, sys; sys.path.insert(0, {root!r}); from tools.parsers import stdoutlog; "
    "f = io.FileIO({log!r}); out = stdoutlog.scan(f); "
    "assert out['signatures']['fx_nested_trace']['first_after_step']['step'] > 0"
)
NAIVE = (
    "import re; step = re.compile(rb'(?i)(?:\\b|_)(?:global[_ ])?step[ \\t=:#_-]*([0-9]+)'); "
    "last = None; first = None\n"
    "for line in open({log!r}, 'rb'):\n"
    "    m = step.search(line)\n"
    "    if m: last = int(m.group(1))\n"
    "    if first is None and b'symbolically trace a dynamo-optimized' in line: first = last\n"
    "assert first"
)


def write_log(path: Path, lines: int) -> None:
    with path.open("w") as f:
        for i in range(1, lines + 1):
            f.write(f"[rank0]: step {i} loss 2.{i % 97:02d} tok/s 4270.{i % 13}\n")
            if i == lines // 2:
                f.write("Exception in thread drafter-1:\nTraceback (most recent call last):\n")
                f.write('  File "train.py", line 1, in run\n' + FX + "\n")


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train_stdout.log"
        write_log(log, args.lines)
        grep = shutil.which("grep")
        contenders = {
            "parser": [sys.executable, "-c", PARSER.format(root=str(ROOT), log=str(log))],
            "naive_step_regex_per_line": [sys.executable, "-c", NAIVE.format(log=str(log))],
        }
        if grep:
            contenders["grep_c_fx_only"] = [grep, "-c", "symbolically trace a dynamo", str(log)]
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.runs):
            for name, argv in contenders.items():
                times[name].append(timed(argv))
        medians = {name: statistics.median(ts) for name, ts in times.items()}
        print(
            json.dumps(
                {
                    "lines": args.lines,
                    "bytes": log.stat().st_size,
                    "runs": args.runs,
                    "median_s": {k: round(v, 3) for k, v in medians.items()},
                    "ratio_to_parser": {
                        k: round(v / medians["parser"], 2) for k, v in medians.items()
                    },
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
