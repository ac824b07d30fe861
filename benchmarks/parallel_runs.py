"""Why `make test` runs two workers: one reference-trainer run alone vs two side by side.

Run: .venv/bin/python benchmarks/parallel_runs.py [--runs 3]

Each contender trains a fresh workspace (128 prompts of length 64, 40 steps, the test
suite's small flags, cold compile) as its own process. ``one``: a run alone. ``two``: two
runs started together; the figure is the wall time until both ended. If a run were
bound by both cores, ``two`` would take twice ``one``; a ratio near 1 means a run leaves
a core idle, and a second test worker gets it for free. Prints one JSON document with
medians, CPU times and every run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--batch-size", "8", "--log-every", "5", "--intra-op-threads", "2"]


def trainer(*args: str) -> list[str]:
    return [sys.executable, "-m", "examples.dflash_trainer", *args]


def workspace(root: Path) -> Path:
    ws = root / "ws"
    for args in (("dataset", "--size", "128", "--lengths", "64"), ("init",)):
        subprocess.run(
            trainer(args[0], "--workspace", str(ws), *args[1:]),
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
    return ws


def side_by_side(n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        spaces = [workspace(Path(tmp) / str(i)) for i in range(n)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        procs = [
            subprocess.Popen(
                trainer("train", "--workspace", str(ws), *SMALL, "--steps", "40"),
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for ws in spaces
        ]
        codes = [p.wait() for p in procs]
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert codes == [0] * n, f"a training run failed: exit codes {codes}"
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s_per_run": cpu / n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"one": [], "two": []}
    for _ in range(args.runs):
        runs["one"].append(side_by_side(1))
        runs["two"].append(side_by_side(2))
    wall = {k: statistics.median(r["wall_s"] for r in v) for k, v in runs.items()}
    cpu = {k: statistics.median(r["cpu_s_per_run"] for r in v) for k, v in runs.items()}
    print(
        json.dumps(
            {
                "cpus": os.cpu_count(),
                "load": os.getloadavg(),
                "median_wall_s": wall,
                "median_cpu_s_per_run": cpu,
                "ratio_two_over_one": wall["two"] / wall["one"],
                "runs": runs,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
