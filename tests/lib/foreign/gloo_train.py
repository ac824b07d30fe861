"""Two ranks, started by torchrun, train replicas of a small model on the gloo backend
(127.0.0.1) and average their gradients with an explicit ``all_reduce`` each step. Each
rank logs ``logs/rank{R}.jsonl``: ``step``, ``loss``, ``samples_per_sec`` (over the last
``--log-every`` steps), ``time``.

``--stop-after N``: after step N, rank 1 stops calling ``all_reduce``: it polls for a
file that never comes (a stuck rank). Rank 0 waits inside ``all_reduce`` for ever (gloo's
timeout is half an hour): both processes live, both logs stop, nothing is printed.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
import torch.distributed as dist


def wait_for_go(flag: Path) -> None:
    while not flag.exists():
        time.sleep(0.5)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10**9)
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--stop-after", type=int, default=0)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Linear(128, 128)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    log = Path("logs") / f"rank{rank}.jsonl"
    log.parent.mkdir(exist_ok=True)
    since = time.perf_counter()
    with log.open("a") as fh:
        for step in range(1, args.steps + 1):
            if rank == 1 and args.stop_after and step > args.stop_after:
                wait_for_go(Path("go.flag"))
            x = torch.randn(32, 128)
            loss = torch.nn.functional.mse_loss(model(x), x)
            opt.zero_grad()
            loss.backward()
            for p in model.parameters():
                assert p.grad is not None
                dist.all_reduce(p.grad)
                p.grad /= world
            opt.step()
            if step % args.log_every == 0:
                now = time.perf_counter()
                rate = 32 * args.log_every / (now - since)
                row = {"step": step, "loss": round(loss.item(), 5), "samples_per_sec": rate}
                fh.write(json.dumps({**row, "time": time.time()}) + "\n")
                fh.flush()
                since = now
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
