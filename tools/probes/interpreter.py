"""Which Python runs the probes, and why that one: the interpreter the doctor was told to
use (``--interpreter``, a profile's ``interpreter``), or the one the discovery preamble
(``tools.interpreter``) chose on the target before any Python started — the running
trainer's, a workspace environment's, the launch file's, a ``python3`` on ``PATH`` that
can import torch — with every candidate it looked at and what it found there.

The preamble hands its choice over in the environment variable ``CHOICE_ENV``: a first
line ``PATH<TAB>WHY``, then one line ``PATH<TAB>SOURCE<TAB>VERDICT`` per candidate.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ._common import Context, TypedDict

NAME = "interpreter"
TIMEOUT = 10.0

CHOICE_ENV = "DFLASH_DOCTOR_PYTHON_CHOICE"


class Candidate(TypedDict):
    path: str
    source: str  # where the preamble found it: a process, a workspace env, PATH…
    verdict: str  # what it found: running trainer, imports torch, cannot import torch…


class InterpreterValue(TypedDict):
    path: str  # what was run: the configured name or the chosen path
    executable: str  # sys.executable of the Python that answered
    discovered: bool  # chosen on the target (True) or given by the user (False)
    chosen_because: str
    candidates: list[Candidate]


VALUE = InterpreterValue


def parse_choice(text: str) -> tuple[str, str, list[Candidate]]:
    """The preamble's hand-over: the chosen path, why, and the candidates."""
    lines = [line for line in text.split("\n") if line]
    path, _, why = (lines[0] if lines else "").partition("\t")
    candidates: list[Candidate] = []
    for line in lines[1:]:
        parts = line.split("\t")
        if len(parts) == 3:
            candidates.append({"path": parts[0], "source": parts[1], "verdict": parts[2]})
    return path, why, candidates


def collect(params: dict[str, Any], ctx: Context) -> InterpreterValue:
    choice = os.environ.get(CHOICE_ENV)
    if choice is not None:
        path, why, candidates = parse_choice(choice)
        return {
            "path": path,
            "executable": sys.executable,
            "discovered": True,
            "chosen_because": why,
            "candidates": candidates,
        }
    return {
        "path": str(params.get("configured") or sys.executable),
        "executable": sys.executable,
        "discovered": False,
        "chosen_because": str(params.get("because") or "configured"),
        "candidates": [],
    }
