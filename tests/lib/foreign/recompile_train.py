"""A recompile storm in one small process: a worker thread runs a step (an eager matmul
and a ``torch.compile``'d function) on one input length for ``--warm`` logged records,
then on a new length at every step, as a run does whose data grew lengths it never
compiled. The function is compiled with ``dynamic=False`` and the recompile limit raised
(in the worker: dynamo's config is per thread in this build), so every new length is a
new compile and the worker spends its time in dynamo's compiler, with nothing printed.
The worker logs ``logs/steps.jsonl`` (``step``, ``steps_per_sec``, ``time``) every
``--log-every`` steps. ``--steps N`` ends the run after step N; ``--resume`` goes on from
the last step the log holds (the lengths it meets are new to this process).
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path

import torch
import torch._dynamo


def score(x: torch.Tensor) -> torch.Tensor:
    return (x.sin() * x.cos()).sum() + x.tanh().mean()


def last_step(log: Path) -> int:
    if not log.exists():
        return 0
    lines = log.read_text().splitlines()
    return int(json.loads(lines[-1])["step"]) if lines else 0


def work(warm: int, log_every: int, steps: int, resume: bool) -> None:
    torch._dynamo.config.recompile_limit = 10**6
    torch._dynamo.config.accumulated_recompile_limit = 10**6
    compiled = torch.compile(score, backend="eager", dynamic=False)
    weight = torch.randn(256, 256)
    log = Path("logs") / "steps.jsonl"
    log.parent.mkdir(exist_ok=True)
    first = last_step(log) if resume else 0
    since, step, length = time.perf_counter(), first, 64
    with log.open("a") as fh:
        while step < steps:
            step += 1
            if step - first > warm * log_every:
                length += 1  # a length this process never compiled
            for _ in range(8):
                weight = torch.tanh(weight @ weight) * 0.5
            compiled(torch.randn(length))
            if step % log_every == 0:
                now = time.perf_counter()
                row = {"step": step, "steps_per_sec": log_every / (now - since)}
                fh.write(json.dumps({**row, "time": time.time()}) + "\n")
                fh.flush()
                since = now


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--warm", type=int, default=12, help="records before lengths change")
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--steps", type=int, default=10**9)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    worker = threading.Thread(
        target=work, args=(args.warm, args.log_every, args.steps, args.resume), name="worker-0"
    )
    worker.start()
    worker.join()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
