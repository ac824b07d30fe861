"""tools.probes.trainlog: the training log summarised where it lies — the file the
profile names, else the first of the workspace layout's candidates that holds training
steps — with a ``source`` saying which file was read, why, and why the candidates before
it were not.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tools.probes import layout, trainlog
from tools.probes._common import Context, ProbeFailure


def steps_log(path: Path, steps: int = 4) -> str:
    """A JSON-lines log of ``steps`` training steps."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(json.dumps({"step": i, "loss": 2.0 / i}) + "\n" for i in range(1, steps + 1))
    )
    return str(path)


def chatter_log(path: Path) -> str:
    """A JSON-lines log with no training step in it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"event": "start"}\n{"event": "config loaded"}\n')
    return str(path)


@pytest.fixture
def candidates(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The workspace layout's training-log candidates, as the test sets them."""
    ranked: list[Any] = []
    monkeypatch.setattr(layout, "discover", lambda workspace: {"train_logs": ranked})
    return ranked


def test_a_profile_path_is_read_with_the_profiles_reason(tmp_path: Path) -> None:
    """The file the profile names is summarised, whatever else the workspace holds; its
    source says the profile named it (or the reason the caller gave) and nothing was tried
    before it."""
    log = steps_log(tmp_path / "metrics.jsonl", steps=3)
    out = trainlog.collect({"path": log, "workspace": str(tmp_path)}, Context())
    assert (out["steps"]["count"], out["steps"]["first"], out["steps"]["last"]) == (3, 1, 3)
    assert out["file"]["path"] == log
    assert out["source"] == {"path": log, "why": "named by the profile", "tried": []}
    given = trainlog.collect({"path": log, "because": "--log on the command line"}, Context())
    assert given["source"]["why"] == "--log on the command line"


def test_an_unknown_throughput_unit_is_bad_parameters_naming_the_file(tmp_path: Path) -> None:
    """A throughput unit the parser does not know fails the probe as bad parameters, with
    the known units and the file it was reading."""
    log = steps_log(tmp_path / "metrics.jsonl")
    message = "unknown throughput unit 'furlongs' (know ktok/s, mtok/s, tok/s)"
    with pytest.raises(ProbeFailure, match=f"^{re.escape(message)}$") as info:
        trainlog.collect({"path": log, "throughput_unit": "furlongs"}, Context())
    assert (info.value.kind, info.value.path) == ("bad_params", log)


def test_with_neither_path_nor_workspace_the_parameters_are_bad() -> None:
    """Nothing to read and nowhere to look fails as bad parameters saying so."""
    with pytest.raises(ProbeFailure, match=r"^trainlog needs a path or a workspace$") as info:
        trainlog.collect({}, Context())
    assert info.value.kind == "bad_params"


def test_a_workspace_without_candidates_has_no_training_log(
    tmp_path: Path, candidates: list[Any]
) -> None:
    """A workspace where the layout finds no training log fails as not found, naming the
    workspace."""
    ws = str(tmp_path)
    message = f"no training log found under {ws} (layout walk)"
    with pytest.raises(ProbeFailure, match=f"^{re.escape(message)}$") as info:
        trainlog.collect({"workspace": ws}, Context())
    assert (info.value.kind, info.value.path) == ("not_found", ws)


def test_the_first_candidate_with_steps_is_read_and_the_others_said(
    tmp_path: Path, candidates: list[Any]
) -> None:
    """Candidates are tried in the layout's order: one that cannot be opened and one with
    no training steps are passed over, each with why; the first holding steps is the value,
    its source giving the layout's reason and kind; entries that are no candidate (no path,
    not a record) are ignored."""
    gone = str(tmp_path / "gone.jsonl")
    chatter = chatter_log(tmp_path / "events.jsonl")
    good = steps_log(tmp_path / "logs" / "train.jsonl")
    later = steps_log(tmp_path / "later.jsonl", steps=9)
    candidates += [
        "not a record",
        {"why": "no path"},
        {"path": gone, "why": "w1", "kind": "jsonl"},
        {"path": chatter, "why": "w2", "kind": "jsonl"},
        {"path": good, "why": "JSON lines with a step field (step)", "kind": "jsonl"},
        {"path": later, "why": "w4", "kind": "jsonl"},
    ]
    out = trainlog.collect({"workspace": str(tmp_path)}, Context())
    assert out["steps"]["count"] == 4
    assert out["source"] == {
        "path": good,
        "why": "JSON lines with a step field (step)",
        "kind": "jsonl",
        "tried": [
            {"path": gone, "why_not": f"not_found: {gone}: No such file or directory"},
            {"path": chatter, "why_not": "no training step records in it"},
        ],
    }


def test_with_no_candidate_holding_steps_the_first_readable_one_is_the_value(
    tmp_path: Path, candidates: list[Any]
) -> None:
    """When no candidate holds training steps, the best-ranked readable one is the value,
    and its source says that none held any and lists every candidate tried."""
    gone = str(tmp_path / "gone.jsonl")
    first = chatter_log(tmp_path / "a.jsonl")
    second = chatter_log(tmp_path / "b.jsonl")
    candidates += [
        {"path": gone, "why": "w0", "kind": "jsonl"},
        {"path": first, "why": "w1", "kind": "jsonl"},
        {"path": second, "why": "w2", "kind": "jsonl"},
    ]
    out = trainlog.collect({"workspace": str(tmp_path)}, Context())
    assert out["file"]["path"] == first
    assert out["steps"]["count"] == 0
    assert out["source"] == {
        "path": first,
        "why": "w1; no candidate held training step records",
        "kind": "jsonl",
        "tried": [
            {"path": gone, "why_not": f"not_found: {gone}: No such file or directory"},
            {"path": first, "why_not": "no training step records in it"},
            {"path": second, "why_not": "no training step records in it"},
        ],
    }


def test_no_readable_candidate_fails_with_each_reason(
    tmp_path: Path, candidates: list[Any]
) -> None:
    """When no candidate can be read, the probe fails as not found with every candidate's
    reason, naming the workspace."""
    ws = str(tmp_path)
    a, b = str(tmp_path / "a.jsonl"), str(tmp_path / "sub")
    (tmp_path / "sub").mkdir()
    candidates += [{"path": a, "why": "w"}, {"path": b, "why": "w"}]
    with pytest.raises(ProbeFailure) as info:
        trainlog.collect({"workspace": ws}, Context())
    assert (info.value.kind, info.value.path) == ("not_found", ws)
    assert str(info.value) == (
        f"no readable training log under {ws}: "
        f"{a}: not_found: {a}: No such file or directory; "
        f"{b}: is_a_directory: {b}: is a directory"
    )


def test_at_most_max_candidates_are_tried(tmp_path: Path, candidates: list[Any]) -> None:
    """Only the first ``MAX_CANDIDATES`` candidates are read; one ranked after them is not,
    even when it holds steps."""
    for i in range(trainlog.MAX_CANDIDATES):
        candidates.append({"path": chatter_log(tmp_path / f"c{i}.jsonl"), "why": f"w{i}"})
    candidates.append({"path": steps_log(tmp_path / "late.jsonl"), "why": "late"})
    out = trainlog.collect({"workspace": str(tmp_path)}, Context())
    assert out["source"]["path"] == str(tmp_path / "c0.jsonl")
    assert len(out["source"]["tried"]) == trainlog.MAX_CANDIDATES
