"""The run's configuration and the workspace layout the incident had.

A workspace looks like the incident's ``/workspace``::

    WS/
      data/prompts.jsonl        the dataset (``dataset`` subcommand)
      train_dflash.py           optional launcher (``init``); its md5 is recorded
      train.pid                 while a run is alive
      compile_cache/            TORCHINDUCTOR_CACHE_DIR of the run
      checkpoints/
        step_N/                 drafter.pt, optimizer.pt, metadata.json
        train_log.jsonl         one JSON line per device and log interval
        train_stdout.log        everything the run printed, tracebacks included
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

WorkerKind = Literal["threads", "processes"]
DeviceKind = Literal["cpu", "cuda"]
NestedFxTrace = Literal["error", "eager"]


@dataclass(frozen=True)
class Workspace:
    root: Path

    @property
    def data(self) -> Path:
        return self.root / "data" / "prompts.jsonl"

    @property
    def launcher(self) -> Path:
        return self.root / "train_dflash.py"

    @property
    def pid_file(self) -> Path:
        return self.root / "train.pid"

    @property
    def compile_cache(self) -> Path:
        return self.root / "compile_cache"

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def train_log(self) -> Path:
        return self.checkpoints / "train_log.jsonl"

    @property
    def stdout_log(self) -> Path:
        return self.checkpoints / "train_stdout.log"

    def step_dir(self, step: int) -> Path:
        return self.checkpoints / f"step_{step}"


@dataclass(frozen=True)
class ModelConfig:
    vocab: int = 256
    dim: int = 64
    heads: int = 4
    target_layers: int = 2
    drafter_layers: int = 1
    block_size: int = 16
    max_len: int = 1024


@dataclass(frozen=True)
class TrainConfig:
    """Everything a run depends on; recorded verbatim in each checkpoint's metadata."""

    workspace: Path
    targets: int = 2
    drafters: int = 1
    workers: WorkerKind = "threads"
    device: DeviceKind = "cpu"
    batch_size: int = 8
    steps: int = 200
    max_seconds: float | None = None
    lr: float = 3e-3
    seed: int = 0
    log_every: int = 5
    save_every: int = 100
    resume: bool = False
    compile_lock: bool = False
    intra_op_threads: int | None = None
    compile_cache: Path | None = None
    recompile_limit: int | None = None
    # Failure families, each documented in README.md.
    emulate_torch211_race: bool = False
    nested_fx_trace: NestedFxTrace = "error"
    monkeypatch_fx_check: bool = False
    record_torch_version: str | None = None
    model: ModelConfig = field(default_factory=ModelConfig)

    @property
    def ws(self) -> Workspace:
        return Workspace(self.workspace)

    @property
    def cache_dir(self) -> Path:
        return self.compile_cache or self.ws.compile_cache

    @property
    def emulations(self) -> list[str]:
        """Names of the emulated (not naturally occurring) behaviours this run has on."""
        names = []
        if self.emulate_torch211_race:
            names.append("torch211_fx_race")
        if self.record_torch_version:
            names.append("recorded_torch_version")
        return names

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["workspace"] = str(self.workspace)
        out["compile_cache"] = str(self.cache_dir)
        return out
