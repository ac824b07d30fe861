"""A small, real DFlash-style trainer that reproduces the incident dflash-doctor debugs.

Frozen target models on some (simulated) devices feed hidden states to block-diffusion
drafters on others, one worker per device, each compiling its own
``torch.compile(flex_attention)``. See README.md for the flags and failure families.

Public surface::

    from examples.dflash_trainer import TrainConfig, Workspace, train, main
    from examples.dflash_trainer import generate_dataset, expand_dataset

Importing this package does not import torch; ``train`` does.
"""

from __future__ import annotations

from typing import Any

from .cli import main
from .config import ModelConfig, TrainConfig, Workspace
from .dataset import expand as expand_dataset
from .dataset import generate as generate_dataset

__all__ = [
    "ModelConfig",
    "TrainConfig",
    "Workspace",
    "expand_dataset",
    "generate_dataset",
    "main",
    "train",
]


def train(cfg: TrainConfig) -> int:
    """Run one training run in this process; returns its exit code (see runner.train)."""
    from .runner import train as _train

    result: Any = _train(cfg)
    return int(result)
