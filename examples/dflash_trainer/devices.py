"""One worker per device: targets make hidden states, drafters train on them.

A device object is built (and, with ``--compile-lock``, warmed up) before its worker
starts, in the thread or process that owns the run; ``run`` is the worker's loop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from . import checkpoint, dataset
from .channels import Channels
from .compilation import CompileGate, DeviceFlex
from .config import TrainConfig
from .logs import Console, TrainLog
from .masks import MaskCache
from .models import Drafter, TargetModel


@dataclass
class Rate:
    """Tokens per second over one log interval of a device."""

    tokens: int = 0
    started: float = field(default_factory=time.perf_counter)

    def add(self, n: int) -> None:
        self.tokens += n

    def take(self) -> tuple[int, float]:
        """(tokens, tokens/s) of the interval that ends now; starts the next one."""
        now = time.perf_counter()
        tokens, rate = self.tokens, self.tokens / max(now - self.started, 1e-9)
        self.tokens, self.started = 0, now
        return tokens, rate


@dataclass
class DeviceEnv:
    """What every device needs from the run around it."""

    cfg: TrainConfig
    console: Console
    train_log: TrainLog
    gate: CompileGate | None


def device_names(cfg: TrainConfig) -> tuple[list[str], list[str]]:
    """Targets first, then drafters, on separate devices (simulated ``sim:N`` on CPU)."""
    prefix = "cuda:" if cfg.device == "cuda" else "sim:"
    names = [f"{prefix}{i}" for i in range(cfg.targets + cfg.drafters)]
    return names[: cfg.targets], names[cfg.targets :]


class TargetDevice:
    def __init__(self, rank: int, name: str, env: DeviceEnv) -> None:
        self.rank, self.name, self.env = rank, name, env
        self.torch_device = torch.device(name if env.cfg.device == "cuda" else "cpu")
        torch.manual_seed(env.cfg.seed)  # every target holds the same frozen weights
        self.model = TargetModel(env.cfg.model).to(self.torch_device).eval()
        self.masks = MaskCache(self.torch_device)
        self.flex = DeviceFlex(name, ("target",), env.gate, env.console.say)

    @property
    def thread_name(self) -> str:
        return f"target-{self.name}"

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        mask = self.masks.target(tokens.shape[1])
        with torch.no_grad():
            hidden: torch.Tensor = self.model(
                tokens, lambda q, k, v: self.flex("target", q, k, v, mask)
            )
        return hidden

    def warm_up(self, lengths: Sequence[int]) -> None:
        for length in lengths:
            self.forward(self._dummy(length))

    def _dummy(self, length: int) -> torch.Tensor:
        shape = (self.env.cfg.batch_size, length)
        return torch.zeros(shape, dtype=torch.long, device=self.torch_device)

    def run_on(
        self, ch: Channels, prompts: Sequence[dataset.Prompt], first_batch: int
    ) -> Callable[[], None]:
        return lambda: self.run(ch, prompts, first_batch)

    def run(self, ch: Channels, prompts: Sequence[dataset.Prompt], first_batch: int) -> None:
        cfg, rate = self.env.cfg, Rate()
        stream = dataset.batches(
            prompts, cfg.batch_size, cfg.seed, start=first_batch + self.rank, stride=cfg.targets
        )
        for done, batch in enumerate(stream, start=1):
            if ch.stop.is_set():
                return
            tokens = torch.tensor(batch.tokens, device=self.torch_device)
            hidden = self.forward(tokens)
            if cfg.workers == "processes":
                hidden, tokens = hidden.cpu(), tokens.cpu()
            if not ch.put((batch.index, tokens, hidden)):
                return
            rate.add(tokens.numel())
            if done % cfg.log_every == 0:
                tokens_done, tok_s = rate.take()
                self.env.train_log.record(
                    device=self.name, role="target", step=done, loss=None,
                    tokens=tokens_done, tokens_per_s=round(tok_s, 1), seq_len=batch.length,
                )  # fmt: skip


class DrafterDevice:
    def __init__(
        self, rank: int, name: str, env: DeviceEnv, resumed: dict[str, Any] | None
    ) -> None:
        self.rank, self.name, self.env = rank, name, env
        cfg = env.cfg
        self.torch_device = torch.device(name if cfg.device == "cuda" else "cpu")
        torch.manual_seed(cfg.seed + 1)  # same initial replica on every drafter
        self.model = Drafter(cfg.model).to(self.torch_device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr)
        self.step = 0
        if resumed is not None:
            self.model.load_state_dict(resumed["drafter"])
            self.optimizer.load_state_dict(resumed["optimizer"])
            self.step = int(resumed["metadata"]["step"])
        self.masks = MaskCache(self.torch_device)
        self.flex = DeviceFlex(name, ("drafter",), env.gate, env.console.say)
        self.dataset_meta: dict[str, Any] = {}
        self.last_tok_s: float | None = None

    @property
    def thread_name(self) -> str:
        return f"drafter-{self.name}"

    def _flex_attend(self, length: int) -> Callable[..., torch.Tensor]:
        mask = self.masks.drafter(length)
        return lambda q, k, v: self.flex("drafter", q, k, v, mask)

    def _train_attend(self, length: int) -> Callable[..., torch.Tensor]:
        # flex_attention has no backward on CPU: train through SDPA with a dense mask
        # built from the same mask_mod. On CUDA flex trains as well.
        if self.torch_device.type == "cuda":
            return self._flex_attend(length)
        dense = self.masks.drafter_dense(length)
        return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=dense)

    def draft(self, tokens: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """The drafting forward (no grad), through this device's compiled flex_attention."""
        with torch.no_grad():
            logits: torch.Tensor = self.model(tokens, hidden, self._flex_attend(tokens.shape[1]))
        return logits

    def warm_up(self, lengths: Sequence[int]) -> None:
        cfg = self.env.cfg
        width = cfg.model.dim * cfg.model.target_layers
        for length in lengths:
            tokens = torch.zeros(cfg.batch_size, length, dtype=torch.long, device=self.torch_device)
            self.draft(tokens, torch.zeros(*tokens.shape, width, device=self.torch_device))

    def run_on(self, ch: Channels) -> Callable[[], None]:
        return lambda: self.run(ch)

    def run(self, ch: Channels) -> None:
        cfg, rate = self.env.cfg, Rate()
        params = list(self.model.parameters())
        saved_at, last = self.step, None
        while self.step < cfg.steps:
            item = ch.take()
            loss = None
            if item is not None:
                _, tokens, hidden = item
                tokens, hidden = tokens.to(self.torch_device), hidden.to(self.torch_device)
                logits = self.model(tokens, hidden, self._train_attend(tokens.shape[1]))
                loss = self.model.loss(logits, tokens)
                loss.backward()
            if ch.all_reduce(self.rank, params, stop_vote=item is None) or loss is None:
                break
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=False)
            self.step += 1
            accuracy = self.model.accuracy(self.draft(tokens, hidden), tokens)
            rate.add(tokens.numel())
            last = (loss.item(), accuracy, tokens.shape[1])
            if self.step % cfg.log_every == 0:
                self._log(*last, *rate.take())
            if self.rank == 0 and self.step % cfg.save_every == 0:
                self.save()
                saved_at = self.step
        if ch.failed.is_set():
            return
        if last is not None and rate.tokens:
            # The last, partial interval: the log ends at the step the checkpoint has.
            self._log(*last, *rate.take())
        if self.rank == 0 and self.step > saved_at:
            self.save()

    def _log(self, loss: float, accuracy: float, length: int, n: int, tok_s: float) -> None:
        self.last_tok_s = round(tok_s * self.env.cfg.drafters, 1)
        value = round(loss, 4)
        self.env.train_log.record(
            device=self.name, role="drafter", step=self.step, loss=value,
            draft_acc=round(accuracy, 4), tokens=n, tokens_per_s=round(tok_s, 1), seq_len=length,
        )  # fmt: skip
        if self.rank == 0:
            self.env.console.say(
                f"step {self.step} loss {value} draft_acc {accuracy:.3f} "
                f"tok/s {self.last_tok_s:.0f} (all drafters)"
            )

    def save(self) -> None:
        state = {"drafter": self.model.state_dict(), "optimizer": self.optimizer.state_dict()}
        meta = checkpoint.metadata(self.env.cfg, self.step, self.dataset_meta, self.last_tok_s)
        path = checkpoint.save(self.env.cfg.ws, self.step, state, meta)
        self.env.console.say(f"saved checkpoint {path.name}")


def guarded(
    work: Callable[[], None], ch: Channels, console: Console, what: str = "thread"
) -> Callable[[], None]:
    """Run a worker loop; on an exception log it with the worker's name and stop the run."""

    def body() -> None:
        try:
            work()
        except threading.BrokenBarrierError:
            if not ch.failed.is_set():
                console.exception(what)
                ch.fail()
        except BaseException:
            console.exception(what)
            ch.fail()

    return body
