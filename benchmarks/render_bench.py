"""Rendering the probe bundle: the dependency scan as it was (``ast.walk`` over every
node, repeated for each probe that needs a module) vs now (statement blocks only, each
module's imports once per process).

Run: .venv/bin/python benchmarks/render_bench.py [--runs 5]

Each run is a fresh process (a CLI command renders its bundle once, cold), timing
``tools.sweep.bundle.render`` on the default sweep's plan. The naive scan is the one this
project shipped before (kept here, not in the tool). Both must produce the same bytes;
the script checks that. Prints one JSON document with medians and every run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import ast, hashlib, json, sys, time
sys.path.insert(0, sys.argv[1])
from tools.sweep import bundle
from tools.sweep import SweepSpec, build_plan, render

if sys.argv[3] == "naive":
    def naive(name):
        package = name.rsplit(".", 1)[0].split(".")
        found = []
        for node in ast.walk(ast.parse(bundle._source(name))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[: len(package) - (node.level - 1)]
                stem = [*base, *(node.module.split(".") if node.module else [])]
                for alias in node.names:
                    candidate = ".".join([*stem, alias.name])
                    path = bundle._TOOLS.joinpath(*candidate.split(".")).with_suffix(".py")
                    found.append(candidate if path.is_file() else ".".join(stem))
        return found
    bundle._relative_imports = naive
plan = build_plan(SweepSpec(workspace=sys.argv[2]))
t = time.perf_counter()
data = render(plan)
print(json.dumps({"s": time.perf_counter() - t, "md5": hashlib.md5(data).hexdigest()}))
"""


def one(way: str, ws: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), ws, way],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result: dict[str, object] = json.loads(out)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as ws:
        runs: dict[str, list[dict[str, object]]] = {"naive": [], "now": []}
        for _ in range(args.runs):
            for way in runs:  # alternating, so load drifts hit both alike
                runs[way].append(one(way, ws))
    digests = {str(r["md5"]) for rs in runs.values() for r in rs}
    assert len(digests) == 1, f"the two scans rendered different bundles: {digests}"
    medians = {w: statistics.median(float(str(r["s"])) for r in rs) for w, rs in runs.items()}
    print(
        json.dumps(
            {
                "load": os.getloadavg(),
                "median_s": medians,
                "ratio_now_over_naive": medians["now"] / medians["naive"],
                "same_bytes": True,
                "runs": runs,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
