"""The input-bound rule: the live trainer's thread spends most of its samples loading data
(inside ``torch.utils.data``), so the model waits on its input; the trainer's frame it loads
in, its line, and how busy the data-loader children were are cited where the live fact
holds them. Live facts are built in memory as the live probe writes them; the rule's claims
are checked on them."""

from __future__ import annotations

from typing import Any

from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, verify
from agent.rules.base import Evidence
from agent.rules.input_bound import InputBound

WHO = "thread 'MainThread' (tid 7) of pid 4242"


def said(h: Hypothesis) -> list[tuple[str, str]]:
    return [(v.outcome, v.sentence) for v in h.verdicts]


def thread(
    activity: str,
    share: float,
    *,
    own: str | None = None,
    text: str | None = None,
    name: str = "MainThread",
    tid: int = 7,
) -> dict[str, Any]:
    stack = [{"function": "__getitem__", "file": "/w/data.py", "line": 12, "text": text}]
    return {
        "name": name,
        "tid": tid,
        "samples": 20,
        "activity": activity,
        "activity_share": share,
        "own_frame": own,
        "stack": stack,
    }


def checked(*threads: dict[str, Any], **proc: Any) -> tuple[Fact, list[Hypothesis]]:
    ledger = Ledger()
    value = {"processes": [{"pid": 4242, "threads": list(threads), **proc}]}
    live = ledger.append(Fact(probe="live", target="local", value=value))
    found = InputBound().propose(Evidence(ledger, [live.id]))
    return live, [verify(h, ledger) for h in found]


def test_a_thread_loading_data_in_the_trainers_dataset_is_verified() -> None:
    """A thread loading data in 0.85 of its samples, innermost in the dataset's
    ``__getitem__`` at a line read from its file, with two loader children at 0.3 of a
    core: all claims hold, weight 2, and more workers or a faster dataset are predicted to
    bring the speed back."""
    live, [h] = checked(
        thread("data_loading", 0.85, own="/w/data.py:12 __getitem__", text="return decode(row)"),
        children=[5001, 5002],
        children_cpu_share=0.3,
    )
    at = f"[{live.id}]"
    assert h.status == "verified"
    assert said(h) == [
        ("holds", f"what {WHO} mostly did = 'data_loading' {at} equals 'data_loading'"),
        ("holds", f"share of {WHO}'s samples in it = 0.85 {at} ≥ 0.6"),
        (
            "holds",
            f"{WHO}'s innermost line, as its source file has it = 'return decode(row)' {at} "
            "(present)",
        ),
        (
            "holds",
            f"{WHO}'s frame in the trainer's code = '/w/data.py:12 __getitem__' {at} (present)",
        ),
        ("holds", f"cores pid 4242's 2 child process(es) used = 0.3 {at} (present)"),
    ]
    assert h.weight == 2
    assert [(p.expect, p.probe) for p in h.predictions] == [
        (
            "more data-loader workers, or a faster dataset or collate at the frame cited, "
            "bring the speed back",
            "live",
        )
    ]


def test_loading_for_under_sixty_percent_of_samples_is_refuted() -> None:
    """Loading data in 0.4 of its samples is not waiting on input: the share claim fails."""
    live, [h] = checked(thread("data_loading", 0.4))
    assert h.status == "refuted"
    assert said(h) == [
        ("holds", f"what {WHO} mostly did = 'data_loading' [{live.id}] equals 'data_loading'"),
        ("fails", f"share of {WHO}'s samples in it = 0.4 [{live.id}] < 0.6"),
    ]


def test_the_thread_loading_most_is_tested_else_the_busiest_is_refuted() -> None:
    """Of several threads, the one loading data in the largest share is tested; with none
    loading data, the busiest is tested and refuted on what it did."""
    _, [h] = checked(
        thread("data_loading", 0.7, name="a", tid=1),
        thread("compute", 0.99, name="b", tid=2),
        thread("data_loading", 0.9, name="c", tid=3),
    )
    assert said(h)[0][1].startswith("what thread 'c' (tid 3) of pid 4242 mostly did")
    live, [h] = checked(thread("compute", 0.95))
    assert h.status == "refuted"
    assert said(h)[0] == (
        "fails",
        f"what {WHO} mostly did = 'compute' [{live.id}] differs from 'data_loading'",
    )


def test_children_are_cited_only_where_there_are_some_and_their_cpu_was_read() -> None:
    """No children, or children whose CPU could not be read: no claim on them."""
    _, [bare] = checked(thread("data_loading", 0.9))
    _, [unread] = checked(thread("data_loading", 0.9), children=[5001], children_cpu_share=None)
    _, [none] = checked(thread("data_loading", 0.9), children=[], children_cpu_share=0.0)
    assert len(bare.verdicts) == len(unread.verdicts) == len(none.verdicts) == 2


def test_unread_stacks_leave_it_unverifiable() -> None:
    """A live trainer whose threads were none sampled: the family is proposed and
    unverifiable, with what would read the stacks."""
    _, [h] = checked({"tid": 7, "name": "MainThread", "samples": 0, "activity": None})
    assert h.kind == "input_bound"
    assert h.status == "unverifiable"
    assert h.predictions[0].expect.startswith("py-spy is not on the target")


def test_without_a_live_fact_nothing_is_proposed() -> None:
    """No live fact read: no hypothesis."""
    ledger = Ledger()
    failed = ledger.append(Fact(probe="live", target="local", error="timeout: killed"))
    assert InputBound().propose(Evidence(ledger, [failed.id])) == []
