"""Crashes are answers, end to end: a real reference-trainer workspace, its good state
snapshotted, then its console log ending the way a crashed run's does, diagnosed with
the real probes. The crash family is the top verdict and the run is "fault found"; the
FX race, whose evidence is torch's FX-trace error, is refuted on every one of them.

The thread tracebacks are printed by Python's own threading.excepthook in a real
interpreter (the OOM one raising torch's own class); the NCCL abort is torch's text
(tests/lib/torch_error_texts.py), which needs GPUs to produce.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.lib import torch_error_texts as texts
from tests.lib.diagnosis import assert_grounded, diagnose, explain, snapshot, statuses
from tests.lib.workspaces import clone

pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.timeout(300)]


def crashed_thread(source: str) -> str:
    """What a real interpreter prints when ``source`` runs in a worker thread that raises."""
    script = textwrap.dedent(
        """
        import threading
        def work():
        {body}
        t = threading.Thread(target=work, name="drafter-3")
        t.start(); t.join()
        """
    ).format(body=textwrap.indent(textwrap.dedent(source), "    "))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert "Exception in thread drafter-3" in run.stderr, run.stderr
    return run.stdout + run.stderr


CRASHES: dict[str, Callable[[], str]] = {
    "thread-valueerror": lambda: crashed_thread('raise ValueError("bad batch 7")'),
    "oom-in-worker": lambda: crashed_thread(
        f"import torch\nraise torch.OutOfMemoryError({texts.CUDA_OOM_MESSAGE!r})"
    ),
    "nccl-watchdog": lambda: "\n".join(texts.NCCL_ABORT_LINES) + "\nAborted (core dumped)\n",
}
STATES = {
    "thread-valueerror": "ValueError raised",
    "oom-in-worker": "a GPU ran out of memory",
    "nccl-watchdog": "a collective operation timed out",
}


def test_each_crash_is_the_top_verdict(good_workspace: Path, tmp_path: Path) -> None:
    """Each crash text at the end of the console log makes a "fault found" with the crash
    family verified first, stating its cause, and the FX race refuted."""
    ws = clone(good_workspace, tmp_path / "ws")
    snapshot(ws)
    console = ws / "checkpoints" / "train_stdout.log"
    good = console.read_text()
    for name, crash in CRASHES.items():
        console.write_text(good + crash())
        state, ledger, report = diagnose(ws)
        top = state.hypotheses[0]
        assert state.verdict == "fault_found", (name, explain(state))
        assert top.kind == "crash_stated" and top.status == "verified", (name, explain(state))
        assert any(STATES[name] in v.sentence for v in top.verdicts), (name, explain(state))
        assert statuses(state)["fx_trace_race"] == {"refuted"}, (name, explain(state))
        assert "crash with a stated cause" in report
        assert_grounded(state, ledger, report)
