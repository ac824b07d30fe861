"""checkpoints: step directories, their files and metadata, gaps, damage."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from tests.lib.probe_workspace import make_workspace, write_pt
from tools.probes import checkpoints
from tools.probes._common import Context, ProbeFailure


def collect(path: Path, **params: object) -> checkpoints.CheckpointsValue:
    return checkpoints.collect({"path": str(path), **params}, Context())


def test_incident_listing(tmp_path: Path) -> None:
    """step_600 and step_690 with their metadata; the logs are other entries."""
    ws = make_workspace(tmp_path)
    out = collect(ws / "checkpoints")
    assert out["step_numbers"] == [600, 690] and out["latest_step"] == 690
    last = out["steps"][-1]
    assert last["metadata_file"] == "metadata.json"
    assert last["metadata"]["torch"]["version"] == "2.11.0+cu130"
    assert {f["name"]: f["ok"] for f in last["files"]} == {
        "drafter.pt": True,
        "metadata.json": True,
        "optimizer.pt": True,
    }
    assert {e["name"] for e in out["other_entries"]} == {"train_log.jsonl", "train_stdout.log"}
    assert out["problems"] == 0


def test_empty_checkpoint_dir(tmp_path: Path) -> None:
    """An empty directory is a fact: no steps, empty."""
    out = collect(tmp_path)
    assert out["empty"] and out["steps"] == [] and out["latest_step"] is None


@pytest.mark.parametrize(("what", "kind"), [("missing", "not_found"), ("file", "not_a_directory")])
def test_unusable_path_fails_the_probe(tmp_path: Path, what: str, kind: str) -> None:
    """A checkpoint path that is missing or is a file fails the probe with that kind and the path,
    instead of reporting no steps."""
    p = tmp_path / "ckpt"
    if what == "file":
        p.write_text("x")
    with pytest.raises(ProbeFailure) as err:
        collect(p)
    assert err.value.kind == kind and err.value.path == str(p)


def test_truncated_files_and_broken_metadata(tmp_path: Path) -> None:
    """A cut .pt (no zip directory), an empty file and unparsable metadata are problems."""
    d = tmp_path / "step_10"
    d.mkdir()
    write_pt(d / "drafter.pt", b"w" * 10000)
    data = (d / "drafter.pt").read_bytes()
    (d / "drafter.pt").write_bytes(data[: len(data) // 2])
    (d / "optimizer.pt").write_bytes(b"")
    (d / "metadata.json").write_text('{"step": 10, "torch"')
    out = collect(tmp_path)
    step = out["steps"][0]
    files = {f["name"]: f for f in step["files"]}
    assert files["drafter.pt"]["ok"] is False and "zip" in files["drafter.pt"]["problem"]
    assert files["optimizer.pt"]["problem"] == "empty file"
    assert "does not parse" in step["metadata_error"]
    assert out["problems"] == 1 and len(step["problems"]) == 4


def test_deep_check_finds_a_flipped_byte(tmp_path: Path) -> None:
    """With deep, a CRC mismatch inside an intact zip is found."""
    d = tmp_path / "step_1"
    d.mkdir()
    write_pt(d / "model.pt", b"A" * 5000)
    raw = bytearray((d / "model.pt").read_bytes())
    i = raw.index(b"A" * 100)
    raw[i + 50] = ord("B")
    (d / "model.pt").write_bytes(bytes(raw))
    shallow = collect(tmp_path)["steps"][0]["files"][0]
    deep = collect(tmp_path, deep=True)["steps"][0]["files"][0]
    assert shallow["ok"] is True
    assert deep["ok"] is False and "CRC" in deep["problem"]


def test_safetensors_truncation(tmp_path: Path) -> None:
    """A safetensors file shorter than its header's offsets say is a problem: truncated."""
    d = tmp_path / "checkpoint-5"
    d.mkdir()
    header = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    (d / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)
    out = collect(tmp_path)
    f = out["steps"][0]["files"][0]
    assert f["format"] == "safetensors" and f["ok"] is False and "truncated" in f["problem"]


def test_gaps_and_unfinished_saves(tmp_path: Path) -> None:
    """Steps 100..500 every 100 minus 300, plus a step_600.tmp that never finished."""
    for s in (100, 200, 400, 500):
        (tmp_path / f"step_{s}").mkdir()
        write_pt(tmp_path / f"step_{s}" / "m.pt")
    (tmp_path / "step_600.tmp").mkdir()
    out = collect(tmp_path)
    assert out["step_numbers"] == [100, 200, 400, 500]
    assert out["typical_interval"] == 100
    assert out["gaps"] == [{"after": 200, "before": 400, "missing_intervals": 1}]
    tmp = [s for s in out["steps"] if s["incomplete"]]
    assert tmp[0]["name"] == "step_600.tmp" and "unfinished save" in tmp[0]["problems"][-1]


# -- one bad record never loses the fact (issue 14, item 9) --------------------------

DEEP = "[" * 2000 + "]" * 2000  # deeper than the stdlib parser's recursion limit
BIG = "9" * 400  # an integer no float can hold


def _two_steps(root: Path, name: str, text: str) -> Path:
    """step_50 with a good record, step_100 holding ``text`` as ``name``."""
    good = root / "step_50"
    good.mkdir()
    (good / "meta.json").write_text(json.dumps({"torch_version": "2.1.0", "tokens_per_s": 100.0}))
    bad = root / "step_100"
    bad.mkdir()
    write_pt(bad / "model.pt")
    (bad / name).write_text(text)
    return bad


def test_deep_metadata_record_is_a_problem_not_a_failure(tmp_path: Path) -> None:
    """A meta.json nested 2,000 deep is one checkpoint's problem; the other checkpoint,
    the step numbers and the saved environment are still the fact."""
    _two_steps(tmp_path, "meta.json", '{"torch_version": "2.1.0", "x": ' + DEEP + "}")
    out = collect(tmp_path)
    assert out["step_numbers"] == [50, 100]
    old, new = out["steps"]
    assert old["canonical"] == {"torch": "2.1.0", "tokens_per_s": 100.0}
    assert "nested too deep" in new["metadata_error"]
    files = {f["name"]: f for f in new["files"]}
    assert files["meta.json"]["ok"] is False and "nested too deep" in files["meta.json"]["problem"]
    assert any("nested too deep" in n for n in new["canonical_notes"])
    assert out["problems"] == 1
    # The baseline comes from the newest checkpoint whose record could be read.
    assert out["recorded"]["torch"] == "2.1.0" and out["recorded_from"]["torch"].startswith(
        "step_50/"
    )


@pytest.mark.parametrize("name", ["config.json", "trainer_state.json", "env.json"])
def test_deep_record_files_beside_the_metadata(tmp_path: Path, name: str) -> None:
    """Any JSON file a checkpoint holds may be nested too deep: a note, never a crash."""
    bad = _two_steps(tmp_path, name, '{"x": ' + DEEP + "}")
    (bad / "meta.json").write_text(json.dumps({"torch_version": "2.2.0"}))
    new = collect(tmp_path)["steps"][-1]
    assert new["canonical"]["torch"] == "2.2.0"
    assert any(n.startswith(f"{name}: does not parse") for n in new["canonical_notes"])


def test_huge_number_in_metadata_is_not_a_figure(tmp_path: Path) -> None:
    """A 400-digit tokens_per_s is no usable figure: not recorded, and a note says why;
    the same record's versions are still read."""
    _two_steps(tmp_path, "meta.json", '{"torch_version": "2.2.0", "tokens_per_s": ' + BIG + "}")
    out = collect(tmp_path)
    new = out["steps"][-1]
    assert new["canonical"] == {"torch": "2.2.0"}
    assert "tokens_per_s" in new["not_recorded"]
    assert any(
        "meta.json:tokens_per_s" in n and "is not a tokens_per_s value" in n
        for n in new["canonical_notes"]
    )
    # The baseline takes the newest checkpoint's versions, and no figure it cannot use.
    assert out["recorded"] == {"torch": "2.2.0"}


@pytest.mark.parametrize("value", ["Infinity", "1e400"])
def test_infinite_figures_are_not_recorded(tmp_path: Path, value: str) -> None:
    """json reads Infinity and 1e400 as inf: no figure either."""
    _two_steps(tmp_path, "meta.json", '{"torch_version": "2.2.0", "tokens_per_s": ' + value + "}")
    new = collect(tmp_path)["steps"][-1]
    assert "tokens_per_s" not in new["canonical"]


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        ([1, 2], "not a JSON object"),
        ({"w": {"data_offsets": [0]}}, "data_offsets"),
        ({"w": {"data_offsets": 7}}, "data_offsets"),
        ({"w": {"data_offsets": [0, "x"]}}, "data_offsets"),
    ],
    ids=["list", "short-offsets", "int-offsets", "text-offset"],
)
def test_safetensors_header_of_the_wrong_shape(
    tmp_path: Path, header: object, problem: str
) -> None:
    """A safetensors header that parses but is not what the format says is a problem
    of that file."""
    d = tmp_path / "checkpoint-5"
    d.mkdir()
    raw = json.dumps(header).encode()
    (d / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 8)
    f = collect(tmp_path)["steps"][0]["files"][0]
    assert f["ok"] is False and problem in f["problem"]


def test_deep_safetensors_header(tmp_path: Path) -> None:
    """A safetensors header nested too deep is reported as a problem of that file, not a crash of
    the probe."""
    d = tmp_path / "checkpoint-5"
    d.mkdir()
    raw = DEEP.encode()
    (d / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 8)
    f = collect(tmp_path)["steps"][0]["files"][0]
    assert f["ok"] is False and "nested too deep" in f["problem"]


def _saved(root: Path, name: str, mtime: float) -> None:
    d = root / name
    d.mkdir()
    (d / "config.json").write_text("{}")
    os.utime(d, (mtime, mtime))


def test_the_pace_is_steps_over_the_checkpoints_times(tmp_path: Path) -> None:
    """checkpoint-10 at t, -20 at t+2 s, -30 at t+12 s: 5 then 1 steps a second; an
    unfinished save is left out; an interval under a second has no figure."""
    t = 1_700_000_000.0
    for name, at in (("checkpoint-10", t), ("checkpoint-20", t + 2), ("checkpoint-30", t + 12)):
        _saved(tmp_path, name, at)
    _saved(tmp_path, "checkpoint-35", t + 12.5)
    _saved(tmp_path, "checkpoint-40.tmp", t + 14)
    pace = collect(tmp_path)["pace"]
    assert pace["ordered"] and pace["unit"] == "steps/s"
    assert [(w["from"], w["to"], w.get("speed")) for w in pace["windows"]] == [
        ("checkpoint-10", "checkpoint-20", 5.0),
        ("checkpoint-20", "checkpoint-30", 1.0),
        ("checkpoint-30", "checkpoint-35", None),
    ]


def test_times_that_do_not_rise_with_the_steps_give_no_pace(tmp_path: Path) -> None:
    """A copy that did not keep the times (checkpoint-100 copied before checkpoint-20)."""
    t = 1_700_000_000.0
    for name, at in (("checkpoint-20", t + 5), ("checkpoint-100", t), ("checkpoint-60", t + 9)):
        _saved(tmp_path, name, at)
    pace = collect(tmp_path)["pace"]
    assert not pace["ordered"] and pace["windows"] == []
