"""What every rule stands on (``agent.rules.base``): the read-only ``Evidence`` view (the
newest fact of a probe, a value inside it, the diff entries that differ), references into a
fact, whose structured trace a file is in a claim's words, whether a fact holds a value at a
path, and the FX-check claim the race and the monkeypatch share."""

from __future__ import annotations

from typing import Any

import pytest

from agent.analysis.baseline import DiffEntry
from agent.model.claims import Equal, Ref, check
from agent.model.facts import Fact, Ledger
from agent.rules.base import Evidence, binds_check_at_wrap, has, ref, trace_words


def fact(probe: str, value: Any = None, error: str | None = None) -> Fact:
    return Fact(probe=probe, target="local", value=value, error=error)


def test_latest_is_the_newest_fact_of_the_probe_failed_included() -> None:
    """The newest fact of a probe in the order the ids were gathered, even where it failed
    and an older one succeeded; None where the probe has no fact."""
    ledger = Ledger()
    old = ledger.append(fact("pyenv", {"python": "3.11"}))
    other = ledger.append(fact("gpus", {"count": 1}))
    new = ledger.append(fact("pyenv", error="timeout: killed"))
    evidence = Evidence(ledger, [old.id, other.id, new.id])
    assert evidence.latest("pyenv") == new
    assert evidence.latest("checksums") is None
    assert Evidence(ledger, [new.id, old.id]).latest("pyenv") == old


VALUE = {
    "torch": {"version": "2.11.0", "cuda": None},
    "files": [{"path": "/w/a.py", "md5": "a1"}, {"path": "/w/b.py", "md5": "b2"}],
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (("torch", "version"), "2.11.0"),
        (("files", 1, "md5"), "b2"),
        (("files", "@path=/w/a.py", "md5"), "a1"),
        (("torch", "cuda"), None),
        (("missing",), None),
        (("files", 5), None),
        ((), VALUE),
    ],
    ids=["key", "index", "selector", "a-null", "absent-key", "index-past-the-end", "whole-value"],
)
def test_value_reads_a_path_in_the_newest_fact(path: tuple[str | int, ...], expected: Any) -> None:
    """``value`` resolves a path of keys, indexes and ``@key=value`` selectors in the
    newest fact of the probe; an absent path reads as None, like a null."""
    ledger = Ledger()
    f = ledger.append(fact("pyenv", VALUE))
    assert Evidence(ledger, [f.id]).value("pyenv", *path) == expected


def test_value_of_a_failed_or_absent_fact_is_none() -> None:
    """A failed newest fact reads as nothing observed, though an older one holds the
    value; so does a probe with no fact."""
    ledger = Ledger()
    old = ledger.append(fact("pyenv", {"python": "3.11"}))
    new = ledger.append(fact("pyenv", error="timeout: killed"))
    evidence = Evidence(ledger, [old.id, new.id])
    assert evidence.value("pyenv", "python") is None
    assert evidence.value("gpus", "count") is None


def entry(key: str, before: Any, now: Any) -> DiffEntry:
    return DiffEntry(
        key=key,
        label=key,
        baseline=Ref(fact="F-0000", path=(key,)),
        current=Ref(fact="F-0001", path=(key,)),
        baseline_value=before,
        current_value=now,
    )


def test_differing_keeps_the_entries_that_changed_of_the_keys_asked() -> None:
    """Only diff entries whose values differ, in the diff's order; given keys, only those
    (matched whole, not as prefixes)."""
    diff = [
        entry("torch", "2.10", "2.11"),
        entry("python", "3.11", "3.11"),
        entry("triton", "3.1", "3.2"),
        entry("torch.cuda", "12.4", "13.0"),
    ]
    evidence = Evidence(Ledger(), [], diff)
    assert [d.key for d in evidence.differing()] == ["torch", "triton", "torch.cuda"]
    assert [d.key for d in evidence.differing("torch", "python")] == ["torch"]
    assert Evidence(Ledger(), []).differing() == []


def test_ref_points_into_a_fact_by_its_id() -> None:
    """``ref`` names the fact by its id, the path as given, and the label."""
    ledger = Ledger()
    f = ledger.append(fact("pyenv", {"a": [1]}))
    assert ref(f, "a", 0, label="first a") == Ref(fact=f.id, path=("a", 0), label="first a")
    assert ref(f) == Ref(fact=f.id, path=(), label="")


@pytest.mark.parametrize(
    ("file", "words"),
    [
        ({"rank": 3}, "rank 3's structured trace (torch)"),
        ({"rank": 0}, "rank 0's structured trace (torch)"),
        ({}, "torch's structured trace"),
        ({"rank": None}, "torch's structured trace"),
        ({"rank": "3"}, "torch's structured trace"),
        ({"rank": True}, "torch's structured trace"),
    ],
    ids=["rank-3", "rank-0", "no-rank", "null-rank", "rank-as-text", "rank-a-bool"],
)
def test_trace_words_name_the_rank_where_the_file_holds_one(
    file: dict[str, Any], words: str
) -> None:
    """A trace file whose name held a rank (an integer, 0 included) is that rank's; any
    other is torch's structured trace without a rank."""
    assert trace_words(file) == words


@pytest.mark.parametrize(
    ("f", "path", "expected"),
    [
        (fact("pyenv", {"torch": "2.11"}), ("torch",), True),
        (fact("pyenv", {"torch": None}), ("torch",), True),
        (fact("pyenv", {"torch": False}), ("torch",), True),
        (fact("pyenv", {"python": "3.11"}), ("torch",), False),
        (fact("pyenv", error="timeout: killed"), ("torch",), False),
        (None, ("torch",), False),
    ],
    ids=["a-value", "a-null-is-held", "false-is-held", "absent", "failed-fact", "no-fact"],
)
def test_has_says_whether_a_claim_on_the_path_can_be_checked(
    f: Fact | None, path: tuple[str, ...], expected: bool
) -> None:
    """``has`` is true where a fact that was read holds the path, whatever the value
    there (a null or false included); false for an absent path, a failed fact or none."""
    assert has(f, *path) is expected


@pytest.mark.parametrize(
    ("value", "outcome", "sentence"),
    [
        (
            True,
            "holds",
            "compiled wrappers bind the FX check at creation = True [{id}] equals True",
        ),
        (
            False,
            "fails",
            "compiled wrappers bind the FX check at creation = False [{id}] differs from True",
        ),
    ],
    ids=["binds-at-creation", "looks-it-up-at-call-time"],
)
def test_binds_check_at_wrap_claims_the_torch_source_fact(
    value: bool, outcome: str, sentence: str
) -> None:
    """The shared claim is that the torch-source fact's ``binds_check_at_wrap`` value is
    true: it holds on a torch whose wrappers bind the check, and fails on one that looks
    it up at call time."""
    ledger = Ledger()
    src = ledger.append(fact("torch_source", {"binds_check_at_wrap": {"value": value}}))
    claim = binds_check_at_wrap(src)
    assert isinstance(claim.predicate, Equal)
    verdict = check(claim, ledger)
    assert (verdict.outcome, verdict.sentence) == (outcome, sentence.format(id=src.id))
