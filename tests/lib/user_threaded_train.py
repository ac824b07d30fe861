"""A user's own threaded trainer, for the playbook tests: not the reference trainer.

Its layout, log format and launch are its own: it is started by a shell command (no
launch file), writes ``logs/metrics.txt`` as Python-logging lines with ``key=value``
pairs (``... INFO user_trainer - step=3 device=cpu:1 loss=2.31 tokens_per_s=812.5``),
its console goes wherever the command redirects it, it keeps no checkpoints. Each of
``--workers`` threads builds its own ``torch.compile``d step (``aot_eager``: torch's own
tracer, no C++ toolchain) and calls it on batches whose length changes now and then, so
threads compile while others run compiled code.

``--old-torch-race`` makes this process's compilations visible to the other threads as
torch <= 2.11's are (the project's one emulation of it, examples.dflash_trainer.faults):
a compiled call made while another thread compiles then raises torch's own FX-trace
RuntimeError in that worker thread, which dies; the run exits 1. It has no option to
run its workers as processes, and no compile lock of its own.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import torch

log = logging.getLogger("user_trainer")


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--workers", type=int, default=3, help="worker threads")
    p.add_argument("--lengths", default="16,24,32,40", help="batch lengths, in turn")
    p.add_argument("--load-s", type=float, default=0.02, help="seconds to load a batch")
    p.add_argument("--old-torch-race", action="store_true")
    p.add_argument("--out", default="logs")
    return p.parse_args(argv)


def make_step(dim: int) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    def step(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(x @ w)
        return (h * h).mean() + torch.softmax(h, dim=-1).amax()

    compiled: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = torch.compile(
        step, backend="aot_eager", dynamic=False
    )
    return compiled


def worker(rank: int, args: argparse.Namespace, lengths: list[int], failed: list[str]) -> None:
    device = f"cpu:{rank}"
    gen = torch.Generator().manual_seed(rank)
    dim = 32
    w = torch.randn(dim, dim, generator=gen)
    step = make_step(dim)
    for i in range(args.steps):
        # Each thread moves to a new length at its own step, so one compiles while the
        # others call their compiled steps.
        length = lengths[(i + rank) // 4 % len(lengths)]
        x = torch.randn(length, dim, generator=gen)
        started = time.perf_counter()
        try:
            loss = step(x, w)
        except Exception:
            failed.append(device)
            raise
        spent = max(time.perf_counter() - started, 1e-6)
        # Its data loading: a compiled step takes microseconds, and without this a thread
        # would finish its steps of one length before another thread starts compiling.
        time.sleep(args.load_s)
        log.info(
            "step=%d device=%s loss=%.4f tokens_per_s=%.1f", i, device, float(loss), length / spent
        )


def main(argv: list[str]) -> int:
    args = parse(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(out / "metrics.txt")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s - %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    if args.old_torch_race:
        # On PYTHONPATH, as a user's own libraries are (the launch command sets it).
        from examples.dflash_trainer.faults import emulate_torch211_race

        print(f"EMULATION: {emulate_torch211_race()}", flush=True)
    lengths = [int(n) for n in args.lengths.split(",")]
    failed: list[str] = []
    threads = [
        threading.Thread(target=worker, args=(r, args, lengths, failed), name=f"worker-{r}")
        for r in range(args.workers)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"done: {args.steps} steps x {args.workers} workers; failed: {failed}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
