"""The fuzz suite, extended to each class of issue 24's findings (tests/e2e/test_fuzz.py
holds the first round): lone surrogates anywhere in a fact, file names that are not
UTF-8, nesting of any depth, first lines of any length, hostile patterns in a profile,
and special files in the state directory. Each property is the contract: the fact is
kept (and written and read back exactly as the ledger does), or the command refuses in
one line with exit 2; never a traceback, never a hang."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agent.model.facts import Fact, Ledger
from tests.lib.cli import SCRIPT
from tools.parsers.trainlog import summarize_log
from tools.probes import checkpoints, layout
from tools.probes._common import Context
from tools.text import writable_json

FAST = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
FEW = settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
RECORDS = "".join(
    json.dumps({"step": s, "loss": 2.0, "tokens_per_sec": 900.0}) + "\n" for s in range(1, 21)
)


def _fresh(tmp_path: Path) -> Path:
    return Path(tempfile.mkdtemp(dir=tmp_path))


# Any code point, lone surrogates included: what a JSON escape in a log can carry.
_any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=30)
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | _any_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_any_text, inner, max_size=3),
    max_leaves=10,
)


@FAST
@given(value=_values)
@example(value={"\ud800": ["\udfff x", {"note": "\ud83d"}]})
def test_any_text_in_a_fact_is_written_and_read_back(tmp_path: Path, value: Any) -> None:
    """A fact holding any string (a lone surrogate too) is appended to the ledger and
    read back from disk equal to what was appended."""
    path = _fresh(tmp_path) / "ledger.jsonl"
    fact = Ledger(path).append(Fact(probe="trainlog", target="local", value=value))
    (reread,) = list(Ledger(path)._facts.values())
    assert reread.value == fact.value == writable_json(value)


_name_bytes = st.binary(min_size=1, max_size=40).filter(
    lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")
)


@FAST
@given(names=st.lists(_name_bytes, min_size=1, max_size=6, unique=True))
@example(names=[b"n\xff.txt", b"step_\xfe10", b"\xed\xa0\x80.jsonl"])
def test_any_file_names_keep_the_layout_walk_and_its_fact(
    tmp_path: Path, names: list[bytes]
) -> None:
    """Names that are not UTF-8, beside a train log: the walk finds the log, and its
    value is writable as a fact."""
    root = _fresh(tmp_path)
    (root / "train.jsonl").write_text(RECORDS)
    for name in names:
        path = os.path.join(os.fsencode(root), name)
        if not os.path.exists(path):
            with open(path, "wb") as fh:
                fh.write(b"x")
    value = layout.discover(str(root))
    assert [c["path"] for c in value["train_logs"]] == [str(root / "train.jsonl")]
    Fact(probe="layout", target="local", value=json.loads(json.dumps(writable_json(value))))


@FAST
@given(
    depth=st.integers(1, 80_000),
    opener=st.sampled_from(['{"a":', "[", '{"k": [', '[{"x":']),
    where=st.integers(0, 20),
)
@example(depth=60_000, opener='{"a":', where=20)
def test_a_record_nested_to_any_depth_costs_at_most_its_own_line(
    tmp_path: Path, depth: int, opener: str, where: int
) -> None:
    """A record nested to any depth among a train log's lines loses at most that line: the
    other records and the last step are still read, and the summary is strict JSON."""
    closer = "".join({"{": "}", "[": "]"}[c] for c in reversed(opener) if c in "{[")
    deep = opener * depth + "1" + closer * depth
    lines = RECORDS.splitlines()
    lines.insert(where, deep)
    path = _fresh(tmp_path) / "train.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with open(path, "rb", buffering=0) as raw:
        out = summarize_log(raw, workers=1)
    assert out["records"] >= 20 and out["steps"]["last"] == 20
    json.dumps(out, allow_nan=False)


@FEW
@given(size=st.integers(60_000, 400_000), head=st.sampled_from(["record", "nul", "garbage"]))
def test_a_first_line_of_any_length_does_not_hide_the_log(
    tmp_path: Path, size: int, head: str
) -> None:
    """A huge first line (a long record, NULs, undecodable bytes) does not stop the layout
    walk from finding the train log."""
    first = {
        "record": json.dumps({"step": 0, "config": "x" * size}),
        "nul": "\0" * size,
        "garbage": "\udcff" * (size // 4),
    }[head]
    root = _fresh(tmp_path)
    (root / "metrics.jsonl").write_bytes(
        (first + "\n" + RECORDS).encode("utf-8", "surrogateescape")
    )
    value = layout.discover(str(root))
    assert [c["path"] for c in value["train_logs"]] == [str(root / "metrics.jsonl")]


_runaway = st.builds(
    lambda atom, inner, tail: f"^({atom}{inner})+{tail}(?P<step>\\d+)$",
    st.sampled_from(["a", "(a|a)", "(a|aa)", "[ab]"]),
    st.sampled_from(["+", "*", "+a*"]),
    st.sampled_from(["", "b", "-"]),
)


@FEW
@given(pattern=_runaway, length=st.integers(26, 60))
def test_any_runaway_checkpoint_pattern_is_abandoned_within_its_bound(
    tmp_path: Path, pattern: str, length: int
) -> None:
    """Nested quantifiers against a name built to defeat them: the checkpoints fact comes
    back within the bound (a second a name, the first overrun abandons the pattern)."""
    root = _fresh(tmp_path)
    (root / "step_10").mkdir()
    (root / ("a" * length + "!")).mkdir()
    started = time.monotonic()
    value = checkpoints.collect({"path": str(root), "pattern": pattern}, Context())
    assert time.monotonic() - started < 10
    abandoned = value["pattern_abandoned"]
    if abandoned is not None:
        assert abandoned["name"] == "a" * length + "!" and "ran past" in abandoned["why"]
        assert value["step_numbers"] == [10]  # read by the built-in namings


_STATE_FILES = [
    "session.json",
    "ledger.jsonl",
    "redaction.json",
    "transcript.jsonl",
    "graph.sqlite",
]


def _replace(path: Path, kind: str) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "devzero":
        path.symlink_to("/dev/zero")
    elif kind == "dir":
        path.mkdir()
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "garbage":
        path.write_bytes(b"\xff\xfe garbage \x00\n[[[")
    elif kind == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000 + "\n")


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    name=st.sampled_from(_STATE_FILES),
    kind=st.sampled_from(["fifo", "devzero", "dir", "loop", "garbage", "deep"]),
    answer=st.sampled_from([[], ["--approve"], ["--decline"]]),
)
# Found by this test: a ledger that is a link loop was taken for no ledger at all, and
# the resume failed later (exit 1) for a fact it could not find.
@example(name="ledger.jsonl", kind="loop", answer=[])
def test_any_special_file_in_the_state_directory_is_one_line(
    diagnosed: tuple[Path, str], tmp_path: Path, name: str, kind: str, answer: list[str]
) -> None:
    """Any session state file replaced by a FIFO, device, directory, link loop, garbage or
    deep nesting makes ``resume`` stop in one line, exit 2, without hanging."""
    state, sid = diagnosed
    copy = _fresh(tmp_path) / "state"
    shutil.copytree(state, copy, symlinks=True)
    folder = copy / "dflash-doctor" / "sessions" / sid
    _replace(folder / name, kind)
    env = {**os.environ, "XDG_STATE_HOME": str(copy), "NO_COLOR": "1"}
    started = time.monotonic()
    done = subprocess.run(
        [SCRIPT, "-q", "resume", sid, "--json", *answer],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert time.monotonic() - started < 120
    said = done.stdout + done.stderr
    assert "Traceback" not in said, said[-2000:]
    assert done.returncode == 2, (done.returncode, said[-2000:])
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and re.match(r"dflash-doctor: error: ", lines[0]), lines
