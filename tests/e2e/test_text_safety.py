"""Text UTF-8 cannot hold, in what the doctor reads (issue 24, item 1): a ``\\ud800`` escape
in a train-log line, a key, a checkpoint's ``meta.json`` or ``trainer_state.json``; a file
name that is not UTF-8 where the layout walk reaches; a workspace path holding one. Each
used to cost every fact (a ``PydanticSerializationError`` traceback, exit 1). Now the one
string is escaped where it stands (``\\ud800``, a name's byte as ``\\xff``), every fact is
kept, and ``facts``, ``diagnose`` and ``health`` run to their end, through the real CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.lib.cli import gather, run_cli
from tests.lib.probe_workspace import write_run


def strings(value: Any) -> list[str]:
    """Every string a JSON value holds, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *strings(v)]]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def text(fact: dict[str, Any]) -> str:
    return "\n".join(strings(fact["value"]))


def test_a_lone_surrogate_in_a_log_value_is_escaped_and_the_log_kept(tmp_path: Path) -> None:
    """A lone surrogate in a train-log value is kept escaped, and neither the train-log fact
    nor the checkpoints fact is lost to it."""
    write_run(tmp_path / "ws", '{"step": 800, "note": "\\ud800x"}')
    facts = gather(tmp_path / "ws", tmp_path / "state")
    assert facts["trainlog"]["error"] is None, facts["trainlog"]
    assert "\\ud800x" in text(facts["trainlog"])
    assert facts["checkpoints"]["error"] is None


def test_a_lone_surrogate_in_a_key_is_escaped(tmp_path: Path) -> None:
    """A lone surrogate in a train-log record's key is kept, escaped, in the fact."""
    write_run(tmp_path / "ws", '{"step": 800, "\\udfff": 1}')
    facts = gather(tmp_path / "ws", tmp_path / "state")
    assert "\\udfff" in text(facts["trainlog"])


@pytest.mark.parametrize("name", ["meta.json", "trainer_state.json"])
def test_a_lone_surrogate_in_checkpoint_metadata_is_escaped(tmp_path: Path, name: str) -> None:
    """A lone surrogate in a checkpoint's ``meta.json`` or ``trainer_state.json`` is kept
    escaped, and the checkpoints fact still comes back."""
    write_run(tmp_path / "ws")
    step = tmp_path / "ws" / "checkpoints" / "step_200"
    (step / "meta.json").unlink()
    (step / name).write_text('{"global_step": 200, "torch": "2.13.0", "note": "a\\ud83dz"}')
    facts = gather(tmp_path / "ws", tmp_path / "state")
    assert facts["checkpoints"]["error"] is None, facts["checkpoints"]
    assert "a\\ud83dz" in text(facts["checkpoints"])


def test_a_file_name_that_is_not_utf8_is_named_with_its_byte(tmp_path: Path) -> None:
    """A file name that is not UTF-8 is named with its byte escaped, and the train log
    beside it is still read."""
    write_run(tmp_path / "ws")
    odd = os.path.join(bytes(tmp_path / "ws" / "checkpoints"), b"n\xff.txt")
    os.close(os.open(odd, os.O_CREAT))
    facts = gather(tmp_path / "ws", tmp_path / "state")
    assert "n\\xff.txt" in text(facts["layout"]) + text(facts["checkpoints"])
    assert facts["trainlog"]["error"] is None


def test_a_workspace_path_that_is_not_utf8_is_read(tmp_path: Path) -> None:
    """A workspace whose path is not UTF-8 is read, and the fact names the path with its
    bytes escaped."""
    ws = os.path.join(bytes(tmp_path), b"runs-\xe9t\xe9")
    write_run(Path(os.fsdecode(ws)))
    facts = gather(ws, tmp_path / "state")
    assert facts["trainlog"]["error"] is None, facts["trainlog"]
    assert "runs-\\xe9t\\xe9" in text(facts["trainlog"])


def test_diagnose_and_health_of_a_workspace_whose_path_is_not_utf8(tmp_path: Path) -> None:
    """The path goes to the target as its bytes; what the controller writes (session,
    ledger, transcript, health history, reports) holds it escaped and reads it back."""
    ws = os.path.join(bytes(tmp_path), b"runs-\xe9t\xe9")
    write_run(Path(os.fsdecode(ws)))
    state, where = tmp_path / "state", ("--target", "local", "--workspace", ws)
    diagnosed = run_cli("diagnose", *where, "--non-interactive", "--json", state=state)
    assert b"Traceback" not in diagnosed.stderr, diagnosed.stderr[-3000:]
    assert json.loads(diagnosed.stdout)["verdict"]
    (session,) = state.glob("dflash-doctor/sessions/*/session.json")
    assert json.loads(session.read_text())["spec"]["workspace"] == os.fsdecode(ws)
    for _ in range(2):  # the second reads the first's history back
        health = run_cli("health", *where, "--format", "json", state=state)
        assert b"Traceback" not in health.stderr, health.stderr[-3000:]
        assert health.returncode in (0, 1), health.stderr[-3000:]


def test_diagnose_and_health_run_to_their_end(tmp_path: Path) -> None:
    """With surrogates in the log and an undecodable file name, ``diagnose`` and ``health``
    run to a verdict with no traceback, and health can check the target."""
    write_run(tmp_path / "ws", '{"step": 800, "note": "\\ud800x", "\\udc80": 2}')
    os.close(os.open(os.path.join(bytes(tmp_path / "ws"), b"odd-\x80"), os.O_CREAT))
    state = tmp_path / "state"
    where = ("--target", "local", "--workspace", str(tmp_path / "ws"))
    diagnosed = run_cli("diagnose", *where, "--non-interactive", "--json", state=state)
    assert b"Traceback" not in diagnosed.stderr, diagnosed.stderr[-3000:]
    assert diagnosed.returncode in (0, 1), diagnosed.stderr[-3000:]
    assert json.loads(diagnosed.stdout)["verdict"]
    health = run_cli("health", *where, "--format", "json", state=state)
    assert b"Traceback" not in health.stderr, health.stderr[-3000:]
    assert health.returncode in (0, 1), health.stderr[-3000:]  # 2: could not check
    (checked,) = json.loads(health.stdout)["targets"]
    assert checked["status"] in ("healthy", "regressed"), checked


def test_exec_passes_an_argv_word_that_is_not_utf8_as_its_bytes(tmp_path: Path) -> None:
    """``exec -- printf %s $'bad\\xff'`` (issue 24, item 6): the bytes reach the command
    and come back exactly; the session's transcript is written and still reads back."""
    state = tmp_path / "state"
    done = run_cli("exec", "--target", "local", "--", "printf", "%s", b"bad\xff", state=state)
    assert b"Traceback" not in done.stderr, done.stderr[-3000:]
    assert (done.returncode, done.stdout) == (0, b"bad\xff"), done.stderr[-3000:]
    (transcript,) = state.glob("dflash-doctor/sessions/*/transcript.jsonl")
    events = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert any(e.get("argv") == ["printf", "%s", os.fsdecode(b"bad\xff")] for e in events), events
