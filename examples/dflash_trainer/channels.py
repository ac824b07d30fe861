"""What the device workers share: the target→drafter queue, stop/failure events, and the
drafters' gradient all-reduce. Built from ``threading`` or from a spawn ``multiprocessing``
context, with one API, so the workers do not care which ``--workers`` mode runs them.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Any

import torch

QUEUE_DEPTH = 4
POLL_S = 0.1


@dataclass
class Channels:
    queue: Any  # queue.Queue | multiprocessing Queue of (batch index, tokens, hidden)
    stop: Any  # threading.Event | multiprocessing Event: finish the step, save, leave
    failed: Any  # set by a worker that raised; the run exits non-zero
    barrier: Any | None  # drafters' all-reduce rendezvous (None with one drafter)
    grads: torch.Tensor | None  # [drafters, n_params + 1] in shared memory

    def put(self, item: tuple[int, torch.Tensor, torch.Tensor]) -> bool:
        """Block until queued or stopped; False when stopped first."""
        while not self.stop.is_set():
            try:
                self.queue.put(item, timeout=POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def take(self) -> tuple[int, torch.Tensor, torch.Tensor] | None:
        """Block until an item comes or the run stops; None when stopped."""
        while not self.stop.is_set():
            try:
                item: tuple[int, torch.Tensor, torch.Tensor] = self.queue.get(timeout=POLL_S)
                return item
            except queue.Empty:
                continue
        return None

    def fail(self) -> None:
        self.failed.set()
        self.stop.set()
        if self.barrier is not None:
            # Wake drafters waiting for a peer that will never come.
            self.barrier.abort()

    def all_reduce(self, rank: int, params: list[torch.nn.Parameter], stop_vote: bool) -> bool:
        """Average gradients across drafters; True (and no update) if any voted to stop.

        The stop decision travels with the gradients, so every replica stops at the
        same step and the checkpoint is the same whichever replica writes it.
        """
        if self.barrier is None or self.grads is None:
            return stop_vote
        row = self.grads[rank]
        row.zero_()
        if stop_vote:
            row[-1] = 1.0
        else:
            torch.cat([p.grad.flatten() for p in params if p.grad is not None], out=row[:-1])
        self.barrier.wait()
        total = self.grads.sum(0)
        self.barrier.wait()  # nobody overwrites its row before everyone has summed
        if total[-1] > 0:
            return True
        offset = 0
        for p in params:
            if p.grad is not None:
                n = p.grad.numel()
                p.grad.copy_(total[offset : offset + n].view_as(p.grad) / len(self.grads))
                offset += n
        return False


def _grad_slots(drafters: int, n_params: int) -> torch.Tensor | None:
    return torch.zeros(drafters, n_params + 1).share_memory_() if drafters > 1 else None


def thread_channels(drafters: int, n_params: int) -> Channels:
    return Channels(
        queue=queue.Queue(QUEUE_DEPTH),
        stop=threading.Event(),
        failed=threading.Event(),
        barrier=threading.Barrier(drafters) if drafters > 1 else None,
        grads=_grad_slots(drafters, n_params),
    )


def process_channels(ctx: Any, drafters: int, n_params: int) -> Channels:
    return Channels(
        queue=ctx.Queue(QUEUE_DEPTH),
        stop=ctx.Event(),
        failed=ctx.Event(),
        barrier=ctx.Barrier(drafters) if drafters > 1 else None,
        grads=_grad_slots(drafters, n_params),
    )
