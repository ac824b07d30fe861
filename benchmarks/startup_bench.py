"""How long the command line takes before it does anything (issue 15): ``--version``,
``--help``, a local ``exec -- true``, ``exec -- cat`` of a 64 KB training log and
``facts --only host``, as whole processes, this tree against another (the previous
release's, checked out with ``git worktree``) and against the floors they cannot beat:
the interpreter alone, importing typer, and the commands ``exec`` runs (``true``, ``cat``).

Run:
    git worktree add ../before <commit>      # the tree to compare with (optional)
    pip install --target ../typer-029 --no-deps typer==0.29.2   # optional, see below
    .venv/bin/python benchmarks/startup_bench.py [--before ../before] \
        [--typer ../typer-029] [--runs 5]

``--typer DIR`` also times this tree with the typer found in DIR first on ``sys.path``
(typer 0.29 converts option values through pydantic; pyproject keeps it below 0.29).
Both trees are byte-compiled first, as installed. ``exec`` runs with a state directory of
the benchmark's own, where a first run has kept the secret formats' screen; "first run"
times ``exec -- true`` in a new, empty one.

Each contender runs ``runs`` times, interleaved with the others (a busy machine slows them
alike); the medians of wall seconds are printed as one JSON document. Both trees run on
this virtualenv's interpreter and packages, each first on ``sys.path``.
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

ROOT = Path(__file__).resolve().parents[1]

# The console script's own two lines, with the tree (and a typer) chosen by sys.path.
ENTRY = (
    "import sys; sys.path[:0] = {paths!r}; sys.argv = {argv!r}; from agent.cli import main; main()"
)
# The same in a new, empty state directory: a first run ever.
FIRST = (
    "import atexit, os, shutil, sys, tempfile; d = tempfile.mkdtemp(); "
    "atexit.register(shutil.rmtree, d, True); os.environ['XDG_STATE_HOME'] = d; "
    "sys.path[:0] = {paths!r}; sys.argv = {argv!r}; from agent.cli import main; main()"
)
LOG_LINE = (
    "2026-12-01 10:00:01 INFO [rank0]: step {n} loss 2.31 lr 3e-4 tokens/s 12800 "
    "grad_norm 0.9 drafter cuda:1\n"
)


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def main() -> None:
    with (
        tempfile.TemporaryDirectory(prefix="startup-ws-") as ws,
        tempfile.TemporaryDirectory(prefix="startup-state-") as state,
    ):
        os.environ["XDG_STATE_HOME"] = state
        measure(Path(ws))


def measure(ws: Path) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path, help="another checkout to compare with")
    parser.add_argument("--typer", type=Path, help="a directory holding another typer")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    (ws / "train.py").write_text("print('step 1')\n")
    log = ws / "train.log"
    log.write_text("".join(LOG_LINE.format(n=n) for n in range(1, 700))[: 64 * 1024])
    commands = {
        "--version": ["dflash-doctor", "--version"],
        "--help": ["dflash-doctor", "--help"],
        "exec -- true": ["dflash-doctor", "-q", "exec", "--", "true"],
        "exec -- cat 64 KB log": ["dflash-doctor", "-q", "exec", "--", "cat", str(log)],
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
        "cat 64 KB log": ["cat", str(log)],
    }
    trees: dict[str, list[str]] = {"now": [str(ROOT)]}
    if args.before:
        trees["before"] = [str(args.before.resolve())]
    if args.typer:
        trees["now, that typer"] = [str(args.typer.resolve()), str(ROOT)]
        contenders["python -c 'import typer' (that typer)"] = [
            py,
            "-c",
            f"import sys; sys.path.insert(0, {str(args.typer.resolve())!r}); import typer",
        ]
    for tree_name, paths in trees.items():
        for name, argv in commands.items():
            contenders[f"{tree_name}: {name}"] = [py, "-c", ENTRY.format(paths=paths, argv=argv)]
        contenders[f"{tree_name}: exec -- true, first run"] = [
            py,
            "-c",
            FIRST.format(paths=paths, argv=commands["exec -- true"]),
        ]
    for paths in trees.values():
        # Each tree with its bytecode, as a wheel install (and `make`) has it.
        tree = Path(paths[-1])
        dirs = [str(tree / d) for d in ("agent", "tools", "playbooks") if (tree / d).is_dir()]
        subprocess.run([py, "-m", "compileall", "-q", *dirs], check=True)
    for argv in contenders.values():  # warm the file cache, keep the screen
        timed(argv)
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.runs):
        for name, argv in contenders.items():
            times[name].append(timed(argv))
    medians = {name: round(statistics.median(t), 3) for name, t in times.items()}
    ratios = {}
    if args.before:
        for name in commands:
            ratios[name] = round(medians[f"before: {name}"] / medians[f"now: {name}"], 2)
    added = {
        "exec -- true": round(medians["now: exec -- true"] - medians["true"], 3),
        "exec -- cat 64 KB log": round(
            medians["now: exec -- cat 64 KB log"] - medians["cat 64 KB log"], 3
        ),
    }
    print(
        json.dumps(
            {
                "runs": args.runs,
                "median_s": medians,
                "before/now": ratios,
                "exec adds (s)": added,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
