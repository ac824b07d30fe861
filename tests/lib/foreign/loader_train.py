"""A user's loop fed by a ``torch.utils.data.DataLoader`` with worker processes whose
dataset does real work per item (``--item-work`` rounds of a small matrix product) while
the model step is tiny: the loop waits on its loader, the workers keep their cores busy.
Progress in ``logs/metrics.jsonl`` (``step``, ``loss``, ``samples_per_sec``, ``time``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset


class Costly(Dataset[torch.Tensor]):
    def __init__(self, rounds: int) -> None:
        self.rounds = rounds

    def __len__(self) -> int:
        return 1 << 30

    def __getitem__(self, index: int) -> torch.Tensor:
        x = torch.full((48, 48), float(index % 7))
        for _ in range(self.rounds):
            x = torch.tanh(x @ x / 48)
        return x[0]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--item-work", type=int, default=60)
    parser.add_argument("--log-every", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Linear(48, 48)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loader = DataLoader(Costly(args.item_work), batch_size=16, num_workers=args.workers)
    log = Path("logs") / "metrics.jsonl"
    log.parent.mkdir(exist_ok=True)
    since = time.perf_counter()
    with log.open("a") as fh:
        for step, batch in enumerate(loader, 1):
            loss = torch.nn.functional.mse_loss(model(batch), batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % args.log_every == 0:
                now = time.perf_counter()
                rate = 16 * args.log_every / (now - since)
                row = {"step": step, "loss": round(loss.item(), 5), "samples_per_sec": rate}
                fh.write(json.dumps({**row, "time": time.time()}) + "\n")
                fh.flush()
                since = now
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
