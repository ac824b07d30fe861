"""Tokens/s of the reference DFlash trainer: the good run, each broken run, each fix.

Run from the repository root:

    python benchmarks/trainer_throughput.py [--reps 3] [--steps 300] [--only good,lock]

Every run is a fresh ``python -m examples.dflash_trainer train`` process in a fresh copy
of a prepared workspace. Two numbers per run, both drafter tokens (what the incident's
Ktok/s counted):

* steady: the median of the drafter's logged per-interval tokens/s (train_log.jsonl)
  over the second half of the steps, i.e. what the log shows once every shape has been
  met (every length occurs in the first epoch, well before half-way);
* end-to-end: all drafter tokens / the process's wall time (torch import, compiles and
  warm-up included);
* per CPU-second: all drafter tokens / the CPU time (user + system) of the run and all
  its children (worker processes, the C++ compiler). Other load on a shared machine
  stretches wall time far more than CPU time, so this is the steadier of the numbers.

Each scenario's value is the median over ``--reps`` runs, interleaved with the other
scenarios so that drift in machine load hits all alike; ratios are against ``good``. The
1-minute load average at each run's start is recorded: on a shared machine it is the
first thing to read next to a number.
Prints a Markdown table (with the exact commands) and writes the raw runs as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from examples.dflash_trainer import dataset  # noqa: E402

TRAIN = [sys.executable, "-m", "examples.dflash_trainer"]
RACE = ["--emulate-torch211-race"]
KEEP_LOGS: Path | None = None  # --keep-logs: where failed runs' stdout logs are copied
CHURN_LENGTHS = "32,48,80,96,112,144,160"  # 9 lengths with 64,128: past the limit of 8


@dataclass(frozen=True)
class Scenario:
    name: str
    workspace: str  # which prepared template
    flags: tuple[str, ...] = ()
    wipe_cache: bool = False
    what: str = ""
    # Trainer subcommands run in WS first (each gets ``--workspace WS``), e.g. a short
    # run that leaves a checkpoint, then ``break truncate-checkpoint``.
    prep: tuple[tuple[str, ...], ...] = ()
    launcher: bool = False  # train through WS/train_dflash.py (the script) instead


SCENARIOS = [
    Scenario("good", "base", what="old dataset (64,128), old compile cache, threads"),
    Scenario("expanded, torch 2.13 as is", "expanded",
             what="dataset + 96 prompts of 80,96,112 (cold compiles mid-run), no emulation"),
    Scenario("broken: race (crash)", "expanded", tuple(RACE), what="emulated 2.11 race"),
    Scenario("broken: race, nested trace eager", "expanded",
             (*RACE, "--nested-fx-trace", "eager"), what="race, error_on_nested_fx_trace=False"),
    Scenario("broken: race + late monkeypatch", "expanded", (*RACE, "--monkeypatch-fx-check"),
             what="the incident's patch of is_fx_symbolic_tracing"),
    Scenario("fixed: --compile-lock", "expanded", (*RACE, "--compile-lock"),
             what="race on, lock + serial warm-up"),
    Scenario("fixed: --workers processes", "expanded", (*RACE, "--workers", "processes"),
             what="race on, one process per device"),
    Scenario("broken: wiped compile cache", "base", wipe_cache=True,
             what="old dataset, cache wiped: every shape compiles cold"),
    Scenario("broken: shape churn", "churn",
             what=f"dataset + {CHURN_LENGTHS}: 9 lengths, recompile limit 8"),
    Scenario("fixed: shape churn, --recompile-limit 16", "churn", ("--recompile-limit", "16"),
             what="limit above the number of lengths"),
    Scenario("broken: changed training script", "base", launcher=True,
             prep=(("init",), ("break", "script")),
             what="old dataset; launcher edited after the last good checkpoint"),
    Scenario("broken: checkpoint records torch 2.11", "base",
             ("--record-torch-version", "2.11.0+cu128"),
             what="old dataset; checkpoints say another torch than the one installed"),
    Scenario("broken: truncated checkpoint, --resume", "base", ("--resume",),
             prep=(("train", "--steps", "20", "--save-every", "10"),
                   ("break", "truncate-checkpoint")),
             what="a 20-step run's last checkpoint cut in half, then resumed"),
]  # fmt: skip


@dataclass
class Result:
    scenario: str
    rc: int
    wall_s: float
    steps: int
    tokens: int
    steady: float | None
    end_to_end: float | None
    load: float
    cpu_s: float
    errors: list[str] = field(default_factory=list)


def sh(*argv: str | Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv], cwd=REPO, capture_output=True, text=True, timeout=timeout,
        check=False,
    )  # fmt: skip


def late_seed(data: Path, old: set[int]) -> int:
    """A ``--seed`` whose batch order first shows a new length at batch 12..20.

    The race needs a device that compiles a new length cold while the others are past
    their start-up compiles and calling; when every device meets the new lengths during
    its own start-up compiles, nobody calls in the window and the run survives (seen on
    this machine with seed 0, where a new length is batch 3). Every scenario uses the
    seed, so all runs see the same data in the same order.
    """
    prompts = dataset.load(data)
    for seed in range(200):
        plan = dataset.batch_plan(prompts, 8, seed)
        first = next(i for i, b in enumerate(plan) if prompts[b[0]].length not in old)
        if 12 <= first <= 20:
            return seed
    raise AssertionError("no seed < 200 puts the first new length at batch 12..20")


def prepare(root: Path, steps: int) -> tuple[dict[str, Path], list[str]]:
    """Templates (datasets, compile cache warm for the old shapes) and the seed flags."""
    base = root / "base"
    sh(*TRAIN, "dataset", "--workspace", base, "--size", "512")
    warm = sh(*TRAIN, "train", "--workspace", base, "--steps", str(steps))
    assert warm.returncode == 0, warm.stdout[-2000:] + warm.stderr[-2000:]
    shutil.rmtree(base / "checkpoints")
    expanded = root / "expanded"
    shutil.copytree(base, expanded)
    sh(*TRAIN, "dataset", "--workspace", expanded, "--expand", "--add", "96")
    seed = ["--seed", str(late_seed(expanded / "data" / "prompts.jsonl", {64, 128}))]
    churn = root / "churn"
    shutil.copytree(base, churn)
    sh(*TRAIN, "dataset", "--workspace", churn, "--expand", "--add", "448",
       "--new-lengths", CHURN_LENGTHS)  # fmt: skip
    # Compile the churn shapes once, so its runs measure the eager fallback, not compiles.
    sh(*TRAIN, "train", "--workspace", churn, "--steps", str(steps), *seed)
    shutil.rmtree(churn / "checkpoints")
    return {"base": base, "expanded": expanded, "churn": churn}, seed


def run_once(
    s: Scenario, template: Path, root: Path, steps: int, rep: int, seed: list[str]
) -> Result:
    ws = root / f"run-{rep}"
    shutil.rmtree(ws, ignore_errors=True)
    shutil.copytree(template, ws)
    if s.wipe_cache:
        shutil.rmtree(ws / "compile_cache")
    for sub in s.prep:
        done = sh(*TRAIN, *sub, "--workspace", ws)
        assert done.returncode == 0, f"{sub}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    log = ws / "checkpoints" / "train_log.jsonl"
    offset = log.stat().st_size if log.exists() else 0  # a prep run's lines are not counted
    if s.launcher:
        argv = [sys.executable, str(ws / "train_dflash.py")]
    else:
        argv = [*TRAIN, "train", "--workspace", str(ws)]
    argv += ["--steps", str(steps), "--log-every", "10", *seed]
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = sh(*argv, *s.flags)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    text = log.read_bytes()[offset:].decode() if log.exists() else ""
    records = [json.loads(x) for x in text.splitlines()]
    drafter = [r for r in records if r["role"] == "drafter"]
    tokens = sum(r["tokens"] for r in drafter)
    stdout_log = (ws / "checkpoints" / "train_stdout.log").read_text()
    if KEEP_LOGS is not None and proc.returncode != 0:
        name = "".join(c if c.isalnum() else "_" for c in s.name)
        (KEEP_LOGS / f"{name}-{rep}.log").write_text(stdout_log)
    errors = sorted({ln.split("] ", 1)[-1][:120] for ln in stdout_log.splitlines()
                     if "Error:" in ln or "recompile_limit" in ln})  # fmt: skip
    return Result(
        scenario=s.name, rc=proc.returncode, wall_s=round(wall, 1),
        steps=drafter[-1]["step"] if drafter else 0, tokens=tokens,
        steady=statistics.median(late) if (late := [r["tokens_per_s"] for r in drafter
                                                   if r["step"] > steps // 2]) else None,
        end_to_end=round(tokens / wall, 1) if proc.returncode == 0 else None,
        load=round(load, 2), cpu_s=round(cpu, 1), errors=errors,
    )  # fmt: skip


def median(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return round(statistics.median(got)) if got else None


def table(results: dict[str, list[Result]], steps: int, reps: int, seed: list[str]) -> str:
    good = results.get("good", [])
    g_steady = median([r.steady for r in good])
    g_e2e = median([r.end_to_end for r in good])
    g_cpu = median([r.tokens / r.cpu_s for r in good if r.cpu_s])
    lines = [
        f"Median of {reps} runs, {steps} steps each; tokens/s are drafter tokens; "
        f"load = median 1-min load average at run start (2 cores).",
        "",
        "| scenario | exit codes | steps reached | steady tok/s | ÷ good "
        "| end-to-end tok/s | ÷ good | tok per CPU-s | ÷ good | load | seen in train_stdout.log |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for s in SCENARIOS:
        runs = results.get(s.name)
        if not runs:
            continue
        steady, e2e = median([r.steady for r in runs]), median([r.end_to_end for r in runs])
        per_cpu = median([r.tokens / r.cpu_s if r.rc == 0 and r.cpu_s else None for r in runs])

        def ratio(v: float | None, g: float | None) -> str:
            return f"{v / g:.2f}" if v is not None and g else "—"

        errs = sorted({e for r in runs for e in r.errors})
        lines.append(
            f"| {s.name} | {','.join(str(r.rc) for r in runs)} | "
            f"{','.join(str(r.steps) for r in runs)} | {steady if steady else '—'} | "
            f"{ratio(steady, g_steady)} | {e2e if e2e else '—'} | {ratio(e2e, g_e2e)} | "
            f"{per_cpu if per_cpu else '—'} | {ratio(per_cpu, g_cpu)} | "
            f"{statistics.median(r.load for r in runs):.1f} | "
            f"{'; '.join(errs)[:200] or '—'} |"
        )
    lines += ["", "Commands (WS is a fresh copy of the prepared workspace for each run):", ""]
    for s in SCENARIOS:
        if s.name in results:
            wipe = "rm -rf WS/compile_cache && " if s.wipe_cache else ""
            wipe += "".join(
                f"python -m examples.dflash_trainer {' '.join(sub)} --workspace WS && "
                for sub in s.prep
            )
            train = (
                "python WS/train_dflash.py"
                if s.launcher
                else "python -m examples.dflash_trainer train --workspace WS"
            )
            cmd = f"{wipe}{train} --steps {steps} --log-every 10 {' '.join((*seed, *s.flags))}"
            lines.append(f"* {s.name} ({s.what}): `{cmd.strip()}`")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--only", default="", help="comma-separated scenario name prefixes")
    p.add_argument("--json", type=Path, default=None, help="write raw results here")
    p.add_argument("--keep-logs", type=Path, default=None, help="copy failed runs' logs here")
    args = p.parse_args()
    global KEEP_LOGS
    KEEP_LOGS = args.keep_logs
    if KEEP_LOGS is not None:
        KEEP_LOGS.mkdir(parents=True, exist_ok=True)
    chosen = [s for s in SCENARIOS if not args.only
              or any(s.name.startswith(x) for x in args.only.split(","))]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="dflash-bench-") as tmp:
        root = Path(tmp)
        templates, seed = prepare(root, args.steps)
        results: dict[str, list[Result]] = {}
        for rep in range(args.reps):  # interleaved, so drift in machine load hits all alike
            for s in chosen:
                r = run_once(s, templates[s.workspace], root, args.steps, rep, seed)
                results.setdefault(s.name, []).append(r)
                print(json.dumps(r.__dict__), file=sys.stderr, flush=True)
    if args.json:
        args.json.write_text(json.dumps({k: [r.__dict__ for r in v] for k, v in results.items()}))
    print(table(results, args.steps, args.reps, seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
