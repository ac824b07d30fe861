"""Health on a workspace of 20,000 entries and more (issue 24, item 8). A folder of
20,500 files that sorts before ``checkpoints/`` used to spend the layout walk's whole
budget: the checkpoints were never found, environment drift had nothing to compare, and
health said "could not check" where a small workspace is judged. Each directory now
has its own share of the walk, the rest counted; the verdict is the small workspace's."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.lib.cli import gather, run_cli
from tests.lib.probe_workspace import write_run

CROWD = 20_500


def health(ws: Path, state: Path) -> dict[str, Any]:
    run = run_cli(
        "health", "--target", "local", "--workspace", str(ws),
        "--interpreter", sys.executable, "--format", "json",
        state=state,
    )  # fmt: skip
    assert b"Traceback" not in run.stderr, run.stderr.decode()[-2000:]
    document: dict[str, Any] = json.loads(run.stdout)
    assert len(document["targets"]) == 1
    target: dict[str, Any] = document["targets"][0]
    return target


def test_a_crowded_folder_costs_its_own_entries_not_the_check(tmp_path: Path) -> None:
    """A folder of many thousands of files sorting before the checkpoints is skipped in part
    and said so; the checkpoints are still found, and health gives the verdict a small
    workspace gets."""
    small, crowded = tmp_path / "small", tmp_path / "crowded"
    for ws in (small, crowded):
        write_run(ws)
    (crowded / "aaa-shards").mkdir()
    for i in range(CROWD):
        (crowded / "aaa-shards" / f"shard-{i:05d}.bin").touch()

    facts = gather(crowded, tmp_path / "facts-state")
    layout = facts["layout"]["value"]
    assert layout["checkpoint_dirs"][0]["path"] == str(crowded / "checkpoints")
    assert facts["checkpoints"]["error"] is None
    assert any(
        s["path"] == str(crowded / "aaa-shards") and f"{CROWD - 2000} of its {CROWD}" in s["why"]
        for s in layout["skipped"]
    ), layout["skipped"]

    expected = health(small, tmp_path / "s1")
    judged = health(crowded, tmp_path / "s2")
    assert judged["status"] != "could_not_check", judged["reason"]
    assert (judged["status"], judged["verdict"]) == (expected["status"], expected["verdict"])
    checks = {c["name"]: c["status"] for c in judged["checks"]}
    assert checks == {c["name"]: c["status"] for c in expected["checks"]}
    events = [json.loads(line) for line in Path(judged["transcript"]).read_text().splitlines()]
    assert not [e for e in events if e["type"] == "refused"]
