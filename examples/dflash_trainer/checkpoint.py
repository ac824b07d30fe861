"""``checkpoints/step_N/``: drafter weights, optimizer state and a metadata record.

The metadata is what an investigator needs to tell the run that wrote a checkpoint from
the machine as it is now: torch/triton versions and git hash, the config, the dataset's
size and lengths, and md5s of the training script and the trainer's sources.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import torch

from .config import TrainConfig, Workspace

PACKAGE_DIR = Path(__file__).resolve().parent
FILES = ("drafter.pt", "optimizer.pt", "metadata.json")


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def triton_version() -> str | None:
    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        return None


def entry_script() -> Path:
    """The file this run was started from: the launcher, or the package's ``__main__``."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return Path(path).resolve() if path else PACKAGE_DIR / "__main__.py"


def metadata(
    cfg: TrainConfig, step: int, dataset: dict[str, Any], tok_s: float | None
) -> dict[str, Any]:
    script = entry_script()
    torch_version = cfg.record_torch_version or torch.__version__
    return {
        "step": step,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "torch": {"version": torch_version, "git_version": torch.version.git_version},
        "triton": {"version": triton_version()},
        "python": platform.python_version(),
        "host": platform.node(),
        "config": cfg.to_json(),
        "dataset": dataset,
        "script": {"path": str(script), "md5": md5(script) if script.exists() else None},
        "sources": {p.name: md5(p) for p in sorted(PACKAGE_DIR.glob("*.py"))},
        "tokens_per_s": tok_s,
        "emulations": cfg.emulations,
    }


def save(ws: Workspace, step: int, state: dict[str, Any], meta: dict[str, Any]) -> Path:
    """Write into ``step_N.tmp`` then rename, so a crash never leaves half a step_N."""
    final = ws.step_dir(step)
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    torch.save(state["drafter"], tmp / "drafter.pt")
    torch.save(state["optimizer"], tmp / "optimizer.pt")
    (tmp / "metadata.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    return final


def steps(ws: Workspace) -> list[int]:
    found = []
    for d in ws.checkpoints.glob("step_*"):
        suffix = d.name.removeprefix("step_")
        if d.is_dir() and suffix.isdigit() and (d / "metadata.json").exists():
            found.append(int(suffix))
    return sorted(found)


def load(ws: Workspace, step: int) -> dict[str, Any]:
    """Load a checkpoint; a truncated file fails here with torch's own error."""
    d = ws.step_dir(step)
    return {
        "drafter": torch.load(d / "drafter.pt", weights_only=True),
        "optimizer": torch.load(d / "optimizer.pt", weights_only=True),
        "metadata": json.loads((d / "metadata.json").read_text()),
    }
