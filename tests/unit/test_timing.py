"""A family explains a drop only when its evidence is not dated before the drop began;
the derived baseline is the last checkpoint written before it. Facts come from the real
parsers and probes (train log, console log, checkpoints, dataset), held in memory."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from agent.analysis import timing
from agent.analysis.baseline import DiffEntry, diff
from agent.analysis.detect import find
from agent.analysis.diff_keys import comparables
from agent.analysis.symptoms import Symptom, check_all, explain, unexplained
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, rank, verify
from agent.rules.base import Evidence
from agent.rules.fx_trace_race import FxTraceRace
from agent.rules.shape_churn import DatasetShapeChurn
from tests.lib import torch_error_texts as texts
from tests.lib.logs import fact_of, incident_log
from tools.parsers import stdoutlog
from tools.probes import checkpoints, dataset
from tools.probes._common import Context


def console(tmp_path: Path, ledger: Ledger, first_error_after: int | None) -> Fact:
    """Steps printed every 10 up to 1,200; torch's FX error ending two drafter threads
    right after step ``first_error_after`` (None: a log that prints no steps at all)."""
    lines: list[str] = []
    for step in range(10, 1201, 10):
        if first_error_after is not None:
            lines.append(f"step {step} loss 2.0")
        if step == (first_error_after or 690):
            for thread in ("drafter-1", "drafter-2"):
                lines += texts.thread_crash(thread, texts.FX_NESTED_TRACE)
    p = tmp_path / "console.log"
    p.write_text("\n".join(lines) + "\n")
    with io.FileIO(str(p), "r") as f:
        value: Any = stdoutlog.scan(f)
    return ledger.append(Fact(probe="stdoutlog", target="local", value=value))


def the_drop(tmp_path: Path, ledger: Ledger) -> tuple[Fact, Symptom]:
    incident_log(tmp_path / "metrics.jsonl")
    log = fact_of(tmp_path / "metrics.jsonl", ledger)
    drop = timing.subject_drop(check_all(find(log), ledger))
    assert drop is not None and drop.began_step == 690
    return log, drop


def race(ledger: Ledger, ids: list[str]) -> Hypothesis:
    (hyp,) = FxTraceRace().propose(Evidence(ledger, ids))
    return verify(hyp, ledger)


def test_errors_printed_after_the_drop_began_fit_it(tmp_path: Path) -> None:
    """Errors first printed at step 690, where the drop began: the timing claim holds, citing the
    console and the train log, and the family fits the drop."""
    ledger = Ledger()
    log, drop = the_drop(tmp_path, ledger)
    out = console(tmp_path, ledger, first_error_after=690)
    hyp = timing.dated(race(ledger, [log.id, out.id]), ledger, [log.id, out.id], drop)
    (verdict,) = hyp.timing
    assert verdict.outcome == "holds", verdict
    assert verdict.cites == (out.id, log.id)
    assert "= 690" in verdict.sentence and "not before" in verdict.sentence
    assert hyp.timing_fit() == "fits"


def test_errors_printed_long_before_the_drop_do_not_explain_it(tmp_path: Path) -> None:
    """FX errors from step 120 on, in a run that stayed fast to step 690: they were there
    while it ran at full speed, so a verified race is no explanation of the fall."""
    ledger = Ledger()
    log, drop = the_drop(tmp_path, ledger)
    out = console(tmp_path, ledger, first_error_after=120)
    hyp = timing.dated(race(ledger, [log.id, out.id]), ledger, [log.id, out.id], drop)
    (verdict,) = hyp.timing
    assert verdict.outcome == "fails" and "= 120" in verdict.sentence, verdict
    assert hyp.timing_fit() == "does_not_fit"
    # Its own status is untouched: the race may be real, it just does not date the drop.
    assert hyp.status == race(ledger, [log.id, out.id]).status
    verified = hyp.model_copy(update={"status": "verified"})
    kinds = [h.kind for h in [verified] if h.timing_fit() != "does_not_fit"]
    assert unexplained(explain([drop], kinds)) == [drop]


def test_a_console_without_steps_leaves_the_timing_undated(tmp_path: Path) -> None:
    """A console that printed no steps cannot date the errors: the timing is unverifiable and the
    family undated, never ruled out."""
    ledger = Ledger()
    log, drop = the_drop(tmp_path, ledger)
    out = console(tmp_path, ledger, first_error_after=None)
    hyp = timing.dated(race(ledger, [log.id, out.id]), ledger, [log.id, out.id], drop)
    (verdict,) = hyp.timing
    assert verdict.outcome == "unverifiable", verdict
    assert hyp.timing_fit() == "undated"


def test_rank_puts_the_dated_family_first_among_equals(tmp_path: Path) -> None:
    """A family dated to the drop ranks ahead of one whose evidence predates it, even with ten times
    its weight."""
    ledger = Ledger()
    log, drop = the_drop(tmp_path, ledger)
    (tmp_path / "late").mkdir()
    (tmp_path / "early").mkdir()
    late = console(tmp_path / "late", ledger, 690)
    early = console(tmp_path / "early", ledger, 120)
    fits = timing.dated(race(ledger, [log.id, late.id]), ledger, [log.id, late.id], drop)
    old = timing.dated(race(ledger, [log.id, early.id]), ledger, [log.id, early.id], drop)
    # The early one gets more weight; being dated to the drop still comes first.
    old = old.model_copy(update={"weight": fits.weight * 10})
    assert rank([old, fits]) == [fits, old]


def checkpoint(root: Path, name: str, record: dict[str, object]) -> None:
    d = root / "checkpoints" / name
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps(record))


def probed(root: Path, ledger: Ledger) -> tuple[Fact, Fact]:
    """The real checkpoints probe over ``root/checkpoints``, and the dataset probe over
    144 prompts of 64 characters written beside it."""
    ckpt_value: Any = checkpoints.collect({"path": str(root / "checkpoints")}, Context())
    ckpt = ledger.append(Fact(probe="checkpoints", target="local", value=ckpt_value))
    data = root / "prompts.jsonl"
    data.write_text("".join(json.dumps({"p": "x" * 64}) + "\n" for _ in range(144)))
    data_value: Any = dataset.collect({"paths": [str(data)]}, Context())
    return ckpt, ledger.append(Fact(probe="dataset", target="local", value=data_value))


def test_the_derived_baseline_is_the_last_checkpoint_before_the_drop(tmp_path: Path) -> None:
    """Checkpoints at 600 (128 prompts) and 900 (144, written while already slow): the
    diff reads step 600's record, and the churn's timing claim on it holds."""
    ledger = Ledger()
    log, drop = the_drop(tmp_path, ledger)
    checkpoint(tmp_path, "epoch_0_step_600", {"dataset_size": 128})
    checkpoint(tmp_path, "epoch_0_step_900", {"dataset_size": 144})
    ckpt, now = probed(tmp_path, ledger)
    ids = [log.id, ckpt.id, now.id]

    def diffed(before: float | None) -> tuple[DiffEntry, list[Hypothesis]]:
        entries = diff(comparables(ledger, ids, before), ledger, ids, None)
        size = next(d for d in entries if d.key.startswith("dataset.lines:"))
        proposed = DatasetShapeChurn().propose(Evidence(ledger, ids, entries))
        return size, [timing.dated(verify(h, ledger), ledger, ids, drop) for h in proposed]

    size, (hyp,) = diffed(drop.began_step)
    assert (size.baseline_value, size.current_value) == (128, 144)
    assert "@name=epoch_0_step_600" in size.baseline.path
    (dated,) = hyp.timing
    assert dated.outcome == "holds" and "epoch_0_step_600" in dated.sentence, dated
    assert timing.baseline_checkpoints([size.baseline], ledger) == [
        ("epoch_0_step_600", 600, ckpt.id)
    ]
    # Without the drop's step, the newest record (144, written while slow) is the
    # baseline: no growth is seen (the old reading), and the timing says why that
    # baseline shows no working state: it was written after the drop began.
    size, (hyp,) = diffed(None)
    assert size.baseline_value == 144 and not size.differs and hyp.status == "refuted"
    (dated,) = hyp.timing
    assert dated.outcome == "fails" and "= 900" in dated.sentence, dated
    assert timing.baseline_checkpoints([size.baseline], ledger) == [
        ("epoch_0_step_900", 900, ckpt.id)
    ]


def test_shape_churn_is_not_shown_by_more_prompts_alone(tmp_path: Path) -> None:
    """Grown from 128 to 144 prompts, but the baseline never recorded how long its longest
    prompt was: new lengths are not shown, so the churn stays open, never verified."""
    ledger = Ledger()
    checkpoint(tmp_path, "epoch_0_step_690", {"dataset_size": 128})
    ckpt, now = probed(tmp_path, ledger)
    ids = [ckpt.id, now.id]
    entries = diff(comparables(ledger, ids), ledger, ids, None)
    (hyp,) = DatasetShapeChurn().propose(Evidence(ledger, ids, entries))
    checked = verify(hyp, ledger)
    assert [v.outcome for v in checked.verdicts] == ["holds", "unverifiable"], checked.verdicts
    assert checked.status == "unverifiable"


def test_console_lines_around_the_change_are_dated(tmp_path: Path) -> None:
    """Console lines near the drop (the dataset's size, a resume, an FX error) are each dated by the
    step printed before them against the drop's first step, citing both facts."""
    ledger = Ledger()
    log, drop = the_drop(tmp_path, ledger)
    lines = [f"step {s} loss 2.0" for s in range(10, 691, 10)]
    lines += ["  Num examples = 144", "resuming from checkpoints/epoch_0_step_690"]
    lines += texts.thread_crash("drafter-1", texts.FX_NESTED_TRACE)
    p = tmp_path / "c.log"
    p.write_text("\n".join(lines) + "\n")
    with io.FileIO(str(p), "r") as f:
        out = ledger.append(Fact(probe="stdoutlog", target="local", value=stdoutlog.scan(f)))
    said = timing.context_lines(ledger, [log.id, out.id], drop)
    assert [t.split(" (", 1)[1].split(",", 1)[0] for t, _ in said] == [
        "dataset_size",
        "resume",
        "fx_nested_trace",
    ]
    for text, cites in said:
        assert f"[{out.id}]" in text and cites == [out.id, log.id]
        # The dating is the NotBefore claim's checked sentence: the step the console
        # printed before the line against the step the drop began at.
        assert f"; step printed before it = 690 [{out.id}], not before first step of" in text


def test_crash_points_are_the_exceptions_that_ended_a_thread_or_the_log(tmp_path: Path) -> None:
    """A crash point is an exception that ended a thread or the log, told with the thread, the last
    step printed and the lines after it; a traceback the run survived is not one."""
    ledger = Ledger()
    lines = [f"step {s} loss 2.0" for s in range(10, 101, 10)]
    # Logged on the way and survived (a warning-like traceback in the main thread, far
    # from the end): not a crash point.
    lines += ["Traceback (most recent call last):", '  File "t.py", line 1', "KeyError: 'x'"]
    lines += [f"step {s} loss 2.0" for s in range(110, 800, 10)]
    lines += texts.thread_crash("drafter-1", texts.FX_NESTED_TRACE)
    p = tmp_path / "c.log"
    p.write_text("\n".join(lines) + "\n")
    with io.FileIO(str(p), "r") as f:
        out = ledger.append(Fact(probe="stdoutlog", target="local", value=stdoutlog.scan(f)))
    (said,) = timing.crash_lines(ledger, [out.id])
    text, cites = said
    assert text.startswith("crash point: fx_nested_trace at console line ") and cites == [out.id]
    assert "ended thread drafter-1" in text and "after step 790 was printed" in text
    assert f"the log ends right after it: console lines after it = 0 [{out.id}] ≤ 50" in text
