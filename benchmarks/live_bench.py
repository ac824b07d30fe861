"""The live probe's cost: its wall time beside one plain ``py-spy dump``, and what its
sampling costs the trainer it samples.

Run: .venv/bin/python benchmarks/live_bench.py [--runs 5] [--windows 6]

A trainer (a torch loop on one thread: a linear layer, forward, backward, step; it writes
its step count to a file every 50 steps) runs throughout. Then:

- ``live_probe``: ``tools.probes.live.collect`` on it, found by its command line (5 stack
  samples 0.4 s apart, the per-thread CPU, the host's processes), in its own process,
  ``runs`` times;
- ``py_spy_dump``: one ``py-spy dump --pid`` (blocking: it pauses the trainer while it
  reads), and ``py_spy_dump_nonblocking`` (``--json --nonblocking``, what the probe
  runs five times), ``runs`` times each, alternating;
- the trainer's steps a second over ``windows`` windows of 3 s, alternately with the live
  probe sampling it back to back and with nothing sampling it; medians of each.

Prints one table of medians and the throughput with and without sampling.
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
PY_SPY = str(Path(sys.executable).with_name("py-spy"))
PROBE = (
    "import sys; sys.path.insert(0, {root!r}); from tools.probes import live; "
    "from tools.probes._common import Context; "
    "params = {{'match': ['live-bench-trainer'], 'py_spy': {spy!r}}}\n"
    "for _ in range({times}):\n"
    "    out = live.collect(params, Context())\n"
    "print(sum(len(p['threads']) for p in out['processes']))"
)


TRAINER = """
import sys, torch
torch.set_num_threads(1)
model = torch.nn.Linear(256, 256)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 256)
step = 0
while True:
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    step += 1
    if step % 50 == 0:
        with open(sys.argv[2], "w") as f:
            f.write(str(step))
"""


def wall(argv: list[str]) -> float:
    started = time.perf_counter()
    # A nonblocking dump that catches the interpreter mid-update fails: timed all the same.
    subprocess.run(argv, capture_output=True, check=False)
    return time.perf_counter() - started


def count(counter: Path) -> int:
    """The trainer's step count; it rewrites the file, so a read may find it empty."""
    while True:
        text = counter.read_text().strip()
        if text:
            return int(text)
        time.sleep(0.001)


def rate(counter: Path, seconds: float) -> float:
    """The trainer's steps a second over ``seconds``, from the count it writes."""
    before, started = count(counter), time.perf_counter()
    time.sleep(seconds)
    return (count(counter) - before) / (time.perf_counter() - started)


def measure(
    runs: int, windows: int, pid: int, counter: Path
) -> tuple[dict[str, list[float]], list[float], list[float]]:
    """The contenders' wall seconds, and the trainer's steps a second without and with
    the probe sampling it."""
    time.sleep(3)  # the trainer's interpreter and torch started
    probe = [sys.executable, "-c", PROBE.format(root=str(ROOT), spy=PY_SPY, times=1)]
    # Sampling back to back for a whole window: the probe over and over in one process.
    sampling = [sys.executable, "-c", PROBE.format(root=str(ROOT), spy=PY_SPY, times=1000)]
    contenders = {
        "live_probe": probe,
        "py_spy_dump": [PY_SPY, "dump", "--pid", str(pid)],
        "py_spy_dump_nonblocking": [PY_SPY, "dump", "--pid", str(pid), "--json", "--nonblocking"],
    }
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(runs):
        for name, argv in contenders.items():
            times[name].append(round(wall(argv), 3))
    quiet: list[float] = []
    sampled: list[float] = []
    for w in range(windows):
        if w % 2:
            sampler = subprocess.Popen(sampling, stdout=subprocess.DEVNULL)
            time.sleep(0.5)  # its interpreter started: the window is one of sampling
            sampled.append(rate(counter, 3.0))
            sampler.kill()
            sampler.wait()
        else:
            quiet.append(rate(counter, 3.0))
    return times, quiet, sampled


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--windows", type=int, default=6)
    args = ap.parse_args()
    counter = Path(tempfile.mkdtemp(prefix="live-bench-")) / "steps"
    counter.write_text("0")
    # The probe finds it by its command line ("live-bench-trainer").
    trainer = subprocess.Popen([sys.executable, "-c", TRAINER, "live-bench-trainer", str(counter)])
    try:
        times, quiet, sampled = measure(args.runs, args.windows, trainer.pid, counter)
    finally:
        trainer.kill()
        trainer.wait()
    load = os.getloadavg()[0]
    print(
        f"runs: {args.runs}; windows: {args.windows} of 3 s; load {load:.2f}; {os.cpu_count()} cpus"
    )
    print()
    print("| contender | median wall s |")
    print("|---|---|")
    for name, walls in times.items():
        print(f"| {name} | {statistics.median(walls):.3f} |")
    print()
    q, s = statistics.median(quiet), statistics.median(sampled)
    print(f"trainer steps/s: {q:.1f} unsampled, {s:.1f} sampled back to back ({s / q:.2f}x)")
    print("all:", json.dumps({"times": times, "quiet": quiet, "sampled": sampled}))


if __name__ == "__main__":
    main()
