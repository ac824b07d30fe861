"""torch's own records in a console, written by the real torch: a worker thread calls a
function compiled with ``dynamic=False`` on twelve lengths in turn (4 to 15) under
``TORCH_LOGS=recompiles,graph_breaks``; the function branches on a tensor's value (a
graph break). What the console reader must find follows from what the script did and
dynamo's documented rules, not from the reader: one recompile per new length until the
limit of 8 entries (the ninth length's attempt is logged too: guards.py logs the reason
before convert_frame.py checks the limit), the limit's warning at that ninth length with
its function and last reason, nothing after it (the lengths past it run eager), and the
break at the branch's line."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agent.model.claims import check
from agent.model.facts import Fact, Ledger
from agent.rules.base import Evidence
from agent.rules.eager_fallback import SilentEagerFallback
from tools.parsers import stdoutlog
from tools.parsers._torchlogs import TorchLogs
from tools.probes import torch_trace
from tools.probes._common import Context

SCRIPT = textwrap.dedent(
    """\
    import threading
    import torch

    def score(x):
        y = x.sin()
        if y.sum() > 0:
            y = y * 2
        return y.cos().sum()

    f = torch.compile(score, backend="eager", dynamic=False)

    def work():
        for n in range(4, 16):
            f(torch.randn(n))

    t = threading.Thread(target=work, name="worker-0")
    t.start()
    t.join()
    """
)
DEF_LINE, BRANCH_LINE = 4, 6
LENGTHS = list(range(4, 16))
LIMIT = 8  # torch 2.13's default recompile_limit (tests/e2e/test_torch_build_behaviour.py)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("torch-logs")
    (d / "train.py").write_text(SCRIPT)
    out = d / "train.log"
    with out.open("wb") as fh:
        run = subprocess.run(
            [sys.executable, "train.py"],
            cwd=d,
            stdout=fh,
            stderr=subprocess.STDOUT,
            env={
                "TORCH_LOGS": "recompiles,graph_breaks",
                "TORCH_TRACE": str(d / "trace"),
                "PATH": "/usr/bin:/bin",
            },
            timeout=240,
        )
    assert run.returncode == 0, out.read_text()[-3000:]
    return out


def read(path: Path) -> dict[str, Any]:
    with io.FileIO(str(path), "r") as f:
        logs: dict[str, Any] = stdoutlog.scan(f)["torch_logs"]
    return logs


def test_each_new_length_is_a_recompile_with_its_guard_failure(console: Path) -> None:
    """Each new length up to the limit is a recompile of the compiled function, at its
    definition, with the size it changed from and to and the console line of each guard
    failure."""
    (score,) = [f for f in read(console)["recompiles"]["functions"] if f["function"] == "score"]
    assert (score["file"], score["line"]) == (str(console.parent / "train.py"), DEF_LINE)
    # Lengths 2..8 made entries 1..7 (the first length is the first compile); the ninth
    # found 8 entries: its recompile is logged, then the limit stops it.
    recompiled = LENGTHS[1 : LIMIT + 1]
    assert score["recompiles"] == len(recompiled), score
    assert score["new_sizes"] == {"x[0]": recompiled}, score
    assert [(g["expected"], g["actual"]) for g in score["guard_failures"]] == list(
        zip(LENGTHS[:LIMIT], recompiled, strict=True)
    ), score
    lines = console.read_text().splitlines()
    for g in score["guard_failures"]:
        assert g["reason"] in lines[g["first_line"] - 1], g


def test_the_limit_warning_names_its_function_and_last_reason(console: Path) -> None:
    """The recompile-limit warning is read with its limit, value, function and place, and
    the last guard failure that pushed it over."""
    (hit,) = read(console)["limit_hits"]
    assert (hit["limit"], hit["value"], hit["function"]) == ("recompile_limit", LIMIT, "score")
    assert hit["where"] == f"{console.parent / 'train.py'}:{DEF_LINE}", hit
    ninth = LENGTHS[LIMIT]
    assert hit["last_reason"].endswith(f"expected {ninth - 1}, actual {ninth}"), hit
    assert "hit config.recompile_limit (8)" in console.read_text().splitlines()[hit["line"] - 1]


def test_the_graph_break_is_at_the_branch(console: Path) -> None:
    """The graph break is placed at the data-dependent branch, with its file, line and
    reason."""
    breaks = read(console)["graph_breaks"]
    (branch,) = [b for b in breaks["locations"] if b["line"] == BRANCH_LINE]
    assert branch["file"] == str(console.parent / "train.py"), branch
    assert branch["reason"] == "Data-dependent branching", branch
    assert branch["count"] >= 1


def test_the_reader_gives_the_same_facts_whatever_the_blocks(console: Path) -> None:
    """Fed one line at a time (blocks end anywhere the scan cuts them at a newline), the
    reader keeps the warning's continuation and each recompile's failures together."""
    whole, lines = TorchLogs(), console.read_bytes().splitlines(keepends=True)
    whole.feed(b"".join(lines), 1, 0)
    piecewise, offset = TorchLogs(), 0
    for n, line in enumerate(lines, 1):
        piecewise.feed(line, n, offset)
        offset += len(line)
    assert piecewise.result() == whole.result()


def test_the_structured_trace_records_the_compile_the_limit_stopped(console: Path) -> None:
    """The same run's TORCH_TRACE: eight compiles of ``score`` (entries 0..7) and a ninth
    that failed at the limit, with the guard failure behind it; the eager fallback cites
    that failure."""
    value = torch_trace.collect({"workspace": str(console.parent)}, Context())
    (trace,) = value["traces"]
    (score,) = [f for f in trace["functions"] if f["function"] == "score"]
    assert (score["compiles"], score["recompiles"], score["failed"]) == (LIMIT + 1, LIMIT - 1, 1)
    failure = score["first_failure"]
    assert failure["compile_id"] == f"0/{LIMIT}", failure
    assert failure["fail_reason"] == "Dynamo recompile limit exceeded", failure
    (failed,) = [r for r in trace["compiles"] if r["compile_id"] == f"0/{LIMIT}"]
    ninth = LENGTHS[LIMIT]
    assert failed["guard_failure"].endswith(f"expected {ninth - 1}, actual {ninth}"), failed
    ledger = Ledger()
    fact = ledger.append(Fact(probe="torch_trace", target="local", value=value))
    claims = SilentEagerFallback()._trace_signals(Evidence(ledger=ledger, fact_ids=[fact.id]))
    assert [check(c, ledger).outcome for c in claims] == ["holds"], claims
