"""Summary of a 1,000,000-line train_log.jsonl: the trainlog parser vs pandas and jq.

Run: .venv/bin/python benchmarks/trainlog_bench.py [--lines 1000000] [--runs 3]
     [--memory-lines 1000000,2000000,4000000] [--only parser,parser_2_workers]

The log is written the way the reference trainer writes it (examples/dflash_trainer:
one JSON line per device and step, sorted keys: timestamp, device, role, step, loss,
tokens_per_s, seq_len, and draft_acc for drafters). Each contender runs as its own
process under GNU time (wall seconds, peak RSS), alternating, ``runs`` times:

- ``parser``: tools.parsers.trainlog.summarize_log in one process — the whole summary
  (per-device series, restarts, gaps, windowed medians, malformed-line accounting);
- ``parser_2_workers``: the same, the log read in two forked pieces and merged (what
  the probe does by itself on a host with idle CPUs);
- ``parser_default``: the same with no ``workers`` given, as the probe calls it: forked
  pieces only for a log over ``PARALLEL_MIN`` and only as many as CPUs are idle;
- ``parser_stdlib_json``: one process, orjson hidden: what a target without orjson
  gets (the parser uses orjson for whole blocks when the interpreter has it);
- ``pandas``: read_json(lines=True) then the per-(role, device) medians and step range;
- ``jq_summary``: the same per-(role, device) summary in jq (``-s`` slurps the file);
- ``jq_extract``: jq's floor — only pulling two fields per line out, no summary at all.

pandas and jq run where they are installed (pandas in this interpreter, jq on PATH), and
``--only`` names the contenders to run. ``--memory-lines`` repeats the parser and pandas
on longer logs to show how peak memory grows with the file. Prints one JSON document.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PARSER = (
    "import io, sys\n"
    "if len(sys.argv) > 3: sys.modules['orjson'] = None  # stdlib json only\n"
    "from tools.parsers import trainlog\n"
    "w = int(sys.argv[2]) if len(sys.argv) > 2 else None\n"
    "with io.FileIO(sys.argv[1], 'r') as f: s = trainlog.summarize_log(f, workers=w)\n"
    "print(s['records'], len(s['groups']))"
)
PANDAS = (
    "import sys, pandas as pd\n"
    "df = pd.read_json(sys.argv[1], lines=True)\n"
    "g = df.groupby(['role', 'device'])\n"
    "s = g.agg(n=('step', 'size'), first=('step', 'min'), last=('step', 'max'),"
    " tok=('tokens_per_s', 'median'), loss=('loss', 'median'))\n"
    "print(len(df), len(s))"
)
JQ_SUMMARY = (
    "group_by(.role, .device) | map({role: .[0].role, device: .[0].device, n: length,"
    " first: (map(.step) | min), last: (map(.step) | max),"
    " tok: (map(.tokens_per_s) | sort | .[length / 2 | floor])}) | length"
)


def write_log(path: Path, lines: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    devices = [("target", f"cuda:{i}") for i in range(5)] + [
        ("drafter", f"cuda:{i}") for i in range(5, 8)
    ]
    t = 1.7e9
    with path.open("w") as f:
        written, step = 0, 0
        while written < lines:
            for role, dev in devices:
                rec = {
                    "timestamp": round(t, 3),
                    "device": dev,
                    "role": role,
                    "step": step,
                    "loss": None if role == "target" else round(2 + rng.random(), 4),
                    "tokens_per_s": round(4000 + 300 * rng.random(), 1),
                    "seq_len": rng.choice((256, 512, 768, 1024)),
                }
                if role == "drafter":
                    rec["draft_acc"] = round(rng.random(), 4)
                f.write(json.dumps(rec, sort_keys=True) + "\n")
                written += 1
                if written == lines:
                    break
            step += 1
            t += 1.3


def measure(argv: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (MB) of ``argv``, as GNU
    time reports them. CPU time is the fairer number on a shared machine: other
    people's load stretches wall time, not the work a process does."""
    res = subprocess.run(
        ["/usr/bin/time", "-f", "%e %U %S %M", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    wall, user, system, kb = res.stderr.strip().splitlines()[-1].split()
    return float(wall), float(user) + float(system), int(kb) / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--memory-lines", default="1000000,2000000,4000000")
    ap.add_argument("--only", default="", help="comma-separated contenders (default: all)")
    args = ap.parse_args()
    jq = shutil.which("jq")
    pandas = importlib.util.find_spec("pandas") is not None
    here = ["parser", "parser_2_workers", "parser_default", "parser_stdlib_json"]
    here += ["pandas"] * pandas + ["jq_summary", "jq_extract"] * bool(jq)
    wanted = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in here]
    if unknown:  # before the log is written: a typo costs nothing
        ap.exit(2, f"--only: no contender {', '.join(unknown)} here (here: {', '.join(here)})\n")
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="trainlog-bench-") as tmp:
        log = Path(tmp) / "train_log.jsonl"
        write_log(log, args.lines)
        contenders = {
            "parser": [sys.executable, "-c", PARSER, str(log), "1"],
            "parser_2_workers": [sys.executable, "-c", PARSER, str(log), "2"],
            "parser_default": [sys.executable, "-c", PARSER, str(log)],
            "parser_stdlib_json": [sys.executable, "-c", PARSER, str(log), "1", "stdlib"],
        }
        if pandas:
            contenders["pandas"] = [sys.executable, "-c", PANDAS, str(log)]
        if jq:
            contenders["jq_summary"] = [jq, "-s", JQ_SUMMARY, str(log)]
            contenders["jq_extract"] = [jq, "-c", "[.step, .tokens_per_s]", str(log)]
        if wanted:
            contenders = {n: contenders[n] for n in wanted}
        subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)  # warm
        wall: dict[str, list[float]] = {k: [] for k in contenders}
        cpu: dict[str, list[float]] = {k: [] for k in contenders}
        rss: dict[str, list[float]] = {k: [] for k in contenders}
        for _ in range(args.runs):
            for name, argv in contenders.items():
                w, c, m = measure(argv)
                wall[name].append(w)
                cpu[name].append(round(c, 2))
                rss[name].append(m)
        memory: dict[str, dict[str, float]] = {}
        for n in [int(x) for x in args.memory_lines.split(",") if x]:
            big = Path(tmp) / f"log_{n}.jsonl"
            write_log(big, n)
            memory[str(n)] = {
                "bytes": big.stat().st_size,
                "parser_rss_mb": round(measure([sys.executable, "-c", PARSER, str(big)])[2], 1),
            }
            if pandas:
                pandas_rss = measure([sys.executable, "-c", PANDAS, str(big)])[2]
                memory[str(n)]["pandas_rss_mb"] = round(pandas_rss, 1)
            big.unlink()
        print(
            json.dumps(
                {
                    "lines": args.lines,
                    "file_bytes": log.stat().st_size,
                    "runs": args.runs,
                    "median_wall_s": {k: round(statistics.median(v), 2) for k, v in wall.items()},
                    "all_wall_s": wall,
                    "median_cpu_s": {k: round(statistics.median(v), 2) for k, v in cpu.items()},
                    "all_cpu_s": cpu,
                    "median_peak_rss_mb": {
                        k: round(statistics.median(v), 1) for k, v in rss.items()
                    },
                    "peak_rss_by_file_size": memory,
                    "cpus": os.cpu_count(),
                    "loadavg_at_start": load0,
                    "loadavg_at_end": os.getloadavg()[0],
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
