"""The synthetic prompt dataset: seeded, bucketed by length, expandable with new lengths."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from examples.dflash_trainer import dataset
from examples.dflash_trainer.cli import main


def test_generate_is_seeded_and_spreads_lengths(tmp_path: Path) -> None:
    """Same seed, same bytes; every prompt has one of the requested lengths."""
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    dataset.generate(a, 40, [32, 64], seed=3)
    dataset.generate(b, 40, [32, 64], seed=3)
    dataset.generate(c, 40, [32, 64], seed=4)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    prompts = dataset.load(a)
    assert len(prompts) == 40
    assert dataset.lengths_of(prompts) == [32, 64]
    assert sum(p.length == 32 for p in prompts) == 20


@pytest.mark.parametrize("lengths", [[0], [15], [64, 70]])
def test_lengths_must_be_whole_blocks(tmp_path: Path, lengths: list[int]) -> None:
    """A length that is not a positive multiple of the block size is refused."""
    with pytest.raises(ValueError, match="multiples of 16"):
        dataset.generate(tmp_path / "d.jsonl", 4, lengths)


def test_expand_appends_new_lengths_and_keeps_old_lines(tmp_path: Path) -> None:
    """Expanding keeps every old line byte for byte and adds prompts of new lengths only."""
    path = tmp_path / "d.jsonl"
    dataset.generate(path, 10, [64])
    before = path.read_text()
    total = dataset.expand(path, 6, [80, 96])
    after = path.read_text()
    assert total == 16 == dataset.count(path)
    assert after.startswith(before)
    added = [json.loads(line) for line in after[len(before) :].splitlines()]
    assert [r["id"] for r in added] == list(range(10, 16))
    assert {r["length"] for r in added} == {80, 96}


def test_batches_hold_one_length_and_drop_partial(tmp_path: Path) -> None:
    """A batch is one shape; a length with too few prompts for a batch never shows up."""
    path = tmp_path / "d.jsonl"
    dataset.generate(path, 16, [64])
    dataset.expand(path, 3, [80])
    prompts = dataset.load(path)
    assert dataset.batch_lengths(prompts, 4) == [64]
    plan = dataset.batch_plan(prompts, 4, seed=0)
    assert len(plan) == 4
    for batch in plan:
        assert {prompts[i].length for i in batch} == {64}


def test_strided_streams_partition_the_batches(tmp_path: Path) -> None:
    """Targets reading start=i, stride=n see disjoint batch indices covering the stream."""
    path = tmp_path / "d.jsonl"
    dataset.generate(path, 32, [32, 64])
    prompts = dataset.load(path)
    streams = [dataset.batches(prompts, 4, seed=1, start=i, stride=2) for i in range(2)]
    seen = [[next(s).index for _ in range(5)] for s in streams]
    assert seen == [[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]]


def test_dataset_cli_creates_and_expands_without_torch(tmp_path: Path) -> None:
    """`dataset` and `dataset --expand` work and never import torch (they stay cheap)."""
    had_torch = "torch" in sys.modules
    assert main(["dataset", "--workspace", str(tmp_path), "--size", "8", "--lengths", "32"]) == 0
    args = ["dataset", "--workspace", str(tmp_path), "--expand", "--add", "4"]
    assert main([*args, "--new-lengths", "48"]) == 0
    data = tmp_path / "data" / "prompts.jsonl"
    assert dataset.lengths_of(dataset.load(data)) == [32, 48]
    if not had_torch:
        assert "torch" not in sys.modules
