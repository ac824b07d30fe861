"""agent.analysis.diff_keys: what a baseline diff compares (the static version and cache
quantities, one md5 per checksummed file, the dataset's size and longest line, the
throughput) and where each lives in the probes' facts, with the derived baseline read
from the last checkpoint written before the run changed."""

from __future__ import annotations

from typing import Any

import pytest

from agent.analysis.baseline import Comparable
from agent.analysis.diff_keys import (
    STATIC,
    checkpoint_before,
    comparables,
    drafter_group,
)
from agent.model.facts import Fact, Ledger

CANON = {"torch": "2.11.0"}


def ckpt(name: str, step: object, **more: Any) -> dict[str, Any]:
    return {"name": name, "step": step, "canonical": CANON, **more}


def checkpoints(ledger: Ledger, steps: object) -> Fact:
    return ledger.append(Fact(probe="checkpoints", target="local", value={"steps": steps}))


@pytest.mark.parametrize(
    ("steps", "step", "expected"),
    [
        ([ckpt("s100", 100), ckpt("s200", 200), ckpt("s300", 300)], 250, "s200"),
        ([ckpt("s100", 100), ckpt("s200", 200), ckpt("s300", 300)], 200, "s200"),
        ([ckpt("s100", 100), ckpt("s200", 200), ckpt("s300", 300)], 300, None),
        ([ckpt("s100", 100), ckpt("s200", 200), ckpt("s300", 300)], 350, None),
        ([ckpt("s100", 100), ckpt("s200", 200), ckpt("s300", 300)], 50, None),
        ([ckpt("s100", 100), ckpt("s200", 200), ckpt("s300", 300, incomplete=True)], 250, None),
        (
            [ckpt("s100", 100), ckpt("s200", 200, metadata_error="bad json"), ckpt("s300", 300)],
            250,
            "s100",
        ),
        (
            [ckpt("s100", 100), {**ckpt("s200", 200), "canonical": {}}, ckpt("s300", 300)],
            250,
            "s100",
        ),
        ([ckpt("s100", 100), ckpt("s200", "200"), ckpt("s300", 300)], 250, "s100"),
        ({"s100": ckpt("s100", 100)}, 250, None),
    ],
    ids=[
        "between",
        "written-at-the-step",
        "newest-at-the-step",
        "newest-before",
        "none-before",
        "unfinished-newest",
        "unreadable-records",
        "records-nothing",
        "step-not-a-number",
        "steps-not-a-list",
    ],
)
def test_the_checkpoint_before_a_change(steps: object, step: float, expected: str | None) -> None:
    """The newest finished checkpoint that records anything and was written at or before
    the step, and only when the newest such checkpoint overall came after it (else the
    newest already shows the state before the change)."""
    ledger = Ledger()
    assert checkpoint_before(checkpoints(ledger, steps), step) == expected


def test_no_checkpoints_fact_has_no_checkpoint_before() -> None:
    """Without a checkpoints fact there is nothing to read the baseline from."""
    assert checkpoint_before(None, 100) is None


def test_the_static_quantities_come_first_and_alone_without_other_facts() -> None:
    """With no checksums, dataset, train log or checkpoints, the table is the static
    quantities, in their order."""
    ledger = Ledger()
    assert comparables(ledger, []) == list(STATIC)


def test_each_checksummed_file_and_each_dataset_file_adds_its_quantities() -> None:
    """One md5 per checksummed file that has one; a dataset file with a line count adds
    its prompts (derived from the dataset size a checkpoint recorded) and its longest
    line; entries without those numbers add nothing."""
    ledger = Ledger()
    sums = ledger.append(
        Fact(
            probe="checksums",
            target="local",
            value={"files": [{"path": "/w/train.py", "md5": "ab"}, {"path": "/w/gone.py"}]},
        )
    )
    data = ledger.append(
        Fact(
            probe="dataset",
            target="local",
            value={"files": [{"path": "/w/p.jsonl", "lines": 144}, {"path": "/w/x.bin"}]},
        )
    )
    added = comparables(ledger, [sums.id, data.id])[len(STATIC) :]
    assert added == [
        Comparable(
            "md5:/w/train.py",
            "md5 of /w/train.py",
            "checksums",
            ("files", "@path=/w/train.py", "md5"),
        ),
        Comparable(
            "dataset.lines:/w/p.jsonl",
            "prompts in /w/p.jsonl",
            "dataset",
            ("files", "@path=/w/p.jsonl", "lines"),
            derived=("checkpoints", ("recorded", "dataset_size")),
        ),
        Comparable(
            "dataset.longest:/w/p.jsonl",
            "longest prompt line in /w/p.jsonl (bytes)",
            "dataset",
            ("files", "@path=/w/p.jsonl", "line_bytes", "max"),
        ),
    ]


def test_a_failed_checksums_fact_adds_no_md5() -> None:
    """A failed observation of the scripts is no source of quantities."""
    ledger = Ledger()
    failed = ledger.append(Fact(probe="checksums", target="local", error="permission denied"))
    assert comparables(ledger, [failed.id]) == list(STATIC)


def test_a_change_step_rebases_what_checkpoints_recorded_on_the_checkpoint_before() -> None:
    """Given the step the run changed at, every quantity derived from what the newest
    checkpoint recorded is read from the last checkpoint before it instead; quantities
    with no derived baseline keep none."""
    ledger = Ledger()
    fact = checkpoints(ledger, [ckpt("s100", 100), ckpt("s200", 200), ckpt("s300", 300)])
    table = comparables(ledger, [fact.id], 250)
    assert [c.derived for c in table if c.derived is not None] == [
        ("checkpoints", ("steps", "@name=s200", "canonical", name))
        for name in ("python", "torch", "torch_git", "cuda", "triton", "transformers", "lightning")
    ]
    assert [c.key for c in table] == [c.key for c in STATIC]


def test_a_change_after_the_newest_checkpoint_keeps_what_it_recorded() -> None:
    """When the newest checkpoint was written before the change, it is the baseline as
    it stands: nothing is rebased."""
    ledger = Ledger()
    fact = checkpoints(ledger, [ckpt("s100", 100), ckpt("s200", 200)])
    assert comparables(ledger, [fact.id], 250) == list(STATIC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"groups": {"rank=0": {"throughput": {"recent_median": 900.0}}}}, "rank=0"),
        (
            {
                "groups": {
                    "role=drafter,rank=1": {"throughput": {"recent_median": 900.0}},
                    "role=target,rank=0": {"throughput": {"recent_median": 800.0}},
                }
            },
            "role=drafter,rank=1",
        ),
        ({"speed": {"recent": {"value": 900.0}}}, None),
        ({"groups": {"rank=0": {"throughput": {"recent_median": None}}}}, None),
    ],
    ids=["only-group", "one-drafter", "no-groups", "no-speed"],
)
def test_the_drafter_group_is_the_one_series_judged(
    value: dict[str, Any], expected: str | None
) -> None:
    """The log's only group, or its one drafter among others, is the series the
    throughput is judged by; a log without groups, or without a speed, has none."""
    ledger = Ledger()
    fact = ledger.append(Fact(probe="trainlog", target="local", value=value))
    assert drafter_group(fact) == expected
