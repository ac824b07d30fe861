"""The train-log summary's speed figures, held against an independent reading of the raw
log (``tests/lib/oracle/``): hand-computed tables, a corrupted summary the oracle must
catch, and generated logs with resumes, gaps, counter resets and rounding."""

from __future__ import annotations

import copy
import io
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.lib import oracle
from tools.parsers import trainlog

# Reproducible in CI: the same examples every run, none remembered between runs.
PROPERTY = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
# Timestamps to the millisecond, as time.time() is logged: a clock written to the whole
# second is good to half a second only, too coarse to difference over 2 s (speed_error).
T0 = 1_700_000_000.125


def summarize(path: Path, windows: int, workers: int = 1) -> dict[str, Any]:
    with io.FileIO(str(path), "r") as f:
        out: dict[str, Any] = trainlog.summarize_log(f, windows=windows, workers=workers)
    return out


def write(path: Path, entries: list[dict[str, Any]]) -> Path:
    """JSON lines, or a ``trainer_state.json`` whose ``log_history`` holds them."""
    if path.name == "trainer_state.json":
        path.write_text(json.dumps({"log_history": entries, "global_step": 0}, indent=1))
    else:
        path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


def hf_step(step: int, tokens: int, runtime: float, digits: int = 4) -> dict[str, Any]:
    """A Trainer step entry with ``speed_metrics``: averages since the segment began."""
    return {
        "loss": 1.5,
        "step": step,
        "num_input_tokens_seen": tokens,
        "train_runtime": round(runtime, digits),
        "train_tokens_per_second": round(tokens / runtime, digits),
    }


# -- tables ------------------------------------------------------------------------


def stated_log(tmp_path: Path) -> Path:
    """``tok/s`` at each record; a restart at line 10 (the step goes back to 7); line 9
    has no rate; the run slows from 400 to 200 after the restart."""
    rates = [100.0, 300.0, 200.0, 400.0, 410.0, 390.0, 405.0, 395.0, None, 200.0, 210.0, 190.0]
    steps = [1, 2, 3, 4, 5, 6, 7, 8, 9, 7, 8, 9]
    recs = [
        {"step": s, "loss": 2.0, **({"tok/s": r} if r is not None else {})}
        for s, r in zip(steps, rates, strict=True)
    ]
    return write(tmp_path / "train_log.jsonl", recs)


def average_state(tmp_path: Path) -> Path:
    """Trainer's state: 1,000 tokens a step at 1 s a step to step 60 (an evaluation after
    step 30, a run summary after step 60); the resume restarts ``train_runtime`` with the
    steps continuing at 70; from step 100 a step takes 2 s (500 tokens/s)."""
    hist: list[dict[str, Any]] = []
    for s in (10, 20, 30, 40, 50, 60):
        hist.append(hf_step(s, 1000 * s, s + 0.0123))
        if s == 30:
            hist.append({"eval_loss": 1.4, "step": 30})
    hist.append({"train_loss": 1.6, "train_runtime": 60.5, "train_tokens_per_second": 991.7})
    for s in (70, 80, 90, 100, 110, 120):
        steps = s - 60
        runtime = steps + max(0, s - 90) + 0.0456  # 2 s a step after step 90
        hist.append(hf_step(s, 1000 * steps, runtime))
    return write(tmp_path / "trainer_state.json", hist)


def running_total() -> list[dict[str, Any]]:
    """A running ``num_input_tokens_seen`` over ``time``: 512 tokens a step, 2 s a step,
    to step 6; a restart from the checkpoint at step 4 (step and count go back), then
    4 s a step."""
    recs = [
        {"step": s, "loss": 2.0, "num_input_tokens_seen": 512 * s, "time": T0 + 2 * s}
        for s in range(1, 7)
    ]
    return recs + [
        {"step": s, "loss": 2.0, "num_input_tokens_seen": 512 * s, "time": T0 + 30 + 4 * s}
        for s in range(5, 10)
    ]


def derived_log(tmp_path: Path) -> Path:
    return write(tmp_path / "train_log.jsonl", running_total())


def derived_csv(tmp_path: Path) -> Path:
    """The same as CSV rows under a header: line 2 is the first record."""
    rows = [",".join(map(str, r.values())) for r in running_total()]
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss,num_input_tokens_seen,time\n" + "\n".join(rows) + "\n")
    return path


def console_log(tmp_path: Path) -> Path:
    """Trainer's console: its printed dicts (700 tokens every 1.5 s) between progress
    bars, after two lines of start-up; the first record is line 3."""
    lines = ["Loading checkpoint shards...", "  0%|          | 0/120 [00:00<?, ?it/s]"]
    for s in range(1, 13):
        lines.append(repr(hf_step(s, 700 * s, 1.5 * s + 0.0123)))
        lines.append(f" {s * 8}%|#   | {s}/120 [00:0{s}<00:10, 1.2it/s]")
    path = tmp_path / "train.log"
    path.write_text("\n".join(lines) + "\n")
    return path


class Case(NamedTuple):
    make: Callable[[Path], Path]
    kind: str
    segments: list[list[int]]  # [first line, last line, records]
    windows: list[float]  # each window's speed, by hand
    early: float
    recent: float


CASES = {
    "stated tok/s": Case(
        stated_log,
        "stated",
        [[1, 9, 9], [10, 12, 3]],
        [200.0, 400.0, 400.0, 200.0],  # medians; lines 7-9: (405 + 395) / 2, 9 has none
        400.0,
        200.0,
    ),
    "trainer_state average": Case(
        average_state,
        "stated_average",
        [[1, 7, 6], [9, 14, 6]],  # log_history places; 4 is the evaluation, 8 the summary
        [1000.0, 1000.0, 1000.0, 500.0],
        1000.0,
        500.0,
    ),
    "derived running total": Case(
        derived_log,
        "derived",
        [[1, 6, 6], [7, 11, 5]],
        [256.0, 256.0, 128.0, 128.0],
        256.0,
        128.0,
    ),
    "derived running total, CSV": Case(
        derived_csv,
        "derived",
        [[2, 7, 6], [8, 12, 5]],
        [256.0, 256.0, 128.0, 128.0],
        256.0,
        128.0,
    ),
    "console dict lines": Case(
        console_log,
        "stated_average",
        [[3, 25, 12]],
        [700 / 1.5] * 2,  # windows count records: 2 of the 4 the lines would make
        700 / 1.5,
        700 / 1.5,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_oracle_agrees_with_the_parser_and_with_the_hand(tmp_path: Path, name: str) -> None:
    """Each kind of speed in each format: the parser's figures are the oracle's, and
    both are what a person computes from the log with a pencil. For the Trainer's
    rounded averages the hand's figure is the true rate, within the stated error."""
    case = CASES[name]
    path = case.make(tmp_path)
    out = summarize(path, windows=4)
    assert oracle.check(path, out) == []
    speed = out["speed"]
    assert speed["kind"] == case.kind
    assert [[s["first_line"], s["last_line"], s["records"]] for s in speed["segments"]] == (
        case.segments
    )
    got = [w["speed"] for w in out["windows"]]
    errors = [w.get("speed_error") or 0.0 for w in out["windows"]]
    for g, want, err in zip(got, case.windows, errors, strict=True):
        assert abs(g - want) <= max(err, 1e-9 * want)
    assert speed["early"]["value"] == pytest.approx(case.early, rel=1e-3)
    assert speed["recent"]["value"] == pytest.approx(case.recent, rel=1e-3)


def test_the_trainer_state_cites_log_history_places(tmp_path: Path) -> None:
    """The resume's window starts its difference at the segment's first entry (place 9),
    never at the last entry before the resume (place 7); the slowdown's window starts
    at the segment's last entry before it (place 11)."""
    path = average_state(tmp_path)
    out = summarize(path, windows=4)
    assert out["line_unit"] == "log_history entry"
    cited = [(w["speed_from"]["line"], w["speed_to"]["line"]) for w in out["windows"]]
    assert cited == [(1, 3), (3, 7), (9, 11), (11, 14)]
    entry = json.loads(path.read_text())["log_history"][13]
    assert out["windows"][3]["speed_to"]["seconds"] == entry["train_runtime"] == 90.0456
    count = out["windows"][3]["speed_to"]["count"]
    assert count == entry["train_tokens_per_second"] * entry["train_runtime"]
    assert count == pytest.approx(60_000, rel=1e-6)


def corruptions() -> dict[str, Any]:
    def speed(out: dict[str, Any]) -> None:
        out["windows"][2]["speed"] *= 1.1

    def count(out: dict[str, Any]) -> None:
        out["windows"][1]["speed_to"]["count"] += 1.0

    def across(out: dict[str, Any]) -> None:  # the resume's window from before the resume
        out["windows"][2]["speed_from"] = dict(out["windows"][1]["speed_to"])

    def recent(out: dict[str, Any]) -> None:
        out["speed"]["recent"]["value"] *= 0.9

    def early(out: dict[str, Any]) -> None:
        out["speed"]["early"]["value"] *= 1.1

    def segments(out: dict[str, Any]) -> None:
        out["speed"]["segments"].pop()

    def withheld(out: dict[str, Any]) -> None:  # no figure, and no error bound to say why
        out["windows"][0]["speed"] = None
        out["windows"][0]["speed_error"] = 0.0

    return {f.__name__: f for f in (speed, count, across, recent, early, segments, withheld)}


@pytest.mark.parametrize("corrupt", list(corruptions()))
def test_a_corrupted_summary_is_caught(tmp_path: Path, corrupt: str) -> None:
    """The oracle is itself checked: a figure changed by 10 %, a cited count off by one
    token, a difference taken across the resume, a segment dropped, a figure withheld
    without cause: each is a mismatch."""
    path = average_state(tmp_path)
    out = summarize(path, windows=4)
    bad = copy.deepcopy(out)
    corruptions()[corrupt](bad)
    assert oracle.check(path, bad) != []


# -- generated logs ----------------------------------------------------------------


class Run(NamedTuple):
    entries: list[dict[str, Any]]
    truth: dict[int, tuple[float, float, int]]  # line -> true count, seconds, segment


intervals = st.lists(
    st.tuples(
        st.integers(1, 5),  # steps between logs
        st.floats(0.05, 5.0),  # seconds a step
        st.integers(1, 4000),  # tokens a step
        st.sampled_from([0.0, 0.0, 0.0, 300.0]),  # a pause before this log (a gap)
    ),
    min_size=1,
    max_size=12,
)
segments = st.lists(st.tuples(st.integers(0, 8), intervals), min_size=1, max_size=4)


@st.composite
def trainer_runs(draw: st.DrawFn) -> Run:
    """Trainer's step entries: each segment a resume that restarts ``train_runtime``
    and its token count, its steps from a checkpoint up to ``back`` steps before the
    last one logged; evaluations and a run summary between; rounded to 3 or 4 places."""
    digits = draw(st.sampled_from([3, 4]))
    entries: list[dict[str, Any]] = []
    truth: dict[int, tuple[float, float, int]] = {}
    step = 0
    for seg, (back, logs) in enumerate(draw(segments)):
        step, tokens, runtime = max(0, step - back), 0, 0.0
        for every, secs, tok, pause in logs:
            step, tokens, runtime = step + every, tokens + tok * every, runtime + pause
            runtime += secs * every
            entries.append(hf_step(step, tokens, runtime, digits))
            truth[len(entries)] = (tokens, runtime, seg)
            if draw(st.booleans()) and draw(st.booleans()):
                entries.append({"eval_loss": 1.0, "step": step})
        entries.append(
            {"train_loss": 1.0, "train_runtime": round(runtime, digits), "step": step}
            | {"train_tokens_per_second": round(tokens / runtime, digits)}
        )
    return Run(entries, truth)


@st.composite
def counter_runs(draw: st.DrawFn) -> Run:
    """A running ``num_input_tokens_seen`` over an epoch ``time`` (3 places): a restart
    goes back to a checkpoint's step and count, or keeps the step and counts from 0."""
    entries: list[dict[str, Any]] = []
    truth: dict[int, tuple[float, float, int]] = {}
    step, tokens, t = 0, 0, T0
    for seg, (back, logs) in enumerate(draw(segments)):
        if seg and back:
            ckpt = max(0, step - back)
            tokens, step = tokens * ckpt // max(1, step), ckpt
        elif seg:
            tokens = 0
        t += 20.0 * seg
        for every, secs, tok, pause in logs:
            step, tokens, t = step + every, tokens + tok * every, t + pause + secs * every
            entries.append(
                {"step": step, "loss": 2.0, "num_input_tokens_seen": tokens, "time": round(t, 3)}
            )
            truth[len(entries)] = (tokens, t, seg)
    return Run(entries, truth)


@st.composite
def stated_runs(draw: st.DrawFn) -> Run:
    """``tok/s`` at each record, rounded to 1 or 3 places, some records without it;
    restarts that take the step back."""
    places = draw(st.sampled_from([1, 3]))
    entries: list[dict[str, Any]] = []
    step = 0
    for back, logs in draw(segments):
        step = max(0, step - back)
        for every, secs, tok, _ in logs:
            step += every
            rec: dict[str, Any] = {"step": step, "loss": 2.0}
            if tok % 7:
                rec["tok/s"] = round(tok / secs, places)
            entries.append(rec)
    return Run(entries, {})


def held(tmp_path: Path, name: str, run: Run, windows: int, workers: int = 1) -> dict[str, Any]:
    path = write(tmp_path / name, run.entries)
    out = summarize(path, windows, workers)
    assert oracle.check(path, out) == []
    return out


@PROPERTY
@given(run=trainer_runs(), windows=st.integers(2, 12))
def test_trainer_state_averages_agree(tmp_path: Path, run: Run, windows: int) -> None:
    """Trainer's state with resumes, pauses, evaluations and rounded averages: the
    parser's figures are the oracle's."""
    held(tmp_path, "trainer_state.json", run, windows)


@PROPERTY
@given(run=trainer_runs(), windows=st.integers(2, 12), summaries=st.booleans())
def test_trainer_averages_as_json_lines_agree(
    tmp_path: Path, run: Run, windows: int, summaries: bool
) -> None:
    """The same entries as JSON lines (a callback's log): evaluations and run summaries
    are records there (a summary repeats its step, which starts no segment), with or
    without the summaries the figures are the oracle's."""
    if not summaries:
        run = run._replace(entries=[e for e in run.entries if "train_loss" not in e])
    held(tmp_path, "train_log.jsonl", run, windows)


@PROPERTY
@given(run=counter_runs(), windows=st.integers(2, 12))
def test_running_totals_agree(tmp_path: Path, run: Run, windows: int) -> None:
    """A running token count over timestamps, with restarts and counter resets."""
    held(tmp_path, "train_log.jsonl", run, windows)


@PROPERTY
@given(run=stated_runs(), windows=st.integers(2, 12))
def test_stated_rates_agree(tmp_path: Path, run: Run, windows: int) -> None:
    """A stated rate per record, with restarts and records that lack it."""
    held(tmp_path, "train_log.jsonl", run, windows)


# Two entries rounded to 3 places: 1 token at 2 s (0.5 tokens/s on average), 5 tokens at
# 2.4375 s (written 2.438 and 2.051). The window's rate is 4 / 0.4375 = 9.1429 tokens/s;
# from the text 9.1332, 0.0097 off, and speed_error says 0.0080. The bound counts the
# rounding of each count (t x rate) but not that of the seconds the difference is divided
# by: (R - r) x (seconds' rounding) was left out, R the window's rate, r a stated average,
# largest where the window runs faster than the average (after a slow start). Kept as the
# example that failed before the bound added |rate| x (seconds' rounding) / dt.
SLOW_START = Run(
    [hf_step(1, 1, 2.0, 3), hf_step(2, 5, 2.4375, 3)], {1: (1, 2.0, 0), 2: (5, 2.4375, 0)}
)


@PROPERTY
@example(run=SLOW_START, windows=2)
@given(run=trainer_runs(), windows=st.integers(2, 12))
def test_the_stated_error_bounds_the_rounding(tmp_path: Path, run: Run, windows: int) -> None:
    """A window's figure from rounded averages is within its ``speed_error`` of the rate
    the unrounded tokens and seconds give, wherever both cited entries are of one real
    segment (a resume the log cannot show, the runtime not going back, is left out)."""
    out = held(tmp_path, "trainer_state.json", run, windows)
    for w in out["windows"]:
        if w.get("speed") is None:
            continue
        a, b = run.truth.get(w["speed_from"]["line"]), run.truth.get(w["speed_to"]["line"])
        if a is None or b is None or a[2] != b[2]:
            continue
        true = (b[0] - a[0]) / (b[1] - a[1])
        assert math.isclose(w["speed"], true, abs_tol=w["speed_error"], rel_tol=1e-9), w


# A restart exactly where the second of two forked pieces begins (line 3: the step goes
# back, a second process's count and clock run on): read in one process, two segments and
# a recent rate of 50 tokens/s from lines 3-4; read in two pieces, the piece's first record
# was once joined to the first piece's segment unchecked, giving 375 tokens/s, a
# difference from line 2 (the first process) to line 4 (the second).
RESTART_AT_CUT = Run(
    [
        {"step": 1, "num_input_tokens_seen": 1000, "time": 10.0, "pad": "x" * 40},
        {"step": 2, "num_input_tokens_seen": 2000, "time": 20.0},
        {"step": 1, "num_input_tokens_seen": 9000, "time": 30.0},
        {"step": 2, "num_input_tokens_seen": 9500, "time": 40.0},
    ],
    {},
)

# One segment of 40 records read in two pieces (the second from line 22): the recent
# figure spans the last 4 records (a quarter of the last piece's 18) where the whole
# segment's quarter is 10.
ONE_SEGMENT = Run([{"step": s, "tok/s": 100.0 + s} for s in range(1, 41)], {})
# The same as a running count, 3 windows asked: the second piece's first window (lines
# 22-35) takes its difference from line 22, its own first record, where the formula takes
# the segment's last record before the window, line 21; and the recent span is 4 again.
COUNTER_ONE_SEGMENT = Run(
    [{"step": s, "num_input_tokens_seen": 100 * s, "time": 1000.0 + s} for s in range(1, 41)],
    {},
)


# A piece whose first window holds no counter point (a run summary, an evaluation): the
# first window that does must take its difference from the previous piece's last point
# (line 4), not from its own first (line 6). Found by this test; kept.
SUMMARY_AT_CUT = Run(
    [
        {"loss": 1.5, "step": 1, "num_input_tokens_seen": 1, "train_runtime": 1.0,
         "train_tokens_per_second": 1.0},
        {"train_loss": 1.0, "train_runtime": 1.0, "step": 1, "train_tokens_per_second": 1.0},
        {"loss": 1.5, "step": 2, "num_input_tokens_seen": 1, "train_runtime": 1.0,
         "train_tokens_per_second": 1.0},
        {"loss": 1.5, "step": 3, "num_input_tokens_seen": 2, "train_runtime": 2.0,
         "train_tokens_per_second": 1.0},
        {"eval_loss": 1.0, "step": 3},
        {"loss": 1.5, "step": 4, "num_input_tokens_seen": 3, "train_runtime": 3.0,
         "train_tokens_per_second": 1.0},
        {"loss": 1.5, "step": 5, "num_input_tokens_seen": 4, "train_runtime": 4.0,
         "train_tokens_per_second": 1.0},
        {"train_loss": 1.0, "train_runtime": 4.0, "step": 5, "train_tokens_per_second": 1.0},
    ],
    {1: (1, 1.0, 0), 3: (1, 1.0, 1), 4: (2, 2.0, 1), 6: (3, 3.0, 1), 7: (4, 4.0, 1)},
)  # fmt: skip


@PROPERTY
@example(run=SUMMARY_AT_CUT, windows=8)
@example(run=RESTART_AT_CUT, windows=200)
@example(run=ONE_SEGMENT, windows=200)
@example(run=COUNTER_ONE_SEGMENT, windows=3)
@given(run=counter_runs() | stated_runs() | trainer_runs(), windows=st.integers(2, 12))
def test_a_forked_read_agrees(tmp_path: Path, run: Run, windows: int) -> None:
    """Read in two forked pieces (what the probe does for a large log on idle CPUs), the
    figures are still the oracle's: a piece boundary is no run segment's boundary, and a
    restart at one still is."""
    held(tmp_path, "train_log.jsonl", run, windows, workers=2)
