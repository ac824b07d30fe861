"""torch's Flight Recorder, read from a real two-rank job: tests/lib/foreign/gloo_train.py
under torchrun (gloo on 127.0.0.1, a group timeout of 8 s), where rank 1 stops calling
``all_reduce`` after step 20. Each step all-reduces the model's two gradients, so rank 1
enqueued collectives 1..40 and rank 0 enqueued the 41st and timed out in it with gloo's
own error. Each rank wrote its ring with torch's own dump function (gloo writes none on
a timeout by itself). The crash family names rank 1 and the op; the dumps are read as
plain data, and a crafted one beside them is refused without running."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_foreign_trainers import diagnose, explain
from tests.lib.foreign_trainers import gloo_workspace, log_tail, offline_env

STEPS_BEFORE_STOP, PARAMS = 20, 2  # nn.Linear: weight and bias, one all_reduce each
LAST_OF_RANK_1 = STEPS_BEFORE_STOP * PARAMS


class Boom:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture(scope="module")
def timed_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("fr") / "ws"
    launch = gloo_workspace(
        ws, "TORCH_FR_BUFFER_SIZE=2000", 'TORCH_FR_DUMP_TEMP_FILE="$PWD/fr_trace_rank_"'
    )
    run = subprocess.run(
        [
            "sh",
            str(launch),
            "--stop-after",
            str(STEPS_BEFORE_STOP),
            "--timeout",
            "8",
            "--dump",
        ],
        stdin=subprocess.DEVNULL,
        env=offline_env(),
        timeout=180,
    )
    assert run.returncode != 0, log_tail(ws)
    assert "Timed out waiting 8000ms" in (ws / "train.log").read_text(), log_tail(ws)
    return ws


def test_the_rank_that_fell_behind_and_the_op_are_named(timed_out: Path, tmp_path: Path) -> None:
    """The collective timeout is verified with the first collective rank 1 never enqueued,
    its op, and rank 1 named as the one that fell behind."""
    report = diagnose(timed_out, tmp_path / "state")
    crashes = [h for h in report["hypotheses"] if h["kind"] == "crash_stated"]
    (timeout,) = [h for h in crashes if any("Timed out waiting" in c["text"] for c in h["claims"])]
    assert timeout["status"] == "verified", explain(report)
    said = [c["text"] for c in timeout["claims"]]
    (first,) = [t for t in said if t.startswith("the first collective of process group 0")]
    assert "rank(s) 1 never enqueued (gloo:all_reduce)" in first, first
    assert f"= {LAST_OF_RANK_1 + 1} " in first, first
    assert any(t.startswith("the rank that fell behind = 1 ") for t in said), said


def test_a_crafted_dump_beside_them_is_refused_and_runs_nothing(
    timed_out: Path, tmp_path: Path
) -> None:
    """A dump pickle that would run code is refused as not plain data without running it, a
    FIFO dump is skipped, and the real dumps are still read."""
    ws = tmp_path / "ws"
    shutil.copytree(timed_out, ws)
    marker = tmp_path / "ran"
    (ws / "fr_trace_rank_2").write_bytes(pickle.dumps({"entries": [Boom(marker)]}, protocol=2))
    os.mkfifo(ws / "fr_trace_rank_3")
    report = diagnose(ws, tmp_path / "state")
    assert not marker.exists()
    (fact,) = [f for f in report["facts"] if f["probe"] == "flight_recorder"]
    dumps = {d["rank"]: d for d in fact["value"]["dumps"]}
    assert dumps[2]["error"].startswith("not a plain-data pickle: opcode GLOBAL at byte "), dumps
    assert 3 not in dumps and sorted(dumps) == [0, 1, 2], dumps
    assert fact["value"]["first_missing"][0]["not_reached_by"] == [1], fact["value"]
