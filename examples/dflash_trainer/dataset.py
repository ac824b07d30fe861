"""Synthetic, seeded prompt datasets in JSONL, grouped into length buckets.

Every prompt is a string of block-long phrases from a fixed table, with a little noise,
so a drafter can actually learn it and its loss falls. Lengths are
multiples of the DFlash block size and batches hold prompts of one length only: each
distinct length is one static shape the workers compile, which is what makes expanding
the dataset with new lengths cost compilations mid-run.

This module deliberately does not import torch, so dataset work stays fast and cheap.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

BLOCK_SIZE = 16
VOCAB_SIZE = 256
DEFAULT_LENGTHS = (64, 128)
NOISE = 0.05
PHRASES = 64


@dataclass(frozen=True)
class Prompt:
    id: int
    tokens: tuple[int, ...]

    @property
    def length(self) -> int:
        return len(self.tokens)


def _check_lengths(lengths: Sequence[int]) -> None:
    bad = [n for n in lengths if n <= 0 or n % BLOCK_SIZE]
    if bad:
        raise ValueError(f"lengths must be positive multiples of {BLOCK_SIZE}: {bad}")


def _phrases(seed: int = 1234, n: int = PHRASES) -> list[list[int]]:
    """A fixed table of block-long phrases with distinct first tokens.

    Prompts are strings of these phrases, aligned to blocks, so a block's anchor token
    names the 15 tokens after it: a drafter can learn that, and its loss visibly falls.
    """
    rng = random.Random(seed)
    firsts = rng.sample(range(VOCAB_SIZE), n)
    return [
        [first] + [rng.randrange(VOCAB_SIZE) for _ in range(BLOCK_SIZE - 1)] for first in firsts
    ]


_PHRASE_TABLE = _phrases()


def _make_prompt(rng: random.Random, pid: int, length: int) -> Prompt:
    tokens: list[int] = []
    while len(tokens) < length:
        tokens.extend(rng.choice(_PHRASE_TABLE))
    noisy = (rng.randrange(VOCAB_SIZE) if rng.random() < NOISE else t for t in tokens)
    return Prompt(pid, tuple(noisy))


def _write(path: Path, prompts: Sequence[Prompt], mode: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode, encoding="utf-8") as fh:
        for p in prompts:
            fh.write(json.dumps({"id": p.id, "length": p.length, "tokens": list(p.tokens)}) + "\n")


def generate(path: Path, size: int, lengths: Sequence[int] = DEFAULT_LENGTHS, seed: int = 0) -> int:
    """Write ``size`` prompts spread evenly over ``lengths``; returns the count written."""
    _check_lengths(lengths)
    rng = random.Random(seed)
    prompts = [_make_prompt(rng, i, lengths[i % len(lengths)]) for i in range(size)]
    _write(path, prompts, "w")
    return size


def expand(path: Path, add: int, new_lengths: Sequence[int], seed: int = 1) -> int:
    """Append ``add`` prompts whose lengths are ``new_lengths``; returns the new total.

    The new prompts get ids after the existing ones, so an expanded file is the old file
    plus lines: the old prompts (and their shapes) are unchanged.
    """
    _check_lengths(new_lengths)
    start = count(path)
    rng = random.Random(seed * 1_000_003 + start)
    prompts = [_make_prompt(rng, start + i, new_lengths[i % len(new_lengths)]) for i in range(add)]
    _write(path, prompts, "a")
    return start + add


def load(path: Path) -> list[Prompt]:
    with path.open(encoding="utf-8") as fh:
        return [Prompt(int(r["id"]), tuple(r["tokens"])) for r in map(json.loads, fh) if r]


def count(path: Path) -> int:
    if not path.exists():
        return 0
    with path.open("rb") as fh:
        return sum(1 for line in fh if line.strip())


def lengths_of(prompts: Sequence[Prompt]) -> list[int]:
    return sorted({p.length for p in prompts})


@dataclass(frozen=True)
class Batch:
    index: int
    tokens: tuple[tuple[int, ...], ...]

    @property
    def length(self) -> int:
        return len(self.tokens[0])


def batch_plan(prompts: Sequence[Prompt], batch_size: int, seed: int) -> list[list[int]]:
    """One epoch of batches as lists of prompt positions, one length per batch.

    Incomplete batches are dropped: a short batch would be one more shape to compile.
    """
    by_len: dict[int, list[int]] = {}
    for pos, p in enumerate(prompts):
        by_len.setdefault(p.length, []).append(pos)
    rng = random.Random(seed)
    plan: list[list[int]] = []
    for length in sorted(by_len):
        group = by_len[length]
        rng.shuffle(group)
        plan.extend(
            group[i : i + batch_size] for i in range(0, len(group) - batch_size + 1, batch_size)
        )
    rng.shuffle(plan)
    if not plan:
        raise ValueError(f"no length bucket holds a full batch of {batch_size} prompts")
    return plan


def batches(
    prompts: Sequence[Prompt], batch_size: int, seed: int, start: int = 0, stride: int = 1
) -> Iterator[Batch]:
    """Batches ``start, start + stride, …`` of an endless, epoch-reshuffled stream.

    Target worker ``i`` of ``n`` reads ``start=i, stride=n``, so the workers share one
    stream without talking to each other, and a resumed run can skip ahead by index.
    """
    plan = batch_plan(prompts, batch_size, seed)
    plan_epoch, index = 0, start
    while True:
        # Every epoch has the same number of batches: only the order changes.
        epoch, pos = divmod(index, len(plan))
        if epoch != plan_epoch:
            plan, plan_epoch = batch_plan(prompts, batch_size, seed + epoch), epoch
        yield Batch(index, tuple(prompts[i].tokens for i in plan[pos]))
        index += stride


def batch_lengths(prompts: Sequence[Prompt], batch_size: int) -> list[int]:
    """The sequence lengths that full batches have: the shapes a run will compile."""
    sizes: dict[int, int] = {}
    for p in prompts:
        sizes[p.length] = sizes.get(p.length, 0) + 1
    return sorted(n for n, c in sizes.items() if c >= batch_size)
