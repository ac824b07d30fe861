"""The sweep against what an engineer runs instead, each figure beside its comparison.

Run: .venv/bin/python benchmarks/sweep_bench.py [--runs 5] [--part ssh|local|both]
     [--workspace WS]

``ssh`` — the batched sweep vs the incident's way, one ``ssh host 'pct exec 200 -- CMD'``
per fact. A real OpenSSH server on 127.0.0.1 (tests/lib/sshd.py, with its stand-in
``pct`` that checks the container id and runs the command on this host) and the
incident's workspace (tests/lib/probe_workspace.make_workspace: two checkpoints, both
logs, a script, a dataset). The target's Python is this .venv's (torch 2.13 CPU).

- ``sweep``: tools.sweep.sweep over the SSH transport and the pct hop, the plan a
  diagnosis's first sweep has (every probe but those run only when named: no torch
  import on the target), one round trip, a fresh connection per run.
- ``sweep_with_torch_runtime``: the same with ``torch_runtime`` too (torch and dynamo
  imported on the target), what a family that asks for it adds.
- ``naive``: the same facts gathered the way the incident did, one ``ssh`` client
  invocation (a new connection each) per command, in sequence: versions by importing
  torch, md5sum, ls, du, cat metadata, tail/grep the logs, pip freeze, nvidia-smi, …
  (``naive_commands``). It returns raw text that someone still has to read; the sweep
  returns parsed facts.

``local`` — whole processes on this machine, on a workspace the reference trainer wrote
(``--workspace``, else one trained here first: 128 prompts, 40 steps, two checkpoints):

- ``facts``: ``dflash-doctor -q facts --target local --workspace WS --interpreter PY
  --json``, the CLI process around a diagnosis's first sweep;
- ``collect_env``: ``PY -m torch.utils.collect_env``, what a user runs first;
- ``facts_help``: ``dflash-doctor facts --help``, the command's imports and nothing
  else (no session, no sweep), for scale;
- ``sweep_in_process``: the sweep alone (plan, render, round trip, parse) called in this
  process, the CLI's start-up left out.

Contenders run interleaved within each run, so a change in the machine's load hits all
alike. Prints one JSON document with medians, every run, the load and the CPU count.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.lib.probe_workspace import make_workspace  # noqa: E402
from tests.lib.sshd import SSHServer, find_sshd  # noqa: E402
from tools.probes import PROBES  # noqa: E402
from tools.sweep import SweepResult, SweepSpec, sweep  # noqa: E402
from tools.transport import LocalTransport, SSHOptions, Transport, open_target  # noqa: E402

PY = sys.executable
DOCTOR = str(Path(PY).with_name("dflash-doctor"))


def naive_commands(ws: Path, py: str, torch_dir: str) -> list[str]:
    ck = ws / "checkpoints"
    log, out = ck / "train_log.jsonl", ck / "train_stdout.log"
    return [
        "uptime",
        f"df -h {ws}",
        "free -b",
        f"{py} -c 'import torch; print(torch.__version__, torch.version.git_version,"
        " torch.version.cuda)'",
        f"{py} -c 'import triton; print(triton.__version__)'",
        f"{py} -m pip freeze",
        "nvidia-smi",
        "pgrep -af train",
        "ls -la /tmp/torchinductor_$(whoami)",
        "du -sh /tmp/torchinductor_$(whoami)",
        "ls -la ~/.triton/cache",
        f"du -sh {ws}/compile_cache",
        f"md5sum {ws}/*.py",
        f"sha256sum {ws}/*.py",
        f"grep -n is_fx_symbolic_tracing {ws}/*.py",
        f"ls -la {ck}",
        f"ls -la {ck}/step_600 {ck}/step_690",
        f"cat {ck}/step_600/metadata.json",
        f"cat {ck}/step_690/metadata.json",
        f"wc -l {log}",
        f"head -n 5 {log}",
        f"tail -n 20 {log}",
        f"grep -c 'Detected that you are using FX' {out}",
        f"grep -n Traceback {out}",
        f"tail -n 20 {out}",
        f"wc -l {ws}/data/prompts.jsonl",
        f"ls -la {ws}/data",
        f"grep -n is_fx_symbolic_tracing {torch_dir}/_dynamo/eval_frame.py",
        f"grep -n _compile_session_context {torch_dir}/_dynamo/convert_frame.py",
        f"{py} -c 'import torch.fx._symbolic_trace as s, inspect;"
        " print(s.is_fx_symbolic_tracing, inspect.getsourcefile(s.is_fx_symbolic_tracing))'",
        f"{py} -c 'import torch._dynamo as d; print(d.config.error_on_nested_fx_trace,"
        " d.config.recompile_limit)'",
        f"{py} -m pip show -f torch",
    ]


def run_naive(server: SSHServer, commands: list[str]) -> float:
    base = [
        "ssh",
        "-p",
        str(server.port),
        "-i",
        str(server.identity),
        "-o",
        "BatchMode=yes",
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        f"UserKnownHostsFile={server.known_hosts}",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "LogLevel=ERROR",
        f"{server.user}@127.0.0.1",
    ]
    started = time.perf_counter()
    for cmd in commands:
        # What the incident typed: ssh host 'pct exec 200 -- sh -c CMD' (a shell for globs).
        remote = f"pct exec 200 -- sh -c {shlex.quote(cmd)}"
        subprocess.run([*base, remote], capture_output=True, check=False)
    return time.perf_counter() - started


def answered(result: SweepResult) -> int:
    """How many probes answered; any other failure than a skip stops the benchmark (a
    sweep that failed fast would be a false win)."""
    failed = {
        r.probe: r.error_text
        for r in result.failed()
        if r.error is None or r.error.kind != "skipped"
    }
    assert not failed, failed
    return sum(r.ok for r in result.results)


def timed_sweep(
    transport: Callable[[], Transport], spec: SweepSpec, only: list[str] | None
) -> tuple[float, int]:
    started = time.perf_counter()
    target = transport()
    try:
        result = sweep(target, spec, only=only)
    finally:
        target.close()
    return time.perf_counter() - started, answered(result)


def timed_process(argv: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    assert done.returncode == 0, (argv, done.stderr[-2000:])
    return elapsed


def summary(runs: dict[str, list[float]]) -> dict[str, object]:
    return {
        "median_s": {k: round(statistics.median(v), 2) for k, v in runs.items()},
        "all_s": {k: [round(x, 2) for x in v] for k, v in runs.items()},
    }


def bench_ssh(root: Path, runs: int) -> dict[str, object]:
    sshd = find_sshd()
    if sshd is None:
        sys.exit("sshd not installed (apt-get install openssh-server)")
    import torch  # only to find its directory for the naive greps

    torch_dir = str(Path(torch.__file__).parent)
    ws = make_workspace(root / "workspace")
    server = SSHServer(root / "sshd", sshd, ctids="200")
    (root / "sshd").mkdir()
    server.prepare()
    server.start()
    options = SSHOptions(
        identity_file=str(server.identity), known_hosts=str(server.known_hosts), retries=0
    )
    every = list(PROBES)  # named, so torch_runtime runs too

    def pct() -> Transport:
        return open_target(f"{server.uri}/pct:200", ssh=options)

    try:
        spec = SweepSpec.for_workspace(str(ws), interpreter=PY)
        commands = naive_commands(ws, PY, torch_dir)
        times: dict[str, list[float]] = {"sweep": [], "sweep_with_torch_runtime": [], "naive": []}
        probes: dict[str, int] = {}
        for _ in range(runs):
            t, probes["sweep"] = timed_sweep(pct, spec, None)
            times["sweep"].append(t)
            t, probes["sweep_with_torch_runtime"] = timed_sweep(pct, spec, every)
            times["sweep_with_torch_runtime"].append(t)
            times["naive"].append(run_naive(server, commands))
    finally:
        server.stop()
    out = summary(times)
    med = out["median_s"]
    assert isinstance(med, dict)
    return {
        **out,
        "probes_answered": probes,
        "naive_commands": len(commands),
        "speedup": {
            "naive/sweep": round(med["naive"] / med["sweep"], 2),
            "naive/sweep_with_torch_runtime": round(
                med["naive"] / med["sweep_with_torch_runtime"], 2
            ),
        },
    }


def trained_workspace(root: Path) -> Path:
    """A workspace the reference trainer writes, as tests/lib/workspaces.good_workspace."""
    ws = root / "trained"
    trainer = [PY, "-m", "examples.dflash_trainer"]
    small = ["--batch-size", "8", "--log-every", "5", "--intra-op-threads", "2"]
    for args in (
        ["dataset", "--workspace", str(ws), "--size", "128", "--lengths", "64"],
        ["init", "--workspace", str(ws)],
        ["train", "--workspace", str(ws), *small, "--steps", "40", "--save-every", "20"],
    ):
        subprocess.run([*trainer, *args], cwd=ROOT, check=True, capture_output=True)
    return ws


def bench_local(root: Path, runs: int, workspace: Path | None) -> dict[str, object]:
    ws = workspace or trained_workspace(root)
    facts = [DOCTOR, "-q", "facts", "--target", "local", "--workspace", str(ws)]
    facts += ["--interpreter", PY, "--json"]
    contenders = {
        "facts": facts,
        "collect_env": [PY, "-m", "torch.utils.collect_env"],
        "facts_help": [DOCTOR, "facts", "--help"],
    }
    spec = SweepSpec.for_workspace(str(ws), interpreter=PY)
    times: dict[str, list[float]] = {name: [] for name in [*contenders, "sweep_in_process"]}
    probes = 0
    for _ in range(runs):
        for name, argv in contenders.items():
            times[name].append(timed_process(argv))
        t, probes = timed_sweep(LocalTransport, spec, None)
        times["sweep_in_process"].append(t)
    out = summary(times)
    med = out["median_s"]
    assert isinstance(med, dict)
    return {
        **out,
        "workspace": "given" if workspace else "trained here (128 prompts, 40 steps)",
        "probes_answered": probes,
        "commands": {name: shlex.join(argv) for name, argv in contenders.items()},
        "ratio": {
            "facts/collect_env": round(med["facts"] / med["collect_env"], 2),
            "sweep_in_process/collect_env": round(med["sweep_in_process"] / med["collect_env"], 2),
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--part", choices=["ssh", "local", "both"], default="both")
    ap.add_argument("--workspace", type=Path, help="a trainer's workspace for --part local")
    args = ap.parse_args()
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    doc: dict[str, object] = {"runs": args.runs, "cpus": os.cpu_count()}
    doc["loadavg_at_start"] = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as tmp:
        if args.part in ("ssh", "both"):
            doc["ssh_pct"] = bench_ssh(Path(tmp), args.runs)
        if args.part in ("local", "both"):
            doc["local"] = bench_local(Path(tmp), args.runs, args.workspace)
    doc["loadavg_at_end"] = os.getloadavg()
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
