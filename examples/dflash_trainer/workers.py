"""``--workers threads`` (one thread per device, as in the incident) and ``--workers
processes`` (one spawned process per device: torch's process-global tracing flags are no
longer shared, which is the process-isolation fix).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from . import dataset, faults
from .channels import Channels, process_channels, thread_channels
from .compilation import CompileGate
from .config import TrainConfig
from .devices import DeviceEnv, DrafterDevice, TargetDevice, device_names, guarded
from .logs import Console, TrainLog
from .models import Drafter

POLL_S = 0.2


def _prepare_process(cfg: TrainConfig, console: Console, devices: int) -> None:
    """Process-wide torch settings; run once per process before any device exists."""
    console.capture_torch_logs()
    if cfg.emulate_torch211_race:
        console.say(f"EMULATION: {faults.emulate_torch211_race()}")
    _dynamo_settings(cfg)
    cores = os.cpu_count() or 1
    torch.set_num_threads(cfg.intra_op_threads or max(1, cores // devices))


def _dynamo_settings(cfg: TrainConfig) -> None:
    """Apply the run's dynamo settings to the calling thread.

    torch 2.13 keeps dynamo config overrides per thread (a ContextVar): a value set in
    the main thread does not reach worker threads, so every worker sets its own.
    """
    faults.set_nested_fx_trace(cfg.nested_fx_trace)
    if cfg.recompile_limit is not None:
        torch._dynamo.config.recompile_limit = cfg.recompile_limit


def _with_settings(cfg: TrainConfig, work: Callable[[], None]) -> Callable[[], None]:
    def body() -> None:
        _dynamo_settings(cfg)
        work()

    return body


def _after_build(
    cfg: TrainConfig, console: Console, devices: Sequence[Any], lengths: list[int]
) -> None:
    for device in devices:
        device.masks.prebuild(lengths, drafter=isinstance(device, DrafterDevice))
    if cfg.monkeypatch_fx_check:
        original = faults.ineffective_fx_monkeypatch()
        console.say(
            "patched torch.fx._symbolic_trace.is_fx_symbolic_tracing to always return False "
            f"(compiled wrappers already hold {original.__module__}.{original.__qualname__})"
        )
    if cfg.compile_lock:
        console.say(f"compile lock: serial warm-up of {len(devices)} device(s) x {lengths}")
        for device in devices:
            device.warm_up(lengths)
        console.say("compile lock: warm-up done")


def _n_params(cfg: TrainConfig) -> int:
    return sum(p.numel() for p in Drafter(cfg.model).parameters())


def launch(
    cfg: TrainConfig,
    console: Console,
    train_log: TrainLog,
    prompts: Sequence[dataset.Prompt],
    lengths: list[int],
    data_meta: dict[str, Any],
    resumed: dict[str, Any] | None,
    install_stop: Callable[[Any, Console], None],
) -> int:
    first_batch = (int(resumed["metadata"]["step"]) if resumed else 0) * cfg.drafters
    if cfg.workers == "threads":
        return _threads(cfg, console, train_log, prompts, lengths, data_meta, resumed,
                        first_batch, install_stop)  # fmt: skip
    return _processes(cfg, console, data_meta, resumed, first_batch, install_stop)


def _threads(
    cfg: TrainConfig,
    console: Console,
    train_log: TrainLog,
    prompts: Sequence[dataset.Prompt],
    lengths: list[int],
    data_meta: dict[str, Any],
    resumed: dict[str, Any] | None,
    first_batch: int,
    install_stop: Callable[[Any, Console], None],
) -> int:
    _prepare_process(cfg, console, devices=1)
    env = DeviceEnv(cfg, console, train_log, CompileGate() if cfg.compile_lock else None)
    target_names, drafter_names = device_names(cfg)
    targets = [TargetDevice(i, n, env) for i, n in enumerate(target_names)]
    drafters = [DrafterDevice(i, n, env, resumed) for i, n in enumerate(drafter_names)]
    for d in drafters:
        d.dataset_meta = data_meta
    ch = thread_channels(cfg.drafters, _n_params(cfg))
    install_stop(ch.stop, console)
    _after_build(cfg, console, [*targets, *drafters], lengths)
    workers = [
        threading.Thread(
            target=guarded(_with_settings(cfg, work), ch, console), name=name, daemon=True
        )
        for name, work in [
            *((t.thread_name, t.run_on(ch, prompts, first_batch)) for t in targets),
            *((d.thread_name, d.run_on(ch)) for d in drafters),
        ]
    ]
    for w in workers:
        w.start()
    return _supervise(cfg, ch, console, workers[len(targets) :], workers)


def _supervise(
    cfg: TrainConfig, ch: Channels, console: Console, drafters: list[Any], everyone: list[Any]
) -> int:
    """Wait for the drafters (they own the step count), then stop the targets."""
    deadline = None if cfg.max_seconds is None else time.monotonic() + cfg.max_seconds
    while any(w.is_alive() for w in drafters):
        for w in drafters:
            w.join(POLL_S)
        if deadline is not None and time.monotonic() > deadline and not ch.stop.is_set():
            console.say(f"--max-seconds {cfg.max_seconds} reached: stopping")
            ch.stop.set()
        if any(_crashed(w) for w in everyone):
            ch.fail()
    ch.stop.set()
    for w in everyone:
        w.join()
    if any(_crashed(w) for w in everyone):
        ch.failed.set()
    return 1 if ch.failed.is_set() else 0


def _crashed(worker: Any) -> bool:
    """A process that died without reporting (killed, segfault) is a failure too."""
    code = getattr(worker, "exitcode", None)
    return code is not None and code != 0


def _processes(
    cfg: TrainConfig,
    console: Console,
    data_meta: dict[str, Any],
    resumed: dict[str, Any] | None,
    first_batch: int,
    install_stop: Callable[[Any, Console], None],
) -> int:
    ctx = torch.multiprocessing.get_context("spawn")
    ch = process_channels(ctx, cfg.drafters, _n_params(cfg))
    install_stop(ch.stop, console)
    target_names, drafter_names = device_names(cfg)
    roles = [("target", i, n) for i, n in enumerate(target_names)]
    roles += [("drafter", i, n) for i, n in enumerate(drafter_names)]
    procs = [
        ctx.Process(
            target=_process_main,
            args=(role, rank, name, cfg, ch, resumed, first_batch, data_meta),
            name=f"{role}-{name}",
        )
        for role, rank, name in roles
    ]
    for p in procs:
        p.start()
    console.say(f"started {len(procs)} worker processes: " + ", ".join(
        f"{p.name} pid {p.pid}" for p in procs))  # fmt: skip
    return _supervise(cfg, ch, console, procs[cfg.targets :], procs)


def _process_main(
    role: str,
    rank: int,
    name: str,
    cfg: TrainConfig,
    ch: Channels,
    resumed: dict[str, Any] | None,
    first_batch: int,
    data_meta: dict[str, Any],
) -> None:
    """One device in its own process: its own dynamo state, tracing flags and compiles."""
    # The parent decides when to stop; a process-group signal only asks for that too.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: ch.stop.set())
    ws = cfg.ws
    console, train_log = Console(ws.stdout_log), TrainLog(ws.train_log)
    _prepare_process(cfg, console, devices=cfg.targets + cfg.drafters)
    prompts = dataset.load(ws.data)
    lengths = dataset.batch_lengths(prompts, cfg.batch_size)
    env = DeviceEnv(cfg, console, train_log, CompileGate() if cfg.compile_lock else None)
    device: TargetDevice | DrafterDevice
    if role == "target":
        device = TargetDevice(rank, name, env)
        work = device.run_on(ch, prompts, first_batch)
    else:
        device = DrafterDevice(rank, name, env, resumed)
        device.dataset_meta = data_meta
        work = device.run_on(ch)
    _after_build(cfg, console, [device], lengths)
    guarded(work, ch, console, what="process")()
    if ch.failed.is_set():
        raise SystemExit(1)
