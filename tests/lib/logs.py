"""Training logs written as programs other than the reference trainer write them."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

from agent.model.facts import Fact, Ledger
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


def fact_of(path: Path, ledger: Ledger) -> Fact:
    with io.FileIO(str(path), "r") as f:
        value: Any = trainlog.summarize_log(f)
    return ledger.append(Fact(probe="trainlog", target="local", value=value))
