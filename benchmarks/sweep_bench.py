"""The batched sweep vs the incident's way: one ``ssh host 'pct exec 200 -- CMD'`` per fact.

Run: .venv/bin/python benchmarks/sweep_bench.py [--runs 3]

A real OpenSSH server on 127.0.0.1 (tests/sshd.py, with its stand-in ``pct`` that checks
the container id and runs the command on this host) and the incident's workspace
(tests/test_probe_support.make_workspace: two checkpoints, both logs, a script, a
dataset). The target's Python is this .venv's (torch 2.13 CPU).

- ``sweep``: tools.sweep.sweep over the SSH transport and the pct hop: every probe,
  one round trip, a fresh connection per run.
- ``naive``: the same facts gathered the way the incident did, one ``ssh`` client
  invocation (a new connection each) per command, in sequence: versions by importing
  torch, md5sum, ls, du, cat metadata, tail/grep the logs, pip freeze, nvidia-smi, …
  (NAIVE below). It returns raw text that someone still has to read; the sweep returns
  parsed facts.

Prints one JSON document with medians and every run.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.sshd import SSHServer, find_sshd  # noqa: E402
from tests.test_probe_support import make_workspace  # noqa: E402
from tools.sweep import SweepSpec, sweep  # noqa: E402
from tools.transport import SSHOptions, open_target  # noqa: E402


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


def run_sweep(server: SSHServer, spec: SweepSpec) -> tuple[float, int]:
    options = SSHOptions(
        identity_file=str(server.identity), known_hosts=str(server.known_hosts), retries=0
    )
    started = time.perf_counter()
    target = open_target(f"{server.uri}/pct:200", ssh=options)
    try:
        result = sweep(target, spec)
    finally:
        target.transport.close()
    failed = [r.probe for r in result.failed()]
    assert not failed, {r.probe: r.error_text for r in result.failed()}
    return time.perf_counter() - started, len(result.results)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    sshd = find_sshd()
    if sshd is None:
        sys.exit("sshd not installed (apt-get install openssh-server)")
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    import torch  # only to find its directory for the naive greps

    torch_dir = str(Path(torch.__file__).parent)
    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as tmp:
        root = Path(tmp)
        ws = make_workspace(root / "workspace")
        server = SSHServer(root / "sshd", sshd, ctids="200")
        (root / "sshd").mkdir()
        server.prepare()
        server.start()
        try:
            spec = SweepSpec.for_workspace(str(ws), interpreter=sys.executable)
            commands = naive_commands(ws, sys.executable, torch_dir)
            sweeps: list[float] = []
            naives: list[float] = []
            probes = 0
            for _ in range(args.runs):
                t, probes = run_sweep(server, spec)
                sweeps.append(t)
                naives.append(run_naive(server, commands))
        finally:
            server.stop()
    med_s, med_n = statistics.median(sweeps), statistics.median(naives)
    print(
        json.dumps(
            {
                "runs": args.runs,
                "sweep_probes": probes,
                "naive_commands": len(commands),
                "median_s": {"sweep": round(med_s, 2), "naive": round(med_n, 2)},
                "all_s": {
                    "sweep": [round(x, 2) for x in sweeps],
                    "naive": [round(x, 2) for x in naives],
                },
                "speedup": round(med_n / med_s, 2),
                "cpus": os.cpu_count(),
                "loadavg_at_end": os.getloadavg()[0],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
