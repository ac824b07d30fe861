"""The dataset-shape-churn rule: the workers meet sequence lengths they never compiled.
Shown by the dataset grown past the baseline (more prompts, and a longer longest one), or,
where no dataset was compared, by torch's own records of a function recompiled for new
sizes: the console's ``TORCH_LOGS=recompiles`` lines first, else the structured trace.
Facts are built in memory as the probes write them; the rule's claims are checked on them."""

from __future__ import annotations

from typing import Any

import pytest

from agent.analysis.baseline import DiffEntry
from agent.model.claims import Ref
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, verify
from agent.rules.base import Evidence
from agent.rules.shape_churn import DatasetShapeChurn

DATA = "/w/data.jsonl"
GUARD = "tensor 'x' size mismatch at index 1. expected 128, actual 160"


def said(h: Hypothesis) -> list[tuple[str, str]]:
    return [(v.outcome, v.sentence) for v in h.verdicts]


def checked(
    ledger: Ledger, ids: list[str], diff: list[DiffEntry] | None = None
) -> list[Hypothesis]:
    found = DatasetShapeChurn().propose(Evidence(ledger, ids, diff or []))
    return [verify(h, ledger) for h in found]


def dataset_fact(ledger: Ledger, *files: tuple[str, int, int]) -> Fact:
    """The dataset probe's fact: per file its path, line count and longest line in bytes."""
    rows = [{"path": p, "lines": n, "line_bytes": {"max": longest}} for p, n, longest in files]
    return ledger.append(Fact(probe="dataset", target="local", value={"files": rows}))


def recorded_fact(ledger: Ledger, size: int, longest: int | None = None) -> Fact:
    """The checkpoint's record of the dataset the known good run trained on."""
    recorded: dict[str, Any] = {"dataset_size": size}
    if longest is not None:
        recorded["dataset_longest"] = longest
    return ledger.append(Fact(probe="checkpoints", target="local", value={"recorded": recorded}))


def lines_entry(now: Fact, base: Fact, path: str, current: int, baseline: int) -> DiffEntry:
    return DiffEntry(
        key=f"dataset.lines:{path}",
        label=f"prompts in {path}",
        current=Ref(
            fact=now.id, path=("files", f"@path={path}", "lines"), label=f"prompts in {path} (now)"
        ),
        baseline=Ref(
            fact=base.id, path=("recorded", "dataset_size"), label=f"prompts in {path} (baseline)"
        ),
        current_value=current,
        baseline_value=baseline,
    )


def longest_entry(now: Fact, base: Fact, path: str, current: int, baseline: int) -> DiffEntry:
    label = f"longest prompt line in {path} (bytes)"
    return DiffEntry(
        key=f"dataset.longest:{path}",
        label=label,
        current=Ref(
            fact=now.id, path=("files", f"@path={path}", "line_bytes", "max"), label=label + " now"
        ),
        baseline=Ref(
            fact=base.id,
            path=("files", f"@path={path}", "line_bytes", "max"),
            label=label + " then",
        ),
        current_value=current,
        baseline_value=baseline,
    )


def test_more_and_longer_prompts_are_verified_churn() -> None:
    """The dataset grew from 128 to 144 prompts and its longest line from 700 to 900 bytes:
    both growths hold, citing the current and the baseline facts, and dynamo's recompiles
    for the new lengths are predicted, not claimed."""
    ledger = Ledger()
    now = dataset_fact(ledger, (DATA, 144, 900))
    then = recorded_fact(ledger, 128)
    snap = dataset_fact(ledger, (DATA, 128, 700))
    diff = [lines_entry(now, then, DATA, 144, 128), longest_entry(now, snap, DATA, 900, 700)]
    [h] = checked(ledger, [then.id, snap.id, now.id], diff)
    assert h.status == "verified"
    assert said(h) == [
        (
            "holds",
            f"prompts in {DATA} (now) = 144 [{now.id}] > prompts in {DATA} (baseline) = 128 "
            f"[{then.id}]",
        ),
        (
            "holds",
            f"longest prompt line in {DATA} (bytes) now = 900 [{now.id}] > longest prompt line "
            f"in {DATA} (bytes) then = 700 [{snap.id}]",
        ),
    ]
    assert [(p.expect, p.probe) for p in h.predictions] == [
        ("dynamo recompiles for the new lengths", "stdoutlog with TORCH_LOGS=recompiles")
    ]
    assert h.fault_alone is True


def test_more_prompts_no_longer_than_before_are_refuted() -> None:
    """More prompts whose longest is no longer than the baseline's bring no new shape: the
    longest-line claim fails and says what the facts hold."""
    ledger = Ledger()
    now = dataset_fact(ledger, (DATA, 144, 700))
    then = recorded_fact(ledger, 128)
    snap = dataset_fact(ledger, (DATA, 128, 700))
    diff = [lines_entry(now, then, DATA, 144, 128), longest_entry(now, snap, DATA, 700, 700)]
    [h] = checked(ledger, [then.id, snap.id, now.id], diff)
    assert h.status == "refuted"
    assert said(h)[1] == (
        "fails",
        f"longest prompt line in {DATA} (bytes) now = 700 [{now.id}] ≤ longest prompt line "
        f"in {DATA} (bytes) then = 700 [{snap.id}]",
    )


def test_an_unchanged_prompt_count_is_still_proposed_and_refuted() -> None:
    """A compared dataset whose size did not change is looked at, not skipped: the churn is
    refuted on the equal counts, so the report shows what was checked."""
    ledger = Ledger()
    now = dataset_fact(ledger, (DATA, 128, 700))
    then = recorded_fact(ledger, 128, longest=700)
    [h] = checked(ledger, [then.id, now.id], [lines_entry(now, then, DATA, 128, 128)])
    assert h.status == "refuted"
    assert said(h)[0] == (
        "fails",
        f"prompts in {DATA} (now) = 128 [{now.id}] ≤ prompts in {DATA} (baseline) = 128 "
        f"[{then.id}]",
    )


def test_without_a_longest_entry_the_longest_lines_are_read_beside_the_counts() -> None:
    """Where the diff compared no longest line, the rule compares the dataset's longest
    line now with the ``dataset_longest`` the baseline recorded beside its prompt count."""
    ledger = Ledger()
    now = dataset_fact(ledger, (DATA, 144, 900))
    then = recorded_fact(ledger, 128, longest=700)
    [h] = checked(ledger, [then.id, now.id], [lines_entry(now, then, DATA, 144, 128)])
    assert h.status == "verified"
    assert said(h)[1] == (
        "holds",
        f"longest prompt line in {DATA} (bytes, now) = 900 [{now.id}] > longest prompt line "
        f"in {DATA} (bytes, baseline) = 700 [{then.id}]",
    )


def test_each_grown_file_is_a_hypothesis_of_its_own() -> None:
    """Two dataset files compared: one hypothesis per file, in the diff's order, each
    citing only its own file's counts."""
    ledger = Ledger()
    other = "/w/extra.jsonl"
    now = dataset_fact(ledger, (DATA, 144, 900), (other, 10, 50))
    then = recorded_fact(ledger, 128, longest=700)
    diff = [lines_entry(now, then, DATA, 144, 128), lines_entry(now, then, other, 10, 8)]
    first, second = checked(ledger, [then.id, now.id], diff)
    assert said(first)[0][1].startswith(f"prompts in {DATA} (now) = 144")
    assert said(second)[0][1].startswith(f"prompts in {other} (now) = 10")
    # 50 bytes now against the 700 recorded: the second file brings no longer line.
    assert (first.status, second.status) == ("verified", "refuted")


def recompiles(*functions: Any) -> dict[str, Any]:
    """A console fact's value holding torch's recompile records, per function."""
    return {"torch_logs": {"recompiles": {"functions": list(functions)}}}


def fn(name: str, sizes: int | None, reason: str | None = GUARD) -> dict[str, Any]:
    out: dict[str, Any] = {"function": name, "file": "model.py", "line": 40}
    out["distinct_new_sizes"] = sizes
    if reason is not None:
        out["guard_failures"] = [{"reason": reason}]
    return out


def test_torch_logged_recompiles_for_new_sizes_are_churn() -> None:
    """With no dataset compared, a function torch logged recompiling for 3 new sizes is
    churn: at least 2 sizes, the first guard failure quoted; a compile cost, so no fault
    on its own, and the prediction asks the console with TORCH_LOGS=recompiles."""
    ledger = Ledger()
    log = ledger.append(Fact(probe="stdoutlog", target="local", value=recompiles(fn("forward", 3))))
    [h] = checked(ledger, [log.id])
    assert h.status == "verified"
    assert said(h) == [
        (
            "holds",
            f"distinct new sizes torch recompiled 'forward' (model.py:40) for = 3 [{log.id}] ≥ 2",
        ),
        (
            "holds",
            "the guard failure behind 'forward' (model.py:40)'s first logged recompile = "
            f"{GUARD!r} [{log.id}] (present)",
        ),
    ]
    assert h.fault_alone is False
    assert [p.probe for p in h.predictions] == ["stdoutlog with TORCH_LOGS=recompiles"]


@pytest.mark.parametrize(
    ("functions", "chosen"),
    [
        ([fn("a", 1)], None),
        ([fn("a", None), fn("b", 0)], None),
        ([], None),
        ([fn("a", 2)], "a"),
        ([fn("a", 2), fn("b", 5), fn("c", 5)], "b"),
        (["not a record", fn("b", 4)], "b"),
    ],
    ids=[
        "one-new-size-is-dynamic-shapes-at-work",
        "no-sizes-counted",
        "no-functions",
        "two-sizes-are-churn",
        "most-sizes-first-logged-among-equals",
        "a-record-that-is-not-a-mapping-is-skipped",
    ],
)
def test_the_function_with_the_most_new_sizes_is_tested(
    functions: list[Any], chosen: str | None
) -> None:
    """The function cited is the one logged with the most distinct new sizes (the first
    logged among equals), and only at 2 sizes or more: dynamo's automatic dynamic shapes
    recompile once, on the second size."""
    ledger = Ledger()
    log = ledger.append(Fact(probe="stdoutlog", target="local", value=recompiles(*functions)))
    found = checked(ledger, [log.id])
    if chosen is None:
        assert found == []
    else:
        [h] = found
        assert f"recompiled '{chosen}' (model.py:40)" in said(h)[0][1]


def test_a_recompile_logged_without_its_guard_failure_is_left_open() -> None:
    """Torch's record of the recompiles without a guard failure cannot show the new sizes'
    cause: that claim is unverifiable, never taken as shown."""
    ledger = Ledger()
    log = ledger.append(
        Fact(probe="stdoutlog", target="local", value=recompiles(fn("forward", 3, reason=None)))
    )
    [h] = checked(ledger, [log.id])
    assert h.status == "unverifiable"
    assert said(h)[1] == (
        "unverifiable",
        f"{log.id} (stdoutlog) has no the guard failure behind 'forward' (model.py:40)'s first "
        "logged recompile",
    )


def trace(functions: list[Any], compiles: list[Any], rank: int | None = 1) -> dict[str, Any]:
    """A torch_trace fact's value: one trace file with its functions and compiles."""
    file: dict[str, Any] = {"functions": functions, "compiles": compiles}
    if rank is not None:
        file["rank"] = rank
    return {"traces": [file]}


FORWARD = {"frame": 0, "function": "forward", "file": "model.py", "line": 40, "recompiles": 3}


def test_the_structured_trace_shows_churn_where_the_console_does_not() -> None:
    """A console without recompile records, and a structured trace of rank 1 in which a
    function recompiled 3 times behind a size guard: churn, cited from the trace file."""
    ledger = Ledger()
    log = ledger.append(Fact(probe="stdoutlog", target="local", value={"signatures": {}}))
    row = {"frame": 0, "compile_id": "0/1", "guard_failure": GUARD}
    tr = ledger.append(Fact(probe="torch_trace", target="local", value=trace([FORWARD], [row])))
    [h] = checked(ledger, [log.id, tr.id])
    assert h.status == "verified"
    assert said(h) == [
        (
            "holds",
            "recompiles of 'forward' (model.py:40) in rank 1's structured trace (torch) = 3 "
            f"[{tr.id}] ≥ 2",
        ),
        (
            "holds",
            "the guard failure behind compile 0/1 of 'forward' (model.py:40) = "
            f"{GUARD!r} [{tr.id}] matches /size mismatch at index/",
        ),
    ]
    assert h.fault_alone is False
    assert [p.probe for p in h.predictions] == ["torch_trace"]


def test_a_failed_console_leaves_the_trace_to_show_it() -> None:
    """A console that could not be read is no evidence either way: the trace decides."""
    ledger = Ledger()
    log = ledger.append(Fact(probe="stdoutlog", target="local", error="not_found: console.log"))
    row = {"frame": 0, "compile_id": "0/2", "guard_failure": GUARD}
    tr = ledger.append(Fact(probe="torch_trace", target="local", value=trace([FORWARD], [row])))
    [h] = checked(ledger, [log.id, tr.id])
    assert h.cites == [tr.id]


def test_the_console_is_read_before_the_trace() -> None:
    """Both the console and the trace show churn: one hypothesis, from the console."""
    ledger = Ledger()
    log = ledger.append(Fact(probe="stdoutlog", target="local", value=recompiles(fn("forward", 3))))
    row = {"frame": 0, "compile_id": "0/1", "guard_failure": GUARD}
    tr = ledger.append(Fact(probe="torch_trace", target="local", value=trace([FORWARD], [row])))
    [h] = checked(ledger, [log.id, tr.id])
    assert h.cites == [log.id]


def test_a_compared_dataset_is_read_before_torchs_records() -> None:
    """A dataset compared with the baseline decides the family: torch's recompile records
    beside it add no second hypothesis."""
    ledger = Ledger()
    now = dataset_fact(ledger, (DATA, 144, 900))
    then = recorded_fact(ledger, 128, longest=700)
    log = ledger.append(Fact(probe="stdoutlog", target="local", value=recompiles(fn("forward", 3))))
    ids = [then.id, now.id, log.id]
    [h] = checked(ledger, ids, [lines_entry(now, then, DATA, 144, 128)])
    assert h.cites == [now.id, then.id]
    assert h.fault_alone is True


@pytest.mark.parametrize(
    ("functions", "compiles"),
    [
        (
            [{**FORWARD, "recompiles": 1}],
            [{"frame": 0, "compile_id": "0/1", "guard_failure": GUARD}],
        ),
        ([FORWARD], [{"frame": 0, "compile_id": "0/1", "guard_failure": "___check_type_id"}]),
        ([FORWARD], [{"frame": 7, "compile_id": "7/1", "guard_failure": GUARD}]),
        ([FORWARD], []),
        (
            [{**FORWARD, "recompiles": "3"}],
            [{"frame": 0, "compile_id": "0/1", "guard_failure": GUARD}],
        ),
    ],
    ids=[
        "one-recompile",
        "guard-on-a-type-not-a-size",
        "size-guard-of-another-frame",
        "no-compiles-recorded",
        "a-count-that-is-not-a-number",
    ],
)
def test_the_trace_shows_no_churn_without_repeated_size_recompiles(
    functions: list[Any], compiles: list[Any]
) -> None:
    """No hypothesis from the trace unless one function recompiled at least twice and a
    compile of that same frame failed a size guard."""
    ledger = Ledger()
    tr = ledger.append(Fact(probe="torch_trace", target="local", value=trace(functions, compiles)))
    assert checked(ledger, [tr.id]) == []


def test_nothing_to_read_proposes_nothing() -> None:
    """No dataset compared, no console, no trace: the family is not proposed."""
    ledger = Ledger()
    tr = ledger.append(Fact(probe="torch_trace", target="local", error="not_found: no trace"))
    assert checked(ledger, [tr.id]) == []
