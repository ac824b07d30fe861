"""Parsers that keep the fact when one input is built to break them (issue 24, item 2):
a train-log record nested 60,000 deep, a first record over the layout walk's 64 KB peek,
60,000 distinct thread tracebacks in a console log, and a log whose first lines are NULs
or invalid UTF-8. Each used to cost the whole fact (a segfault, "no training log found",
a result over the 8 MB limit); now the rest of the fact is kept and the cut is said."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.lib.cli import gather
from tests.lib.need import need
from tools.probes import _runner

ROOT = Path(__file__).resolve().parents[2]
STEPS = range(10, 210, 10)
DEEP = 60_000
# The orjson that ships without a depth limit on loads (CVE-2024-27454, fixed in
# 3.9.15): the one this machine's system Python happened to hold when the segfault
# was found.
OLD_ORJSON = "3.8.3"


LOADS_LAST_LINE = "import orjson; orjson.loads(open(sys.argv[1], 'rb').read().split()[-1])"


def rows() -> list[str]:
    return [json.dumps({"step": s, "loss": 2.0 - s / 400, "tokens_per_sec": 1000.0}) for s in STEPS]


def deep_record() -> str:
    return '{"a":' * DEEP + "1" + "}" * DEEP


@pytest.fixture(scope="session")
def old_orjson(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """orjson 3.8.3, installed from PyPI into a folder of its own."""
    where = tmp_path_factory.mktemp("orjson-383")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(where),
            f"orjson=={OLD_ORJSON}",
        ],
        capture_output=True,
        timeout=300,
    )
    need(done.returncode == 0, f"orjson {OLD_ORJSON}", done.stderr.decode(errors="replace")[-300:])
    return where


def python_with(path: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by this interpreter with ``path`` first on its import path."""
    prelude = f"import sys; sys.path[:0] = [{str(path)!r}, {str(ROOT)!r}]\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + code, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_record_60000_deep_is_one_bad_line_where_orjson_would_crash(
    tmp_path: Path, old_orjson: Path
) -> None:
    """orjson before 3.9.15 dies of a 60,000-deep record (the segfault this test first
    saw); the parser leaves such an orjson alone, so the record is one ``too_deep`` line
    and every other record counts."""
    log = tmp_path / "train.jsonl"
    log.write_text("\n".join([*rows(), deep_record()]) + "\n")
    crash = python_with(old_orjson, LOADS_LAST_LINE, str(log))
    assert crash.returncode == -signal.SIGSEGV, (crash.returncode, crash.stderr[-500:])
    summary = python_with(
        old_orjson,
        "import io, json, orjson\n"
        "from tools.parsers import trainlog\n"
        "from tools.parsers._trainlog import values\n"
        "out = trainlog.summarize_log(io.FileIO(sys.argv[1]), workers=1)\n"
        "print(json.dumps([orjson.__version__, values.DECODER, out]))\n",
        str(log),
    )
    assert summary.returncode == 0, summary.stderr[-2000:]
    version, decoder, out = json.loads(summary.stdout)
    assert version == OLD_ORJSON and decoder == "json"
    assert out["records"] == len(STEPS)
    assert out["malformed_by_reason"] == {"too_deep": 1}


@pytest.mark.parametrize(
    ("name", "head"),
    [
        ("metrics.jsonl", json.dumps({"step": 0, "config": "x" * 70_000}) + "\n"),
        ("metrics.jsonl", "\0\0garbage\udcff\n" * 45),
        ("metrics.csv", "\0\0garbage\udcff\n" * 45),
    ],
    ids=["first-record-over-64KB", "jsonl-after-45-binary-lines", "csv-after-45-binary-lines"],
)
def test_a_log_whose_head_is_odd_is_found_and_read(tmp_path: Path, name: str, head: str) -> None:
    """A first record past the layout walk's 64 KB peek, or a head of NULs and invalid
    UTF-8, no longer hides the log: the walk finds it, and every record after is read
    (the binary lines counted as damage, not silently dropped)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    body = (
        ["step,loss,tokens_per_sec", *(f"{s},{2.0 - s / 400},1000.0" for s in STEPS)]
        if name.endswith(".csv")
        else rows()
    )
    data = head.encode("utf-8", "surrogateescape") + ("\n".join(body) + "\n").encode()
    (ws / name).write_bytes(data)
    facts = gather(ws, tmp_path / "state")
    assert [c["path"] for c in facts["layout"]["value"]["train_logs"]] == [str(ws / name)]
    log = facts["trainlog"]
    assert log["error"] is None, log
    binary = head.count("\n") if "\0" in head else 0
    assert log["value"]["records"] == len(STEPS) + (0 if binary else 1)
    assert log["value"]["malformed_by_reason"] == ({"binary": binary} if binary else {})


FX_ERROR = (
    "torch._dynamo.exc.InternalTorchDynamoError: RuntimeError: Detected that you are using"
    " FX to symbolically trace a dynamo-optimized function. This is not supported at the"
    " moment."
)


def test_60000_distinct_thread_tracebacks_cost_their_tail_not_the_fact(tmp_path: Path) -> None:
    """A console log of 60,000 workers each with its own traceback used to make the
    result 17 MB, over the 8 MB limit, and the FX error went with it. Now the FX error is
    counted, the earliest threads are listed, and the rest are counted as not listed."""
    ws = tmp_path / "ws"
    ws.mkdir()
    lines = [
        "Traceback (most recent call last):",
        '  File "train.py", line 9, in <module>',
        FX_ERROR,
    ]
    for i in range(60_000):
        lines += [
            f"Exception in thread worker-{i}:",
            "Traceback (most recent call last):",
            f'  File "w.py", line {i}, in run',
            f"ValueError: bad value {i}",
        ]
    (ws / "train_stdout.log").write_text("\n".join(lines) + "\n")
    facts = gather(ws, tmp_path / "state")
    log = facts["stdoutlog"]
    assert log["error"] is None, log["error"]
    value = log["value"]
    assert value["signatures"]["fx_nested_trace"]["count"] == 1
    assert value["signatures"]["fx_nested_trace"]["first_line"] == 3
    listed = value["thread_exceptions"]
    assert "worker-0 -> ValueError" in listed and "worker-59999 -> ValueError" not in listed
    assert value["not_listed"] == {"thread_exceptions": 60_000 - len(listed)}
    assert value["exception_causes"]["ValueError"]["count"] == 60_000


def test_a_result_over_the_limit_keeps_its_head_and_names_each_cut() -> None:
    """The runner's last resort, for any probe: the list or table holding most of the
    bytes keeps its first half until the result fits, and ``trimmed`` names each cut."""
    value: dict[str, Any] = {
        "first": "the fact that matters",
        "echoes": {f"thread-{i:05d}": "x" * 100 for i in range(20_000)},
    }
    result = {"probe": "p", "ok": True, "value": value, "error": None}
    data = _runner._fitted(result, 500_000)
    assert len(data) <= 500_000
    shipped = json.loads(data)["value"]
    assert shipped["first"] == "the fact that matters"
    kept = list(shipped["echoes"])
    assert kept == [f"thread-{i:05d}" for i in range(len(kept))]
    cuts = shipped["trimmed"]
    assert cuts[0] == {"path": "value['echoes']", "kept": 10_000, "of": 20_000}
    assert cuts[-1]["kept"] == len(kept) and len(cuts) == 3
