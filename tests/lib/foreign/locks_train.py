"""A user's threaded training loop: two worker threads each train a tiny model and log
``logs/metrics.jsonl`` (``step``, ``worker``, ``loss``, ``tok_s``, ``time``). They share
the log and a statistics table, each guarded by its own lock. After ``--deadlock-after``
steps the two workers meet (a barrier, once a run) and take the two locks in opposite
orders (``log_lock`` then ``stats_lock`` in one, the reverse in the other), and each
waits for ever on the lock the other holds: the process lives, its log stops, no error
is printed.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path

import torch

log_lock = threading.Lock()
stats_lock = threading.Lock()
stats: dict[str, float] = {}
# Where the two workers meet once a run (an epoch's end, say): from there each takes its
# first lock at the same time, so each holds what the other will ask for.
epoch_end = threading.Barrier(2)


def write_record(record: dict[str, float | int | str]) -> None:
    with log_lock, Path("logs/metrics.jsonl").open("a") as f:
        f.write(json.dumps(record) + "\n")


def log_then_stats(worker: int, loss: float) -> None:
    """Worker 0's order: the log's lock, then the statistics'."""
    with log_lock:
        time.sleep(0.2)
        with stats_lock:
            stats[f"w{worker}"] = loss


def stats_then_log(worker: int, loss: float) -> None:
    """Worker 1's order: the statistics' lock, then the log's."""
    with stats_lock:
        time.sleep(0.2)
        with log_lock:
            stats[f"w{worker}"] = loss


def work(worker: int, steps: int, deadlock_after: int) -> None:
    torch.manual_seed(worker)
    model = torch.nn.Linear(64, 64)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(1, steps + 1):
        started = time.perf_counter()
        x = torch.randn(32, 64)
        loss = torch.nn.functional.mse_loss(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.02)
        seconds = time.perf_counter() - started
        record = {"step": step, "worker": worker, "loss": round(loss.item(), 4)}
        write_record({**record, "tok_s": round(32 * 64 / seconds, 1), "time": time.time()})
        if step == deadlock_after:
            epoch_end.wait()
            (log_then_stats if worker == 0 else stats_then_log)(worker, loss.item())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--deadlock-after", type=int, default=40)
    args = parser.parse_args()
    Path("logs").mkdir(exist_ok=True)
    torch.set_num_threads(1)
    workers = [
        threading.Thread(target=work, args=(w, args.steps, args.deadlock_after), name=f"worker-{w}")
        for w in range(2)
    ]
    for t in workers:
        t.start()
    for t in workers:
        t.join()


if __name__ == "__main__":
    main()
