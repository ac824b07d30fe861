"""How long the command line takes before it does anything (issue 15): ``--version``,
``--help``, a local ``exec -- true`` and ``facts --only host``, as whole processes, this
tree against another (the previous release's, checked out with ``git worktree``) and
against the floors they cannot beat: the interpreter alone, importing typer, and the
command ``exec`` runs (``true``).

Run:
    git worktree add ../before <commit>      # the tree to compare with (optional)
    .venv/bin/python benchmarks/startup_bench.py [--before ../before] [--runs 5]

Each contender runs ``runs`` times, interleaved with the others (a busy machine slows them
alike); the medians of wall seconds are printed as one JSON document. Both trees run on
this virtualenv's interpreter and packages, each first on ``sys.path``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The console script's own two lines, with the tree chosen by sys.path.
ENTRY = (
    "import sys; sys.path.insert(0, {tree!r}); sys.argv = {argv!r}; "
    "from agent.cli import main; main()"
)


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path, help="another checkout to compare with")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    ws = Path(tempfile.mkdtemp(prefix="startup-ws-"))
    (ws / "train.py").write_text("print('step 1')\n")
    commands = {
        "--version": ["dflash-doctor", "--version"],
        "--help": ["dflash-doctor", "--help"],
        "exec -- true": ["dflash-doctor", "-q", "exec", "--", "true"],
        "facts --only host": [
            "dflash-doctor",
            "-q",
            "facts",
            "--json",
            "-w",
            str(ws),
            "--only",
            "host",
        ],
    }
    py = sys.executable
    contenders: dict[str, list[str]] = {
        "python -c pass": [py, "-c", "pass"],
        "python -c 'import typer'": [py, "-c", "import typer"],
        "true": ["true"],
    }
    trees = {"now": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    for tree_name, tree in trees.items():
        for name, argv in commands.items():
            contenders[f"{tree_name}: {name}"] = [
                py,
                "-c",
                ENTRY.format(tree=str(tree), argv=argv),
            ]
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.runs):
        for name, argv in contenders.items():
            times[name].append(timed(argv))
    medians = {name: round(statistics.median(t), 3) for name, t in times.items()}
    ratios = {}
    if args.before:
        for name in commands:
            ratios[name] = round(medians[f"before: {name}"] / medians[f"now: {name}"], 2)
    print(json.dumps({"runs": args.runs, "median_s": medians, "before/now": ratios}, indent=1))


if __name__ == "__main__":
    main()
