"""Two ranks, started by torchrun, train replicas of a small model on the gloo backend
(127.0.0.1) and average their gradients with an explicit ``all_reduce`` each step. Each
rank logs ``logs/rank{R}.jsonl``: ``step``, ``loss``, ``samples_per_sec`` (over the last
``--log-every`` steps), ``time``.

``--stop-after N``: after step N, rank 1 stops calling ``all_reduce``: it polls for a
file that never comes (a stuck rank). Rank 0 waits inside ``all_reduce`` for ever (gloo's
timeout is half an hour): both processes live, both logs stop, nothing is printed.

``--timeout S`` gives the process group that timeout instead: rank 0's ``all_reduce``
then fails with gloo's own error, and the job ends. ``--dump``: each rank writes torch's
Flight Recorder ring (``TORCH_FR_BUFFER_SIZE`` must be set) with torch's own dump
function to ``$TORCH_FR_DUMP_TEMP_FILE<rank>``: rank 1 as it gets stuck, rank 0 as its
collective fails (gloo writes no dump on a timeout by itself).

``--compile``: the model's forward is ``torch.compile``'d (dynamo's eager backend, static
shapes, the recompile limit raised). ``--grow-from N``: from step N on, rank 1's batch
gains a row every step, so its compiled forward recompiles at every step and rank 0's
never does (run under ``TORCH_TRACE``, each rank writes its own trace file).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch._dynamo
import torch.distributed as dist


def wait_for_go(flag: Path) -> None:
    while not flag.exists():
        time.sleep(0.5)


def dump_ring(rank: int) -> None:
    """torch's Flight Recorder ring for this rank, as torch pickles it."""
    data = torch._C._distributed_c10d._dump_fr_trace()  # type: ignore[attr-defined]
    Path(os.environ["TORCH_FR_DUMP_TEMP_FILE"] + str(rank)).write_bytes(data)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10**9)
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--stop-after", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=0)
    parser.add_argument("--dump", action="store_true")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--grow-from", type=int, default=0)
    args = parser.parse_args()
    timeout = datetime.timedelta(seconds=args.timeout) if args.timeout else None
    dist.init_process_group("gloo", timeout=timeout)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Linear(128, 128)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    forward: Callable[[torch.Tensor], torch.Tensor] = model
    if args.compile:
        torch._dynamo.config.recompile_limit = 1000  # one thread: it applies
        forward = torch.compile(model, backend="eager", dynamic=False)
    log = Path("logs") / f"rank{rank}.jsonl"
    log.parent.mkdir(exist_ok=True)
    since, rows_since = time.perf_counter(), 0
    with log.open("a") as fh:
        for step in range(1, args.steps + 1):
            if rank == 1 and args.stop_after and step > args.stop_after:
                if args.dump:
                    dump_ring(rank)
                wait_for_go(Path("go.flag"))
            rows = 32
            if rank == 1 and args.grow_from and step >= args.grow_from:
                rows += step - args.grow_from + 1
            x = torch.randn(rows, 128)
            rows_since += rows
            loss = torch.nn.functional.mse_loss(forward(x), x)
            opt.zero_grad()
            loss.backward()
            for p in model.parameters():
                assert p.grad is not None
                try:
                    dist.all_reduce(p.grad)
                except RuntimeError:
                    if args.dump:
                        dump_ring(rank)
                    raise
                p.grad /= world
            opt.step()
            if step % args.log_every == 0:
                now = time.perf_counter()
                rate = rows_since / (now - since)
                row = {"step": step, "loss": round(loss.item(), 5), "samples_per_sec": rate}
                fh.write(json.dumps({**row, "time": time.time()}) + "\n")
                fh.flush()
                since, rows_since = now, 0
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
