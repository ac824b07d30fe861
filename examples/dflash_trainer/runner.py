"""A run: workspace, PID file, signals, resume, the device workers, a clean stop.

The run stops when the drafters reach ``--steps``, when ``--max-seconds`` pass, or on
SIGTERM; in every one of these cases drafter 0 writes a checkpoint before the run exits
0. A worker that raises is logged with its name and traceback, stops the run and makes
it exit 1 without a checkpoint, as the incident's crashed runs did.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .config import TrainConfig


@contextlib.contextmanager
def pid_file(path: Path) -> Iterator[None]:
    if path.exists():
        text = path.read_text().strip()
        if text.isdigit() and _alive(int(text)):
            raise RuntimeError(f"another trainer (pid {text}) holds {path}")
    path.write_text(f"{os.getpid()}\n")
    try:
        yield
    finally:
        if path.exists() and path.read_text().strip() == str(os.getpid()):
            path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def train(cfg: TrainConfig) -> int:
    """Run training as configured; returns the process exit code (0 ok, 1 failed)."""
    ws = cfg.ws
    ws.checkpoints.mkdir(parents=True, exist_ok=True)
    # Inductor reads this when it first compiles; spawned workers inherit it.
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cfg.cache_dir)
    from .logs import Console, TrainLog

    console, train_log = Console(ws.stdout_log), TrainLog(ws.train_log)
    try:
        with pid_file(ws.pid_file):
            return _train(cfg, console, train_log)
    except Exception:
        console.exception("main thread")
        return 1
    finally:
        console.close()
        train_log.close()


def _train(cfg: TrainConfig, console: Any, train_log: Any) -> int:
    from . import checkpoint, dataset
    from .workers import launch

    prompts = dataset.load(cfg.ws.data)
    lengths = dataset.batch_lengths(prompts, cfg.batch_size)
    data_meta = {
        "path": str(cfg.ws.data),
        "size": len(prompts),
        "lengths": dataset.lengths_of(prompts),
        "md5": checkpoint.md5(cfg.ws.data),
    }
    import torch

    console.say(
        f"dflash trainer pid {os.getpid()}: torch {torch.__version__} "
        f"(git {torch.version.git_version}), triton {checkpoint.triton_version()}, "
        f"workers={cfg.workers}, targets={cfg.targets}, drafters={cfg.drafters}, "
        f"compile_lock={cfg.compile_lock}, compile cache {cfg.cache_dir}"
    )
    console.say(f"dataset {cfg.ws.data}: {len(prompts)} prompts, batch lengths {lengths}")
    for name in cfg.emulations:
        console.say(f"EMULATION ON: {name} (see examples/dflash_trainer/README.md)")
    resumed = None
    if cfg.resume:
        found = checkpoint.steps(cfg.ws)
        if found:
            console.say(f"resuming from {cfg.ws.step_dir(found[-1])}")
            resumed = checkpoint.load(cfg.ws, found[-1])
        else:
            console.say("--resume: no checkpoint found, starting at step 0")
    start = time.monotonic()
    code = launch(cfg, console, train_log, prompts, lengths, data_meta, resumed, _install_stop)
    console.say(f"run ended after {time.monotonic() - start:.1f}s with exit code {code}")
    return code


def _install_stop(stop: Any, console: Any) -> None:
    """SIGTERM (and SIGINT) ask for a clean stop: finish the step, checkpoint, exit 0."""

    def handler(signum: int, _frame: object) -> None:
        console.say(f"{signal.Signals(signum).name}: stopping after the current step")
        stop.set()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
