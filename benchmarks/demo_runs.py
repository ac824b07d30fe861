"""The demo, run end to end several times: how long it takes and whether the race struck.

Run: .venv/bin/python benchmarks/demo_runs.py [--runs 3]

Each run is ``python -m examples.demo`` (what ``make demo`` runs) as a fresh process (its
own temporary workspace, its own state directory), timed from the outside. For each run:
wall seconds, the exit code, whether the expanded run died of torch's FX-tracing error (as
the demo's progress lines say), the fix's outcome, the summary's last three lines, and the
load average before and after (other jobs on the machine stretch wall time). Prints one
JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DIED = "the run died (exit code 1) of torch's own error"


def one() -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="demo-state-") as state:
        env = {**os.environ, "XDG_STATE_HOME": state}
        load_before = os.getloadavg()
        started = time.monotonic()
        run = subprocess.run(
            [sys.executable, "-m", "examples.demo"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
        )
        wall = time.monotonic() - started
    lines = run.stdout.strip().splitlines()
    outcome = next(
        (x.strip() for x in lines if x.strip().startswith(("applied:", "rolled_back:"))), None
    )
    return {
        "wall_s": round(wall, 1),
        "rc": run.returncode,
        "race_fired": DIED in run.stderr,
        "fix": outcome,
        "summary": lines[-3:],
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "stderr_tail": run.stderr[-1500:] if run.returncode else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = []
    for _ in range(args.runs):
        runs.append(one())
        print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    walls = [float(r["wall_s"]) for r in runs]  # type: ignore[arg-type]
    print(
        json.dumps(
            {
                "cpus": os.cpu_count(),
                "median_wall_s": statistics.median(walls),
                "max_wall_s": max(walls),
                "race_fired": sum(bool(r["race_fired"]) for r in runs),
                "runs": runs,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
