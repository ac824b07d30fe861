"""The checkpoint-integrity rule: checkpoint files with problems (truncated, unreadable, a
step directory left unfinished) and, apart from them, a train log whose last line was cut.
Facts are built in memory as the probes write them; the rule's claims are checked on them."""

from __future__ import annotations

from typing import Any

import pytest

from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, verify
from agent.rules.base import Evidence
from agent.rules.checkpoint_integrity import CheckpointIntegrity


def said(h: Hypothesis) -> list[tuple[str, str]]:
    return [(v.outcome, v.sentence) for v in h.verdicts]


def checked(*facts: tuple[str, Any, str | None]) -> tuple[list[Fact], list[Hypothesis]]:
    ledger = Ledger()
    stored = [
        ledger.append(Fact(probe=probe, target="local", value=value, error=error))
        for probe, value, error in facts
    ]
    found = CheckpointIntegrity().propose(Evidence(ledger, [f.id for f in stored]))
    return stored, [verify(h, ledger) for h in found]


@pytest.mark.parametrize(
    ("problems", "outcome", "relation"),
    [(2, "holds", "= 2 [{id}] ≥ 1"), (0, "fails", "= 0 [{id}] < 1")],
    ids=["two-files-with-problems", "none"],
)
def test_checkpoint_files_with_problems(problems: int, outcome: str, relation: str) -> None:
    """The checkpoints fact's count of files or directories with a problem is claimed at
    least one: verified on two, and refuted on none (so the report shows they were
    checked), weight 2."""
    [ckpt], [h] = checked(("checkpoints", {"problems": problems}, None))
    assert said(h) == [(outcome, "checkpoint files with problems " + relation.format(id=ckpt.id))]
    assert h.weight == 2


def test_a_cut_last_line_of_the_train_log_is_a_second_hypothesis() -> None:
    """A train log whose last line was cut adds a hypothesis of its own, verified on that
    flag, beside the checkpoints' one, which it does not change."""
    [ckpt, log], found = checked(
        ("checkpoints", {"problems": 0}, None), ("trainlog", {"cut_last_line": True}, None)
    )
    assert [h.status for h in found] == ["refuted", "verified"]
    assert said(found[1]) == [("holds", f"train log's last line cut = True [{log.id}] equals True")]
    assert found[1].weight == 1
    assert found[0].cites == [ckpt.id]


@pytest.mark.parametrize(
    "log",
    [
        ("trainlog", {"cut_last_line": False}, None),
        ("trainlog", {}, None),
        ("trainlog", None, "not_found: train_log.jsonl"),
    ],
    ids=["whole-last-line", "not-recorded", "log-unread"],
)
def test_a_log_not_known_to_be_cut_adds_nothing(log: tuple[str, Any, str | None]) -> None:
    """A train log whose last line is whole, not recorded, or that could not be read adds
    no hypothesis."""
    _, found = checked(("checkpoints", {"problems": 1}, None), log)
    assert len(found) == 1


def test_without_checkpoints_read_nothing_is_proposed() -> None:
    """No checkpoints fact, or a failed one: nothing is proposed, not even for a cut train
    log."""
    cut = ("trainlog", {"cut_last_line": True}, None)
    assert checked(cut)[1] == []
    assert checked(("checkpoints", None, "not_found: /w/ckpt"), cut)[1] == []
