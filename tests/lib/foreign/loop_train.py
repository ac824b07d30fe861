"""A user's plain training loop: one small MLP on random batches, no framework, its
progress written as CSV to ``runs/progress.csv`` (``iter``, ``loss``, ``samples_per_sec``
over the last ``--log-every`` iterations, ``wall_time``), a line on the console now and
then. It runs until killed (or ``--iters``); one thread computes, so another process on
the same cores slows it as a busy neighbour does.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import torch


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=10**9)
    parser.add_argument("--log-every", type=int, default=10)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256)
    )
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    out = Path("runs")
    out.mkdir(exist_ok=True)
    with (out / "progress.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["iter", "loss", "samples_per_sec", "wall_time"])
        since = time.perf_counter()
        for it in range(1, args.iters + 1):
            x = torch.randn(args.batch, 256)
            loss = torch.nn.functional.mse_loss(model(x), x)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if it % args.log_every == 0:
                now = time.perf_counter()
                rate = args.batch * args.log_every / (now - since)
                writer.writerow([it, f"{loss.item():.5f}", f"{rate:.1f}", f"{time.time():.3f}"])
                fh.flush()
                since = now
            if it % (args.log_every * 50) == 0:
                print(f"iter {it} loss {loss.item():.4f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
