"""Training logs written as programs other than the reference trainer write them."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

from agent.model.facts import Fact, Ledger
from tests.lib import torch_error_texts as texts
from tools.parsers import trainlog


def incident_log(path: Path, *, drop: bool = True) -> None:
    """The incident, as another program logs it: three drafter devices under
    ``perf/tokens_per_second`` keyed by ``_step``; ~4,270 tok/s each (12,800 together)
    to step 690, then the resume after the dataset grew, ~1,430 each (4,300)."""
    rng = random.Random(7)
    lines = []
    for step in range(10, 1201, 10):
        slow = drop and step > 690
        for device in range(3):
            tok = (1430 if slow else 4270) * rng.uniform(0.95, 1.05)
            lines.append({"_step": step, "device": f"cuda:{device}", "perf/tokens_per_second": tok})
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))


def incident_workspace(root: Path) -> Path:
    """Three drafter devices under ``perf/tokens_per_second`` (12,800 tok/s together to
    step 690, 4,300 after the resume), the FX error ending two drafter threads in the
    console log, a checkpoint at 690 recording 128 prompts, and 144 prompts now."""
    ws = root / "run"
    (ws / "logs").mkdir(parents=True)
    incident_log(ws / "logs" / "metrics.jsonl")
    lines = [f"step {i} loss 2.0" for i in range(1, 21)]
    lines.append("resuming from checkpoints/epoch_0_step_690")
    for thread in ("drafter-1", "drafter-2"):
        lines += texts.thread_crash(thread, texts.FX_NESTED_TRACE)
    (ws / "train.log").write_text("\n".join(lines) + "\n")
    (ws / "data").mkdir()
    prompts = [{"prompt": "x" * (64 if i < 128 else 80)} for i in range(144)]
    (ws / "data" / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in prompts))
    ckpt = ws / "checkpoints" / "epoch_0_step_690"
    ckpt.mkdir(parents=True)
    (ckpt / "meta.json").write_text(json.dumps({"torch": "2.11.0+cu130", "dataset_size": 128}))
    return ws


def fact_of(path: Path, ledger: Ledger) -> Fact:
    with io.FileIO(str(path), "r") as f:
        value: Any = trainlog.summarize_log(f)
    return ledger.append(Fact(probe="trainlog", target="local", value=value))
