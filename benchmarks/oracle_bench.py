"""The speed oracle's own cost beside the parser's, on a 1,000,000-line train_log.jsonl.

Run: .venv/bin/python benchmarks/oracle_bench.py [--lines 1000000] [--runs 3] [--resumes 4]
     [--before TREE]

The log holds one JSON line per step (step, time, loss, ``tok/s``: a stated rate) and
``resumes`` restarts from an earlier checkpoint (the step goes back). Each contender runs
as its own process under GNU time (wall seconds, CPU seconds, peak RSS), alternating,
``runs`` times:

- ``parser``: tools.parsers.trainlog.summarize_log in one process (``workers=1``): the
  whole summary, speed figures included;
- ``oracle``: tests/lib/oracle.check re-reading the raw log and recomputing every speed
  figure of that summary (loaded from a JSON file written once before the runs, so the
  parser's time is not in it); it prints how many mismatches it found (0 expected);
- ``parser_before`` (with ``--before TREE``, another checkout, e.g. a ``git worktree`` of
  the commit before the speed figures): the same parser call run in that tree, so the
  cost of the speed figures shows side by side.

Prints a table of medians with each contender's ratio to the parser. CPU seconds are the
fairer number on a shared machine: other people's load stretches wall time, not the work
a process does.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PARSER = (
    "import io, json, sys\n"
    "from tools.parsers import trainlog\n"
    "with io.FileIO(sys.argv[1], 'r') as f: s = trainlog.summarize_log(f, workers=1)\n"
    "if len(sys.argv) > 2: open(sys.argv[2], 'w').write(json.dumps(s))\n"
    "print(s['records'], len(s['windows']), s['speed']['kind'])"
)
PARSER_BEFORE = (
    "import io, sys\n"
    "from tools.parsers import trainlog\n"
    "with io.FileIO(sys.argv[1], 'r') as f: s = trainlog.summarize_log(f, workers=1)\n"
    "print(s['records'], len(s['windows']))"
)
ORACLE = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "from tests.lib import oracle\n"
    "summary = json.loads(Path(sys.argv[2]).read_text())\n"
    "print(len(oracle.check(Path(sys.argv[1]), summary)))"
)


def write_log(path: Path, lines: int, resumes: int, seed: int = 0) -> None:
    """``lines`` steps at about 4,000 tok/s, 1.3 s apart; at ``resumes`` evenly spread
    places the run restarts from a checkpoint up to 500 steps back."""
    rng = random.Random(seed)
    at = {lines * (i + 1) // (resumes + 1) for i in range(resumes)}
    t, step = 1.7e9, 0
    with path.open("w") as f:
        for i in range(lines):
            step = max(0, step - rng.randint(1, 500)) if i in at else step + 1
            t += 1.3
            rec = {
                "step": step,
                "time": round(t, 3),
                "loss": round(2 + rng.random(), 4),
                "tok/s": round(4000 + 300 * rng.random(), 1),
            }
            f.write(json.dumps(rec) + "\n")


def measure(argv: list[str], cwd: Path = ROOT) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds (user + system), peak RSS (MB) and stdout of ``argv``."""
    res = subprocess.run(
        ["/usr/bin/time", "-f", "%e %U %S %M", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        check=True,
    )
    wall, user, system, kb = res.stderr.strip().splitlines()[-1].split()
    return float(wall), float(user) + float(system), int(kb) / 1024, res.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--resumes", type=int, default=4)
    ap.add_argument("--before", type=Path, default=None, help="another checkout to compare")
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="oracle-bench-") as tmp:
        log, summary = Path(tmp) / "train_log.jsonl", Path(tmp) / "summary.json"
        write_log(log, args.lines, args.resumes)
        first = measure([sys.executable, "-c", PARSER, str(log), str(summary)])[3]
        contenders = {
            "parser": [sys.executable, "-c", PARSER, str(log)],
            "oracle": [sys.executable, "-c", ORACLE, str(log), str(summary)],
        }
        if args.before is not None:
            contenders["parser_before"] = [sys.executable, "-c", PARSER_BEFORE, str(log)]
        where = {"parser_before": args.before.resolve() if args.before else ROOT}
        wall: dict[str, list[float]] = {k: [] for k in contenders}
        cpu: dict[str, list[float]] = {k: [] for k in contenders}
        rss: dict[str, list[float]] = {k: [] for k in contenders}
        said: dict[str, str] = {}
        for _ in range(args.runs):
            for name, argv in contenders.items():
                w, c, m, out = measure(argv, where.get(name, ROOT))
                wall[name].append(w)
                cpu[name].append(round(c, 2))
                rss[name].append(m)
                said[name] = out
        size = log.stat().st_size
    med = {k: (statistics.median(wall[k]), statistics.median(cpu[k])) for k in contenders}
    print(f"{args.lines:,} lines, {size / 1e6:.1f} MB, {args.resumes} resumes; parser: {first}")
    print(f"oracle mismatches: {said['oracle']}; runs: {args.runs}; cpus: {os.cpu_count()}")
    print(f"load average: {load0:.2f} at start, {os.getloadavg()[0]:.2f} at end")
    print()
    print("| contender | wall s | CPU s | peak RSS MB | wall / parser | CPU / parser |")
    print("|---|---|---|---|---|---|")
    for name in contenders:
        w, c = med[name]
        print(
            f"| {name} | {w:.2f} | {c:.2f} | {statistics.median(rss[name]):.0f} "
            f"| {w / med['parser'][0]:.2f} | {c / med['parser'][1]:.2f} |"
        )
    print()
    print("all wall s:", json.dumps(wall), " all CPU s:", json.dumps(cpu))


if __name__ == "__main__":
    main()
