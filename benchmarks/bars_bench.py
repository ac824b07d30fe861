"""Reading a console's progress bars: the stdoutlog scan (every signature, and the bars)
beside the independent bar oracle, ``tr | grep -c``, and the scan of a tree before the
bars were read, on a console of ``updates`` tqdm updates.

Run: .venv/bin/python benchmarks/bars_bench.py [--updates 500000] [--runs 3] [--before TREE]

The console is what Trainer's default writes: its bar (``  40%|████      | 80/200
[00:12<00:18,  6.42it/s]``, formatted by tqdm itself), redrawn with ``\\r``, and a record
dict printed on its own line every 200 updates. Each contender runs as its own process
under GNU time, alternating, ``runs`` times:

- ``parser``: tools.parsers.stdoutlog.scan, the whole scan (bars, signatures, tracebacks);
- ``parser_before`` (with ``--before TREE``, e.g. a ``git worktree`` of the commit before
  the bars were read): the same scan in that tree, so the bars' own cost shows;
- ``oracle``: tests/lib/oracle_bars.check: split on ``\\r``/``\\n``, a regex per piece,
  the windows recomputed and compared with the scan's (loaded from a file written once);
- ``tr_grep``: ``tr '\\r' '\\n' | grep -c 'it/s]'``, counting the updates and nothing else.

Prints a table of medians with each contender's ratio to the parser.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oracle_bench import ROOT, measure  # benchmarks/ is no package: imported by path

PARSER = (
    "import io, json, sys\n"
    "from tools.parsers import stdoutlog\n"
    "with io.FileIO(sys.argv[1], 'r') as f: s = stdoutlog.scan(f)\n"
    "p = s.get('progress')\n"
    "if len(sys.argv) > 2: open(sys.argv[2], 'w').write(json.dumps(p))\n"
    "print(s['lines_read'], p and p['families'][p['chosen']]['with_rate'])"
)
ORACLE = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "from tests.lib import oracle_bars\n"
    "progress = json.loads(Path(sys.argv[2]).read_text())\n"
    "print(len(oracle_bars.check(Path(sys.argv[1]), progress)))"
)


def write_console(path: Path, updates: int) -> None:
    """``updates`` redraws of one bar at about 6 steps a second, slower after the middle,
    a record line every 200 updates, as tqdm formats them."""
    from tqdm import tqdm

    total = updates + 10
    with path.open("w") as f:
        for n in range(1, updates + 1):
            rate = 6.4 if n < updates // 2 else 3.1
            f.write("\r" + tqdm.format_meter(n, total, n / rate, ncols=None, rate=rate))
            if n % 200 == 0:
                f.write(f"\n{{'loss': '4.{n % 97:02d}', 'grad_norm': '0.53', 'epoch': '1.2'}}\n")
        f.write("\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--updates", type=int, default=500_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--before", type=Path, default=None, help="another checkout to compare")
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bars-bench-") as tmp:
        log, progress = Path(tmp) / "train.log", Path(tmp) / "progress.json"
        write_console(log, args.updates)
        first = measure([sys.executable, "-c", PARSER, str(log), str(progress)])[3]
        contenders = {
            "parser": [sys.executable, "-c", PARSER, str(log)],
            "oracle": [sys.executable, "-c", ORACLE, str(log), str(progress)],
            "tr_grep": ["sh", "-c", f"tr '\\r' '\\n' < {log} | grep -c 'it/s]'"],
        }
        if args.before is not None:
            contenders["parser_before"] = [sys.executable, "-c", PARSER, str(log)]
        where = {"parser_before": args.before.resolve() if args.before else ROOT}
        wall: dict[str, list[float]] = {k: [] for k in contenders}
        cpu: dict[str, list[float]] = {k: [] for k in contenders}
        said: dict[str, str] = {}
        for _ in range(args.runs):
            for name, argv in contenders.items():
                w, c, _rss, out = measure(argv, where.get(name, ROOT))
                wall[name].append(w)
                cpu[name].append(round(c, 2))
                said[name] = out
        size = log.stat().st_size
    med = {k: (statistics.median(wall[k]), statistics.median(cpu[k])) for k in contenders}
    print(f"{args.updates:,} updates, {size / 1e6:.1f} MB; parser (lines, updates): {first}")
    print(f"oracle mismatches: {said['oracle']}; tr_grep: {said['tr_grep']}; runs: {args.runs}")
    print(f"load average: {load0:.2f} at start, {os.getloadavg()[0]:.2f} at end")
    print()
    print("| contender | wall s | CPU s | wall / parser | CPU / parser |")
    print("|---|---|---|---|---|")
    for name in contenders:
        w, c = med[name]
        ratios = f"{w / med['parser'][0]:.2f} | {c / med['parser'][1]:.2f}"
        print(f"| {name} | {w:.2f} | {c:.2f} | {ratios} |")
    print()
    print("all wall s:", json.dumps(wall), " all CPU s:", json.dumps(cpu))


if __name__ == "__main__":
    main()
