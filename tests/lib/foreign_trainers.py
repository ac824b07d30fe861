"""Workspaces of trainers other than the reference one, for the diagnosis tests (a pytest
plugin).

Each real trainer runs once per session, on CPU, on a tiny randomly initialised model whose
config is built in code (nothing is downloaded), the way a user runs it: its training
script is the workspace's ``train.py`` (tests/lib/foreign/), started by the workspace's
``launch.sh``, stdout and stderr appended to ``train.log``. Broken cases are copies of a
good run (``shutil.copytree``) broken afterwards, or a resumed run of such a copy.

Trainers that cannot run here (SpecForge's DFlash trainer needs CUDA and FSDP; torchtune
is not installed) are written by tests/lib/foreign/written_layouts.py in the layout and line
format their public source writes, as that module's docstring says line by line.

A workspace whose good state must be the baseline of a later run carries the snapshot
taken before that run (``Workspace.state``): the CLI stores baselines under
``XDG_STATE_HOME``, which each test gets its own copy of (``Workspace.state_for``).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.lib.need import need
from tests.lib.torch_error_texts import (
    CUDA_OOM,
    CUDA_OOM_MESSAGE,
    FX_NESTED_TRACE,
    NCCL_WATCHDOG_TIMEOUT,
    RECOMPILE_LIMIT,
)

FOREIGN = Path(__file__).resolve().parent / "foreign"
REPO = FOREIGN.parents[1]
CLI = Path(sys.executable).with_name("dflash-doctor")
VOCAB = 128
# A worker dies at this step of a resumed threads run (it resumes from step 40).
FAULT_STEP = 50


def offline_env(**extra: str) -> dict[str, str]:
    """The environment a trainer or the CLI runs in: nothing reaches the Hugging Face hub,
    and nothing is written into the user's home."""
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


@dataclass(frozen=True)
class Workspace:
    """A foreign trainer's workspace ``ws``, never changed after its fixture made it.

    ``state`` holds the snapshot ``good``, taken of ``live`` (a fixed path, the same for
    every test of a session) holding a copy of the good state, or of ``ws`` itself where
    ``live`` is None. Tests run one at a time: each checks the good state out at ``live``
    anew, so one snapshot serves every test that breaks a copy."""

    ws: Path
    state: Path | None = None
    live: Path | None = None

    def state_for(self, tmp_path: Path) -> Path:
        """A test's own copy of the state directory (the CLI writes sessions there)."""
        dest = tmp_path / "xdg-state"
        if self.state is not None:
            shutil.copytree(self.state, dest)
        else:
            dest.mkdir()
        return dest

    def checkout(self, tmp_path: Path) -> tuple[Path, Path]:
        """The good state at ``live`` (copied anew, mtimes kept) and the test's state."""
        assert self.live is not None, "this workspace has no snapshot of a live copy"
        shutil.rmtree(self.live, ignore_errors=True)
        shutil.copytree(self.ws, self.live, symlinks=True)
        return self.live, self.state_for(tmp_path)


def with_snapshot(tmp_path_factory: pytest.TempPathFactory, ws: Path, name: str) -> Workspace:
    """``ws`` with the snapshot ``good`` of its copy at a fixed live path."""
    root = tmp_path_factory.mktemp(f"{name}-live")
    live, state = root / "ws", root / "xdg-state"
    shutil.copytree(ws, live, symlinks=True)
    snapshot(live, state)
    return Workspace(ws, state, live)


def write_prompts(path: Path, lengths: list[int], per_length: int, seed: int) -> None:
    """Token-id prompts, ``per_length`` of each length: a user's tokenised dataset."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        for length in lengths:
            for _ in range(per_length):
                ids = [rng.randrange(VOCAB) for _ in range(length)]
                fh.write(json.dumps({"input_ids": ids}) + "\n")


def write_launcher(ws: Path, before: str = "") -> None:
    """The workspace's launch file: the trainer's script under this interpreter, its
    console appended to ``train.log`` (a resumed run adds to the same log)."""
    lines = ["#!/bin/sh", "# launch file of the training run", 'cd "$(dirname "$0")"']
    if before:
        lines.append(before)
    lines.append(f'exec {sys.executable} train.py "$@" >> train.log 2>&1')
    (ws / "launch.sh").write_text("\n".join(lines) + "\n")
    (ws / "launch.sh").chmod(0o755)


def gloo_workspace(ws: Path, *exports: str) -> Path:
    """A new workspace ``ws`` running tests/lib/foreign/gloo_train.py under torchrun (two
    ranks on gloo), its launch file exporting ``exports`` (``NAME=value`` lines) before
    it; the launch file's path."""
    ws.mkdir()
    shutil.copy(FOREIGN / "gloo_train.py", ws / "train.py")
    torchrun = Path(sys.executable).parent / "torchrun"
    lines = ["#!/bin/sh", "# launch file of the training run", 'cd "$(dirname "$0")"']
    lines += [f"export {e}" for e in ("OMP_NUM_THREADS=1", *exports)]
    lines.append(f'exec {torchrun} --standalone --nproc-per-node 2 train.py "$@" >> train.log 2>&1')
    (ws / "launch.sh").write_text("\n".join(lines) + "\n")
    return ws / "launch.sh"


def start_in_background(script: str, ws: Path, *args: str) -> subprocess.Popen[bytes]:
    """tests/lib/foreign/``script`` copied into the new workspace ``ws`` as its
    ``train.py``, started by its launch file (one intra-op thread) with ``args``, in the
    background, its console going to ``train.log``."""
    ws.mkdir()
    shutil.copy(FOREIGN / script, ws / "train.py")
    write_launcher(ws, before="export OMP_NUM_THREADS=1")
    return subprocess.Popen(
        ["sh", str(ws / "launch.sh"), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=offline_env(),
    )


def launch(ws: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", str(ws / "launch.sh"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=offline_env(HF_HOME=str(ws.parent / "hf-home")),
    )


def log_tail(ws: Path, chars: int = 3000) -> str:
    return (ws / "train.log").read_text()[-chars:]


def new_workspace(tmp_path_factory: pytest.TempPathFactory, name: str, script: str) -> Path:
    ws = tmp_path_factory.mktemp(name) / "ws"
    ws.mkdir()
    shutil.copy(FOREIGN / script, ws / "train.py")
    return ws


def cli(*args: str, state: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """The real CLI, as a user runs it, with its state under ``state``."""
    return subprocess.run(
        [str(CLI), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=offline_env(XDG_STATE_HOME=str(state)),
    )


def snapshot(ws: Path, state: Path) -> None:
    run = cli(
        "snapshot",
        "--name",
        "good",
        "--target",
        "local",
        "--workspace",
        str(ws),
        "--interpreter",
        sys.executable,
        state=state,
    )
    assert run.returncode == 0, f"snapshot failed (rc {run.returncode}): {run.stderr[-3000:]}"


def _need(module: str, extra: str) -> None:
    need(importlib.util.find_spec(module) is not None, module, f"install the [{extra}] extra")


@pytest.fixture(scope="session")
def hf_workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """transformers.Trainer, 30 steps, a checkpoint every 10 (``out/checkpoint-N/``), the
    launch file saving ``pip freeze`` first, as many users' launch files do."""
    _need("torch", "torch")
    _need("transformers", "foreign")
    ws = new_workspace(tmp_path_factory, "hf", "hf_train.py")
    write_prompts(ws / "data" / "train.jsonl", [32], 64, seed=0)
    write_launcher(ws, before=f"{sys.executable} -m pip freeze > pip_freeze.txt")
    run = launch(ws, "--steps", "30", "--save-steps", "10")
    assert run.returncode == 0, log_tail(ws)
    return with_snapshot(tmp_path_factory, ws, "hf")


@pytest.fixture(scope="session")
def lightning_workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """PyTorch Lightning, 30 steps, CSVLogger and a ModelCheckpoint every 10 steps."""
    _need("torch", "torch")
    _need("lightning", "foreign")
    ws = new_workspace(tmp_path_factory, "lightning", "lightning_train.py")
    write_prompts(ws / "data" / "train.jsonl", [32], 64, seed=0)
    write_launcher(ws)
    run = launch(ws, "--steps", "30", "--save-steps", "10")
    assert run.returncode == 0, log_tail(ws)
    return with_snapshot(tmp_path_factory, ws, "lightning")


@pytest.fixture(scope="session")
def lightning_throughput_workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """PyTorch Lightning, 60 steps, with its ThroughputMonitor callback: metrics.csv holds
    Lightning's own train/items_per_sec (tokens, as its length_fn counts) and
    train/samples_per_sec, every 5 steps."""
    _need("torch", "torch")
    _need("lightning", "foreign")
    # A healthy run is what the tests need: one its own figures show slowed in its last
    # quarter (the suite's other worker took the cores: met once by a clean-clone run,
    # 42k -> 17k items/s, rightly judged insufficient evidence) is trained again.
    for attempt in range(3):
        name = f"lightning-throughput-{attempt}"
        ws = new_workspace(tmp_path_factory, name, "lightning_train.py")
        write_prompts(ws / "data" / "train.jsonl", [32], 64, seed=0)
        write_launcher(ws, before="export OMP_NUM_THREADS=1")
        run = launch(ws, "--steps", "60", "--save-steps", "20", "--throughput-monitor")
        assert run.returncode == 0, log_tail(ws)
        ratio = _held_items_per_sec(ws)
        if ratio >= HELD:
            return Workspace(ws)
    raise AssertionError(f"three Lightning runs slowed on this machine (last: {ratio:.2f}x)")


HELD = 0.85  # the last quarter's median rate against the earlier records' (warm-up left out)


def _held_items_per_sec(ws: Path) -> float:
    """Lightning's own items/s in metrics.csv: the last quarter's median over the earlier
    records' (the first left out), read with the csv module apart from any parser."""
    (metrics,) = ws.glob("lightning_logs/version_*/metrics.csv")
    with metrics.open(newline="") as fh:
        rates = [
            float(r["train/device/items_per_sec"])
            for r in csv.DictReader(fh)
            if r.get("train/device/items_per_sec")
        ]
    quarter = max(3, len(rates) // 4)
    return statistics.median(rates[-quarter:]) / statistics.median(rates[1:-quarter])


@pytest.fixture(scope="session")
def threads_workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """tests/lib/foreign/threads_train.py's good run: three drafter threads, 40 steps,
    checkpoints ``ckpt/epoch_0_step_{20,40}``, 48 prompts of one length."""
    _need("torch", "torch")
    # A good run is what the tests need: one whose own speed fell in its last quarter (the
    # suite's other workers took the cores; a clean-clone run met one, rightly judged a
    # possible drop) is trained again, at most twice.
    for _ in range(3):
        ws = new_workspace(tmp_path_factory, "threads", "threads_train.py")
        write_prompts(ws / "data" / "prompts.jsonl", [32], 48, seed=0)
        write_launcher(ws)
        run = launch(ws, "--steps", "40")
        assert run.returncode == 0, log_tail(ws)
        held = held_rate(ws / "logs" / "metrics.jsonl")
        if held >= HELD:
            return with_snapshot(tmp_path_factory, ws, "threads")
    raise AssertionError(f"three good threaded runs slowed on this machine (last: {held:.2f}x)")


HELD = 0.85  # the devices' summed rate late in the run against earlier (first left out)


def held_rate(log: Path) -> float:
    """The drafters' summed tokens/s in the metrics log, as the judged throughput sums
    its devices: the sum of each device's last-quarter median (at least three records)
    over the sum of its earlier records' medians (the first, warm-up, left out), read
    with ``json`` apart from any parser. One thread of three can lag while the sum holds."""
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    by_device: dict[str, list[float]] = {}
    for row in rows:
        if row.get("role") == "drafter":
            by_device.setdefault(str(row["device"]), []).append(
                float(row["perf/tokens_per_second"])
            )
    late = early = 0.0
    for rates in by_device.values():
        quarter = max(3, len(rates) // 4)
        late += statistics.median(rates[-quarter:])
        early += statistics.median(rates[1:-quarter])
    return late / early


# Twelve lengths the good run never met, two batches of each: past dynamo's recompile
# limit (8) for the one compiled scoring function the three drafter threads share.
CHURN_LENGTHS = list(range(40, 40 + 12 * 4, 4))


@pytest.fixture(scope="session")
def churn_workspace(
    tmp_path_factory: pytest.TempPathFactory, threads_workspace: Workspace
) -> Workspace:
    """The incident's shape, written by another program than the reference trainer: a
    good window to step 40 (the snapshot), the dataset grown by twelve new lengths, a
    resumed run to step 60 whose compiled function meets more shapes than torch's
    recompile limit: torch's own ``hit config.recompile_limit (8)`` warning is in the log."""
    ws = tmp_path_factory.mktemp("churn") / "ws"
    shutil.copytree(threads_workspace.ws, ws, symlinks=True)
    state = ws.parent / "xdg-state"
    snapshot(ws, state)
    write_prompts(ws / "data" / "prompts.jsonl", CHURN_LENGTHS, 8, seed=1)
    run = launch(ws, "--steps", "60", "--resume")
    assert run.returncode == 0, log_tail(ws)
    assert RECOMPILE_LIMIT in (ws / "train.log").read_text(), log_tail(ws)
    return Workspace(ws, state)


def crashed(
    tmp_path_factory: pytest.TempPathFactory,
    good: Workspace,
    name: str,
    last_line: str,
    *flags: str,
) -> Workspace:
    """A copy of the good threads run resumed to step 60, worker ``drafter-1`` ending at
    step 50 as ``flags`` say, its traceback ending in ``last_line``; the run exits
    non-zero. No snapshot: a user diagnoses a crashed run as it is."""
    ws = tmp_path_factory.mktemp(name) / "ws"
    shutil.copytree(good.ws, ws, symlinks=True)
    run = launch(ws, "--steps", "60", "--resume", "--fault-step", str(FAULT_STEP), *flags)
    assert run.returncode == 1, log_tail(ws)
    lines = (ws / "train.log").read_text().splitlines()
    start = lines.index("Exception in thread drafter-1:")
    assert last_line in lines[start:], log_tail(ws)
    return Workspace(ws)


@pytest.fixture(scope="session")
def fx_crash_workspace(
    tmp_path_factory: pytest.TempPathFactory, threads_workspace: Workspace
) -> Workspace:
    """Torch's own FX-tracing error, raised by torch in worker ``drafter-1``."""
    return crashed(
        tmp_path_factory, threads_workspace, "fx-crash", FX_NESTED_TRACE, "--fault", "fx"
    )


@pytest.fixture(scope="session")
def oom_crash_workspace(
    tmp_path_factory: pytest.TempPathFactory, threads_workspace: Workspace
) -> Workspace:
    """``torch.OutOfMemoryError`` with the CUDA caching allocator's text, in a worker."""
    flags = ("--fault", "oom", "--fault-text", CUDA_OOM_MESSAGE)
    return crashed(tmp_path_factory, threads_workspace, "oom-crash", CUDA_OOM, *flags)


# How Python prints the exception the worker waiting on a timed-out collective gets.
NCCL_TIMEOUT_LINE = f"torch.distributed.DistBackendError: {NCCL_WATCHDOG_TIMEOUT}"


@pytest.fixture(scope="session")
def nccl_crash_workspace(
    tmp_path_factory: pytest.TempPathFactory, threads_workspace: Workspace
) -> Workspace:
    """``torch.distributed.DistBackendError`` with the NCCL watchdog's collective-timeout
    text, as the worker waiting on the timed-out collective gets it."""
    flags = ("--fault", "nccl", "--fault-text", NCCL_WATCHDOG_TIMEOUT)
    return crashed(tmp_path_factory, threads_workspace, "nccl-crash", NCCL_TIMEOUT_LINE, *flags)


@pytest.fixture(scope="session")
def written_layouts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Workspace]:
    """SpecForge's and torchtune's layouts, written by tests/lib/foreign/written_layouts.py."""
    _need("torch", "torch")
    _need("transformers", "foreign")
    root = tmp_path_factory.mktemp("written")
    run = subprocess.run(
        [sys.executable, str(FOREIGN / "written_layouts.py"), str(root)],
        capture_output=True,
        text=True,
        timeout=180,
        env=offline_env(HF_HOME=str(root / "hf-home")),
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return {
        "specforge": with_snapshot(tmp_path_factory, root / "specforge", "specforge"),
        "torchtune": Workspace(root / "torchtune"),
    }
