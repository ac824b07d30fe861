"""A DFlash-like drafter trainer written independently of examples/dflash_trainer: one
worker thread per drafter device, each calling a ``torch.compile``'d scoring function on
the batch's sequence length, as the incident's trainer did.

Its own layout and schema, on purpose unlike the reference trainer's: checkpoints
``ckpt/epoch_E_step_S/`` (``drafter.pt`` and ``meta.json``, versions as flat keys), the
metrics ``logs/metrics.jsonl`` (``_step``, ``device``, ``role``, ``train/loss``,
``perf/tokens_per_second``), its console log wherever the launch file sends it.

``--fault`` makes one worker (``drafter-1``) end the way the issue's crash cases do, each
raised by torch or as torch's own exception class, in the worker thread:

* ``fx``: another thread runs ``torch.fx.symbolic_trace`` while the worker calls its
  compiled function; torch's ``eval_frame`` raises its own RuntimeError.
* ``oom`` / ``nccl``: ``torch.OutOfMemoryError`` / ``torch.distributed.DistBackendError``
  with the text given in ``--fault-text`` (CUDA and NCCL are not on this machine).
* ``hang``: the worker waits an hour; the others finish, the process lives on.

Its author raised dynamo's recompile limit to 64 at start-up, in the main thread, as
many scripts do; this torch keeps config overrides per thread, so the drafter threads
still read torch's default (8) — or, with ``--config FILE.toml``, its ``[compile]
recompile_limit``, which each drafter thread sets for itself: a length beyond it logs
torch's warning (with that 8)
and runs uncompiled, building ``position_weight``'s table at every call, so the run slows
down as the incident's did.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import threading
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import cast

import torch
import torch._dynamo
import torch.distributed
import torch.fx

HIDDEN = 32
VOCAB = 128


class Drafter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, HIDDEN)
        self.mix = torch.nn.Linear(HIDDEN, HIDDEN)
        self.head = torch.nn.Linear(HIDDEN, VOCAB)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.head(torch.tanh(self.mix(self.embed(ids))))
        return out


# Python work per position that ``position_weight`` does for a sequence length.
TABLE_WORK = 4000


def _position_weight(length: int) -> float:
    """A per-length constant built in plain Python (a position table's normaliser, as
    attention-mask helpers build): torch's trace runs it once and folds the result into
    the compiled graph, while a length that runs eager builds it again at every call,
    holding the GIL. On CPU this is what makes a length past the recompile limit slow,
    the stand-in for the incident's compiled (fused) against eager (unfused) attention."""
    total = 0
    for i in range(length * TABLE_WORK):
        total += i % 7
    return total / (length * TABLE_WORK * 3.0)


position_weight = cast(
    Callable[[int], float], torch.compiler.assume_constant_result(_position_weight)
)


def agreement(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """The drafter's acceptance proxy, compiled once per sequence length."""
    hits = (logits.argmax(-1) == ids).float().mean()
    return hits * position_weight(ids.shape[-1])


def load_prompts(path: Path) -> list[list[int]]:
    return [json.loads(line)["input_ids"] for line in path.read_text().splitlines() if line]


class HeldTrace(torch.nn.Module):
    """What another thread traces with ``torch.fx.symbolic_trace``: its forward holds the
    trace open (torch's tracing flag, process-global, stays set) until told to finish."""

    def __init__(self, opened: threading.Event, finish: threading.Event) -> None:
        super().__init__()
        self.opened = opened
        self.finish = finish

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.opened.set()
        self.finish.wait(60)
        return x + 1


def call_during_a_trace(score: Callable[..., object], ids: torch.Tensor) -> None:
    """The worker's compiled call while a concurrent FX trace is open: torch's own check
    in the compiled wrapper raises."""
    opened, finish = threading.Event(), threading.Event()
    tracer = threading.Thread(
        target=torch.fx.symbolic_trace, args=(HeldTrace(opened, finish),), name="fx-trace"
    )
    tracer.start()
    opened.wait(60)
    try:
        score(torch.zeros((*ids.shape, VOCAB)), ids)
    finally:
        finish.set()
        tracer.join()


def raise_fault(kind: str, text: str, score: Callable[..., object], ids: torch.Tensor) -> None:
    if kind == "fx":
        call_during_a_trace(score, ids)
    elif kind == "oom":
        raise torch.OutOfMemoryError(text)
    elif kind == "nccl":
        raise torch.distributed.DistBackendError(text)
    elif kind == "hang":
        time.sleep(3600)  # a wait on something that never comes: alive, no more steps


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.ws = Path.cwd()
        self.prompts = load_prompts(self.ws / "data" / "prompts.jsonl")
        self.metrics = (self.ws / "logs").joinpath("metrics.jsonl")
        self.metrics.parent.mkdir(exist_ok=True)
        self.lock = threading.Lock()
        self.failed: list[str] = []
        self.score = torch.compile(agreement, backend="eager", dynamic=False)
        self.at_fault = threading.Barrier(args.devices)
        self.threads: list[threading.Thread] = []

    def batches(self, device: int) -> list[list[list[int]]]:
        """Device ``device``'s batches: same-length prompts, dealt round-robin."""
        by_length: dict[int, list[list[int]]] = {}
        for p in self.prompts:
            by_length.setdefault(len(p), []).append(p)
        out = []
        for group in by_length.values():
            for i in range(0, len(group), self.args.batch_size):
                out.append(group[i : i + self.args.batch_size])
        return out[device :: self.args.devices]

    def worker(self, device: int, start: int) -> None:
        torch.manual_seed(device)
        if self.args.config:  # its compile settings, applied in the thread that compiles
            settings = tomllib.loads(Path(self.args.config).read_text())["compile"]
            torch._dynamo.config.recompile_limit = int(settings["recompile_limit"])
        model = Drafter()
        if start:
            saved = self.ws / "ckpt" / f"epoch_0_step_{start}" / "drafter.pt"
            model.load_state_dict(torch.load(saved, weights_only=True))
            print(f"drafter-{device} loaded checkpoint {saved.relative_to(self.ws)}", flush=True)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        plan = self.batches(device)
        tokens, since = 0, time.perf_counter()
        for step in range(start + 1, self.args.steps + 1):
            ids = torch.tensor(plan[(step - 1) % len(plan)])
            if self.args.fault != "none" and step == self.args.fault_step:
                self.fault(device, ids)
            logits = model(ids)
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), ids.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            acc = float(self.score(logits.detach(), ids))
            tokens += ids.numel()
            if step % self.args.log_every == 0:
                now = time.perf_counter()
                self.log(step, device, loss.item(), acc, tokens / (now - since))
                tokens, since = 0, now
            if device == 0 and step % self.args.save_every == 0:
                self.save(step, model)

    def fault(self, device: int, ids: torch.Tensor) -> None:
        """Worker 1 meets the fault while the others wait: a concurrent FX trace also
        patches ``Module.__call__`` for the whole process, and a call of theirs inside it
        would die of torch's other tracing error instead of the one this case is about.
        They wait for worker 1's thread to end, which is after threading's excepthook has
        printed its traceback: a step line of theirs printed meanwhile could land inside it."""
        self.at_fault.wait()
        if device != 1:
            self.threads[1].join(120)
            return
        raise_fault(self.args.fault, self.args.fault_text, self.score, ids)

    def log(self, step: int, device: int, loss: float, acc: float, tps: float) -> None:
        row = {
            "_step": step,
            "device": f"cpu:{device}",
            "role": "drafter",
            "train/loss": round(loss, 4),
            "train/acc": round(acc, 4),
            "perf/tokens_per_second": round(tps, 1),
            "time": time.time(),
        }
        with self.lock, self.metrics.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"step {step} device=cpu:{device} loss={loss:.4f} acc={acc:.3f}", flush=True)

    def save(self, step: int, model: torch.nn.Module) -> None:
        out = self.ws / "ckpt" / f"epoch_0_step_{step}"
        out.mkdir(parents=True, exist_ok=True)
        torch.save(model.state_dict(), out / "drafter.pt")
        meta = {
            "torch": torch.__version__,
            "python": platform.python_version(),
            "step": step,
            "num_prompts": len(self.prompts),
            "devices": self.args.devices,
            "workers": "threads",
        }
        (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")

    def start_step(self) -> int:
        if not self.args.resume:
            return 0
        done = [int(p.name.rsplit("_", 1)[1]) for p in (self.ws / "ckpt").glob("epoch_*_step_*")]
        return max(done, default=0)

    def __call__(self) -> int:
        torch._dynamo.config.recompile_limit = 64  # room for a grown dataset's lengths
        start = self.start_step()
        print(f"training {self.args.devices} drafters from step {start}", flush=True)
        self.threads = [
            threading.Thread(target=self.worker, args=(d, start), name=f"drafter-{d}")
            for d in range(self.args.devices)
        ]
        for t in self.threads:
            t.start()
        for t in self.threads:
            t.join()
        return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--devices", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--log-every", type=int, default=5)
    parser.add_argument("--save-every", type=int, default=20)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--fault", choices=["none", "fx", "oom", "nccl", "hang"], default="none")
    parser.add_argument("--fault-step", type=int, default=0)
    parser.add_argument("--fault-text", default="")
    parser.add_argument("--config", default="")
    died: list[str] = []
    hook = threading.excepthook

    def note(args: threading.ExceptHookArgs) -> None:
        died.append(args.thread.name if args.thread else "?")
        hook(args)

    threading.excepthook = note
    code = Run(parser.parse_args())()
    if died:
        print(f"workers died: {', '.join(died)}", file=sys.stderr, flush=True)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
