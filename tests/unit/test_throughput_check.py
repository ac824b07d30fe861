"""The throughput check of a health result (``agent.health.throughput_check``): the judged
tokens/s against the baseline's, failed below 0.8× it, with the message every output prints;
which baseline was used, citing what it was read from; and the figures a result carries,
read from the same facts as the verdict."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from agent.analysis.baseline import DiffEntry, Snapshot
from agent.analysis.symptoms import Symptom
from agent.graph.state import DiagnosisState
from agent.health.model import Judged
from agent.health.throughput_check import (
    baseline_used,
    drop_words,
    result_metrics,
    throughput_check,
    verified_drops,
)
from agent.model.claims import Ref
from agent.model.facts import Fact, Ledger
from tools.parsers.trainlog import EARLY_WHY

GROUP = "role=drafter"
RECENT = ("groups", GROUP, "throughput", "recent_median")
EARLY = ("groups", GROUP, "throughput", "early_median")
LABEL = "drafter tokens/s (median of the last 50 records)"


def trainlog(recent: float | None, early: float = 3000.0, **extra: Any) -> Fact:
    """A train-log fact of one drafter series: its recent and early medians, its last step
    (1,200) and the time of its last record."""
    throughput: dict[str, Any] = {"early_median": early, "recent_records": 50}
    if recent is not None:
        throughput["recent_median"] = recent
    value = {
        "groups": {GROUP: {"throughput": throughput, "steps": {"last": 1200}}},
        "time": {"last": 1000.0},
        **extra,
    }
    return Fact(probe="trainlog", target="local", argv=("python3", "-"), value=value)


def setup(
    recent: float | None, early: float = 3000.0, *, compared: bool = True
) -> tuple[Ledger, DiagnosisState, Fact]:
    """A ledger holding the train log, and a state whose diff compares its recent median
    with its early one (``compared``), as a derived baseline does."""
    ledger = Ledger()
    log = ledger.append(trainlog(recent, early))
    diff = [
        DiffEntry(
            key="throughput.drafter",
            label=LABEL,
            baseline=Ref(fact=log.id, path=EARLY),
            current=Ref(fact=log.id, path=RECENT),
            baseline_value=early,
            current_value=recent,
        )
    ]
    state = DiagnosisState(target="local", facts=[log.id], diff=diff if compared else [])
    return ledger, state, log


@pytest.mark.parametrize(
    ("recent", "status", "message"),
    [
        (
            2000.0,
            "failed",
            "drafter tokens/s 2,000 is 0.67× the baseline's 3,000: regressed (regressed below "
            "0.8× the baseline's, 2,400; baseline: derived)",
        ),
        (
            2500.0,
            "passed",
            "drafter tokens/s 2,500 is 0.83× the baseline's 3,000: not regressed (regressed "
            "below 0.8× the baseline's, 2,400; baseline: derived)",
        ),
        (
            3600.0,
            "passed",
            "drafter tokens/s 3,600 is 1.20× the baseline's 3,000: not regressed (regressed "
            "below 0.8× the baseline's, 2,400; baseline: derived)",
        ),
    ],
    ids=["below-the-line", "slower-but-above-it", "faster"],
)
def test_the_check_fails_exactly_below_the_ratio_and_says_by_how_much(
    recent: float, status: str, message: str
) -> None:
    """Judged against 3,000 tokens/s, the check fails below 2,400 (0.8×) and passes above,
    a slower run included; the message gives both figures, the ratio, the line and which
    baseline it was."""
    ledger, state, log = setup(recent)
    check, judged = throughput_check(ledger, state, "derived")
    assert (check.name, check.title) == ("throughput", "tokens/s against the baseline")
    assert (check.status, check.message) == (status, message)
    assert judged == Judged(
        label=LABEL, value=recent, value_fact=log.id, baseline=3000.0, baseline_fact=log.id
    )
    (line,) = check.lines
    assert line.cites == [log.id]
    assert line.outcome == ("holds" if status == "failed" else "fails")


def test_a_regression_names_the_drops_inside_the_run_beside_the_verdict() -> None:
    """When the throughput regressed and the run's own log shows a verified drop, the
    message adds where it fell and which families explain it (or that none does)."""
    ledger, state, _ = setup(2000.0)
    drop = Symptom(
        kind="throughput_drop",
        series="drafter tokens/s",
        subject=True,
        claims=(),
        status="verified",
        step=900,
        ratio=0.5,
    )
    state = state.model_copy(update={"symptoms": [drop]})
    check, _ = throughput_check(ledger, state, "derived")
    assert check.message.endswith(
        "baseline: derived); drafter tokens/s fell to 0.50× at step 900 "
        "(no verified family explains it)"
    )


def test_a_pass_leaves_the_drops_to_the_symptoms_check() -> None:
    """A run above the line is not told its drops here: the symptoms check tells them."""
    ledger, state, _ = setup(2500.0)
    drop = Symptom(
        kind="throughput_drop", series="s", subject=True, claims=(), status="verified", ratio=0.5
    )
    check, _ = throughput_check(ledger, state.model_copy(update={"symptoms": [drop]}), "derived")
    assert check.message.endswith("baseline: derived)")


def test_without_a_train_log_the_throughput_is_not_judged() -> None:
    """No diff entry and no train log: the check is skipped and says why; nothing judged."""
    check, judged = throughput_check(Ledger(), DiagnosisState(target="local"), "derived")
    assert (check.status, check.message, judged) == (
        "skipped",
        "not judged: no train log was found",
        None,
    )


def test_a_train_log_that_could_not_be_read_is_an_error_citing_it() -> None:
    """A failed train-log observation makes the check an error that quotes the failure and
    cites the fact."""
    ledger = Ledger()
    log = ledger.append(
        Fact(probe="trainlog", target="local", rc=1, error="Permission denied: /w/log")
    )
    state = DiagnosisState(target="local", facts=[log.id])
    check, judged = throughput_check(ledger, state, "derived")
    assert (check.status, check.message) == (
        "error",
        "could not read the train log: Permission denied: /w/log",
    )
    assert [(ln.text, ln.cites) for ln in check.lines] == [
        ("trainlog: Permission denied: /w/log", [log.id])
    ]
    assert judged is None


def test_a_train_log_without_throughput_is_not_judged() -> None:
    """A train log read but holding no tokens/s: skipped, saying so."""
    ledger = Ledger()
    log = ledger.append(Fact(probe="trainlog", target="local", value={"steps": {"max": 3}}))
    check, _ = throughput_check(ledger, DiagnosisState(target="local", facts=[log.id]), "derived")
    assert (check.status, check.message) == (
        "skipped",
        "not judged: the train log holds no tokens/s",
    )


def test_a_baseline_without_the_subjects_figure_is_named_in_the_skip() -> None:
    """The train log has a tokens/s but the baseline was not compared on it: the skip names
    the baseline and the quantity it lacks."""
    ledger, state, _ = setup(2000.0, compared=False)
    check, _ = throughput_check(ledger, state, "snapshot 'good'")
    assert (check.status, check.message) == (
        "skipped",
        f"not judged: the baseline (snapshot 'good') holds no {LABEL}",
    )


def test_a_figure_missing_from_its_fact_is_an_error_not_a_verdict() -> None:
    """When the compared value is not in the fact the diff points at, the claim cannot be
    decided: the check is an error ("could not compare") and nothing is judged."""
    ledger, state, log = setup(None)
    check, judged = throughput_check(ledger, state, "derived")
    missing = f"{log.id} (trainlog) has no groups.role=drafter.throughput.recent_median"
    assert (check.status, check.message) == ("error", f"could not compare: {missing}")
    assert [(ln.text, ln.cites, ln.outcome) for ln in check.lines] == [
        (missing, [log.id], "unverifiable")
    ]
    assert judged is None


def test_the_metrics_are_the_judged_figures_and_the_logs_step_and_age() -> None:
    """With a judged throughput, tokens/s and the baseline's are its figures, citing their
    facts; the last step is the subject's; the age is the host's clock minus the last
    record's time, citing both facts."""
    ledger, state, log = setup(2000.0)
    host = ledger.append(Fact(probe="host", target="local", value={"now": 1093.25}))
    state = state.model_copy(update={"facts": [log.id, host.id]})
    _, judged = throughput_check(ledger, state, "derived")
    metrics = result_metrics(ledger, state, judged)
    shown = {k: (m.value, m.cites, m.label) for k, m in metrics.items()}
    assert shown == {
        "tokens_per_s": (2000.0, [log.id], "drafter tokens/s"),
        "last_step": (1200.0, [log.id], "drafter last step"),
        "last_step_age_s": (
            93.25,
            [host.id, log.id],
            "seconds from the last train-log record to the target's clock",
        ),
        "baseline_tokens_per_s": (3000.0, [log.id], "baseline drafter tokens/s"),
    }


def test_unjudged_metrics_read_the_log_and_have_no_baseline_or_age_without_a_clock() -> None:
    """Without a judged throughput the tokens/s is the log's recent median; there is no
    baseline figure, and no age when no host fact gives the target's clock."""
    ledger, state, log = setup(2000.0)
    metrics = result_metrics(ledger, state, None)
    assert {k: m.value for k, m in metrics.items()} == {
        "tokens_per_s": 2000.0,
        "last_step": 1200.0,
    }
    assert metrics["tokens_per_s"].cites == [log.id]


def test_a_snapshot_baseline_is_named_with_its_target_and_time() -> None:
    """A snapshot baseline is told by name, target and when it was taken (UTC), citing the
    snapshot's fact the throughput was compared with."""
    ledger, state, log = setup(2000.0)
    snap = Snapshot(
        name="good",
        target="ssh://gpu",
        created_at=datetime(2026, 11, 2, 3, 4, tzinfo=UTC),
        facts=[],
    )
    used = baseline_used(ledger, state, snap)
    assert (used.text, used.cites) == (
        "snapshot 'good' of ssh://gpu, taken 2026-11-02 03:04 UTC",
        [log.id],
    )


def test_a_derived_baseline_from_nothing_says_so() -> None:
    """A derived baseline with nothing compared says the record holds nothing to compare."""
    used = baseline_used(Ledger(), DiagnosisState(target="local"), None)
    assert (used.text, used.cites) == (
        "derived from the target's own record, as diagnose derives it: "
        "it records nothing to compare with",
        [],
    )


def test_a_derived_baseline_names_the_logs_early_window() -> None:
    """A derived throughput baseline read from the log's early window says so, with why
    that window, citing the train-log fact."""
    ledger, state, log = setup(2000.0)
    used = baseline_used(ledger, state, None)
    assert (used.text, used.cites) == (
        "derived from the target's own record, as diagnose derives it: "
        f"drafter tokens/s from the train log's early window ({EARLY_WHY}) [{log.id}]",
        [log.id],
    )


def test_only_verified_drops_of_the_subject_are_told() -> None:
    """Of the run's symptoms, only verified throughput drops of the judged subject count."""

    def drop(**kw: Any) -> Symptom:
        fields: dict[str, Any] = {
            "kind": "throughput_drop",
            "series": "s",
            "subject": True,
            "claims": (),
            "status": "verified",
            "ratio": 0.5,
        }
        return Symptom(**{**fields, **kw})

    kept = drop()
    state = DiagnosisState(
        target="local",
        symptoms=[
            kept,
            drop(subject=False),
            drop(status="refuted"),
            drop(kind="throughput_rise", ratio=1.5),
        ],
    )
    assert verified_drops(state) == [kept]


def test_drop_words_name_the_explaining_families() -> None:
    """A drop's words end with the families that explain it, in their order."""
    drop = Symptom(
        kind="throughput_drop",
        series="drafter tokens/s",
        subject=True,
        claims=(),
        status="verified",
        ratio=0.6,
        explained_by=("shape_churn", "eager_fallback"),
    )
    assert drop_words(drop) == (
        "drafter tokens/s fell to 0.60× (explained by: shape_churn, eager_fallback)"
    )
