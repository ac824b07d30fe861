"""Redacting a 10 MB training console log (issue 14, item 7): the whole redactor (the
detector, keyword and entropy rules, its own hand rules, hosts, addresses, paths), the
detector's part alone (``secrets_detect.find``: detect-secrets' patterns screened over the
whole text), the naive way of using the same maintained detector — every enabled regex
plugin's ``analyze_line`` on every line, as detect-secrets scans a file — and ``grep -E``
for three key shapes (a floor: it finds, it does not redact).

Run: .venv/bin/python benchmarks/redact_bench.py [--mb 10] [--runs 3]

Each contender runs in its own process, alternating, ``runs`` times; medians of wall
seconds are printed as one JSON document with the ratios to the redactor. The log holds
step lines, JSON records and, one line in 5,000, a planted secret; the script checks that
the redactor removed every planted one.
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

# Built from pieces, so this file holds nothing a scanner takes for a key.
SECRETS = [
    "AKIA" + "Z7Q3XK2M4N6P8R1T",
    "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc" + "XyZ",
    "gh" + "p_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    'password = "' + "hunter2-correct-horse" + '"',
]

REDACTOR = (
    "import sys; sys.path.insert(0, {root!r}); from tools.redact import Redactor; "
    "text = open({log!r}, encoding='utf-8').read(); out = Redactor().output(text); "
    "planted = {planted!r}; "
    "assert not [s for s in planted if s in out], 'a planted secret was left'"
)
DETECTOR = (
    "import sys; sys.path.insert(0, {root!r}); from tools import secrets_detect as d; "
    "text = open({log!r}, encoding='utf-8').read(); assert d.find(text)"
)
NAIVE = (
    "import sys; sys.path.insert(0, {root!r}); from tools import secrets_detect as d; "
    "plugins = [d._plugin(m, n) for m, n in d.REGEX_PLUGINS]; found = 0\n"
    "for number, line in enumerate(open({log!r}, encoding='utf-8'), 1):\n"
    "    for p in plugins:\n"
    "        found += len(p.analyze_line(filename='log', line=line, line_number=number))\n"
    "assert found"
)


def make_log(path: Path, mb: int) -> list[str]:
    planted = []
    with path.open("w") as fh:
        i = 0
        while fh.tell() < mb << 20:
            i += 1
            if i % 5000 == 0:
                secret = SECRETS[(i // 5000) % len(SECRETS)]
                fh.write(f"2026-12-01 10:00:00 [rank0] config {secret}\n")
                planted.append(secret.split('"')[1] if '"' in secret else secret)
            elif i % 3 == 0:
                record = {"step": i, "loss": 2.0 - i * 1e-6, "tokens_per_s": 12800.0 + i % 97}
                fh.write(json.dumps(record) + "\n")
            else:
                fh.write(
                    f"2026-12-01 10:00:00 [drafter-sim:2] step {i} loss 1.2345 draft_acc "
                    f"0.41 tok/s 12,{i % 1000:03d} (all drafters)\n"
                )
    return planted


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train_stdout.log"
        planted = make_log(log, args.mb)
        fmt = {"root": str(ROOT), "log": str(log), "planted": planted}
        contenders = {
            "redactor": [sys.executable, "-c", REDACTOR.format(**fmt)],
            "detector_find": [sys.executable, "-c", DETECTOR.format(**fmt)],
            "naive_analyze_line": [sys.executable, "-c", NAIVE.format(**fmt)],
        }
        grep = shutil.which("grep")
        if grep:
            contenders["grep_E_three_shapes"] = [
                grep,
                "-cE",
                "AKIA[0-9A-Z]{16}|sk_live_[0-9a-zA-Z]{24}|ghp_[0-9a-zA-Z]{36}",
                str(log),
            ]
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(args.runs):
            for name, argv in contenders.items():
                times[name].append(timed(argv))
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    print(
        json.dumps(
            {
                "log_mb": args.mb,
                "planted": len(planted),
                "runs": args.runs,
                "median_s": {k: round(v, 3) for k, v in medians.items()},
                "ratio_to_redactor": {
                    k: round(v / medians["redactor"], 2) for k, v in medians.items()
                },
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
