"""The symptom layer: change points on window medians, and symptoms checked on train-log
facts made by the real parser from logs written the way other trainers write them."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from agent.analysis.change_points import change_points
from agent.analysis.detect import find
from agent.analysis.loss import loss_nonfinite
from agent.analysis.symptoms import check_all, explain, observed_healthy, unexplained
from agent.model.facts import Fact, Ledger
from tests.lib.logs import fact_of, incident_log


def around(level: float, n: int, rng: random.Random, spread: float = 0.07) -> list[float]:
    return [level * rng.uniform(1 - spread, 1 + spread) for _ in range(n)]


@pytest.mark.parametrize("seed", range(20))
def test_change_points_land_on_the_change(seed: int) -> None:
    """Change points land where the speed changed (a drop, or a drop and a recovery), and none is
    found in a steady log with 10% noise or an occasional slow window."""
    rng = random.Random(seed)
    assert change_points(around(12800, 69, rng) + around(4300, 50, rng)) == [69]
    # A drop and a recovery: no change between the halves, two inside them.
    assert change_points(around(1e4, 60, rng) + around(5e3, 60, rng) + around(1e4, 79, rng)) == [
        60,
        120,
    ]
    # A steady log, noisy at 10% per window, and one with a slow window in ten.
    assert change_points([1e4 * rng.lognormvariate(0, 0.1) for _ in range(199)]) == []
    spiky = [2000.0 if rng.random() < 0.1 else 1e4 * rng.uniform(0.9, 1.1) for _ in range(199)]
    assert change_points(spiky) == []


def test_a_short_log_cannot_call_a_change_but_a_clean_split_can() -> None:
    """Six windows against six can never pass the rank test (its z tops out below the
    threshold), however they wobble; eight against eight, fully apart, do."""
    assert change_points([1e4, 1e4, 1e4, 1e4, 1e4, 1e4, 4e3, 4e3, 4e3, 4e3, 4e3, 4e3]) == []
    assert change_points([1e4] * 8 + [4e3] * 8) == [8]


def test_the_incidents_drop_is_a_verified_symptom_with_its_step_and_ratio(tmp_path: Path) -> None:
    """The incident's fall is one verified drop of the summed series, dated near step 690 at about a
    third of the speed and citing its fact, plus one per device; it stays unexplained until a cause
    that explains it is verified."""
    ledger = Ledger()
    incident_log(tmp_path / "metrics.jsonl")
    fact = fact_of(tmp_path / "metrics.jsonl", ledger)
    found = check_all(find(fact), ledger)
    judged = [s for s in found if s.subject]
    assert [(s.kind, s.status) for s in judged] == [("throughput_drop", "verified")]
    (drop,) = judged
    assert drop.series == "tokens/s (sum of 3 series)"
    assert drop.step is not None and 690 < drop.step <= 700
    assert drop.ratio is not None and 0.30 < drop.ratio < 0.38
    assert drop.headline().startswith("tokens/s (sum of 3 series) fell to 0.3")
    (verdict,) = drop.verdicts
    assert verdict.outcome == "holds" and verdict.cites == (fact.id,)
    assert f"[{fact.id}]" in verdict.sentence and "(< 0.8×)" in verdict.sentence
    # Each device fell too, each its own symptom.
    devices = [s for s in found if not s.subject]
    assert sorted(s.series for s in devices) == [f"device=cuda:{d} tokens/s" for d in range(3)]
    assert {(s.kind, s.status) for s in devices} == {("throughput_drop", "verified")}
    # Nothing verified explains it: an unexplained symptom; a verified cause explains it.
    assert unexplained(explain(found, [])) == [drop]
    assert unexplained(explain(found, ["silent_eager_fallback"])) == []
    assert unexplained(explain(found, ["checkpoint_integrity"])) == [
        drop.model_copy(update={"explained_by": ()})
    ]


def short_log(path: Path, speeds: list[float]) -> None:
    """One record per step for one series, as a 30-step Trainer or Lightning run logs."""
    path.write_text(
        "".join(json.dumps({"step": i + 1, "tokens_per_s": v}) + "\n" for i, v in enumerate(speeds))
    )


@pytest.mark.parametrize(
    ("speeds", "kind", "status", "headline"),
    [
        # Thirty steps, the first ones slower while shapes compile: steady.
        (
            [2000.0] * 3 + [3000.0, 3100.0, 2950.0, 3050.0] * 7,
            "throughput_steady",
            "verified",
            "is steady",
        ),
        # Five steps, the last two at a third: too few for a change point, so a possible
        # drop, said to be unconfirmed and where it began (the first step of the two).
        (
            [3000.0, 3100.0, 2950.0, 1000.0, 1000.0],
            "throughput_possible_drop",
            "verified",
            "possible drop to 0.33× at step 4, not confirmed (2 window(s) after it",
        ),
        # Five steps, the last two three times faster (compiling finished late on a
        # loaded machine): not steady either, and the report says which way it went.
        (
            [1000.0, 1050.0, 990.0, 3000.0, 3100.0],
            "throughput_steady",
            "refuted",
            "climbed in its last quarter",
        ),
    ],
)
def test_a_short_run_gets_a_steady_claim_measured_against_the_whole_log(
    tmp_path: Path, speeds: list[float], kind: str, status: str, headline: str
) -> None:
    """Few windows are enough for a steady claim (the last quarter against the whole log),
    and a slow start is not a symptom, while a crawl at the end is a possible drop."""
    ledger = Ledger()
    short_log(tmp_path / "log.jsonl", speeds)
    fact = fact_of(tmp_path / "log.jsonl", ledger)
    subject = [s for s in check_all(find(fact), ledger) if s.subject]
    assert [(s.kind, s.status) for s in subject] == [(kind, status)], subject
    assert headline in subject[0].headline(), subject[0].headline()
    # A last quarter that climbed is a healthy run's (compiling done); a slowed one is not.
    assert observed_healthy(subject) is (kind == "throughput_steady")


def test_a_steady_run_is_said_to_be_steady(tmp_path: Path) -> None:
    """A run with no drop gets one verified symptom saying its speed was steady, every claim of it
    holding."""
    ledger = Ledger()
    incident_log(tmp_path / "metrics.jsonl", drop=False)
    fact = fact_of(tmp_path / "metrics.jsonl", ledger)
    found = check_all(find(fact), ledger)
    assert [(s.kind, s.status, s.subject) for s in found] == [
        ("throughput_steady", "verified", True)
    ]
    assert all(v.outcome == "holds" for v in found[0].verdicts)


def test_a_restart_is_a_symptom_and_its_warm_up_is_not_a_change(tmp_path: Path) -> None:
    """A run that went back to step 500 and ran on at the same speed: restarted, steady."""
    rng = random.Random(3)
    steps = [*range(10, 701, 10), *range(510, 1201, 10)]
    log = "".join(
        json.dumps({"step": s, "tokens_per_s": 9000 * rng.uniform(0.95, 1.05)}) + "\n"
        for s in steps
    )
    (tmp_path / "log.jsonl").write_text(log)
    ledger = Ledger()
    fact = fact_of(tmp_path / "log.jsonl", ledger)
    found = check_all(find(fact), ledger)
    assert sorted((s.kind, s.status) for s in found) == [
        ("restarted", "verified"),
        ("throughput_steady", "verified"),
    ]
    (restart,) = [s for s in found if s.kind == "restarted"]
    assert restart.step == 510


def test_no_windows_no_symptoms() -> None:
    """No train log, or a failed one, gives no symptoms at all rather than a steady or dropping
    speed."""
    ledger = Ledger()
    failed = ledger.append(Fact(probe="trainlog", target="local", error="no train log"))
    assert find(failed) == [] and find(None) == []


def test_a_nightly_check_tells_a_drop_inside_the_run(tmp_path: Path) -> None:
    """Health: a drop of the judged throughput inside the run is told by the symptoms
    check, not judged, where the throughput check judged a figure against the baseline;
    where none was judged, the drop fails it. A steady run passes it, saying so."""
    from agent.graph.state import DiagnosisState
    from agent.health.check import _symptom_check

    ledger = Ledger()
    for drop, judged, status, words in (
        (True, True, "passed", "fell to 0.3"),
        (True, False, "failed", "fell to 0.3"),
        (False, True, "passed", "is steady"),
        (False, False, "passed", "is steady"),
    ):
        incident_log(tmp_path / "metrics.jsonl", drop=drop)
        fact = fact_of(tmp_path / "metrics.jsonl", ledger)
        symptoms = explain(check_all(find(fact), ledger), [])
        check = _symptom_check(DiagnosisState(target="local", symptoms=symptoms), judged)
        assert (check.name, check.status) == ("symptoms", status)
        assert words in check.message, check.message
        assert check.lines and all(fact.id in line.cites for line in check.lines)
    assert (
        "(no verified family explains it)"
        in _symptom_check(
            DiagnosisState(
                target="local",
                symptoms=explain(check_all(find(fact_of_drop(tmp_path, ledger)), ledger), []),
            ),
            True,
        ).message
    )


def fact_of_drop(tmp_path: Path, ledger: Ledger) -> Fact:
    incident_log(tmp_path / "drop.jsonl")
    return fact_of(tmp_path / "drop.jsonl", ledger)


def test_a_nightly_check_fails_a_nan_loss_and_cannot_pass_a_run_without_a_speed(
    tmp_path: Path,
) -> None:
    """Health: a loss gone NaN fails the symptoms check whatever the speed (the step it
    began is in the message); a log that holds no speed makes the check an error, so the
    target could not be checked, never "healthy"."""
    from agent.graph.state import DiagnosisState
    from agent.health.check import _symptom_check

    ledger = Ledger()
    nan = tmp_path / "nan.jsonl"
    nan.write_text(
        "".join(
            json.dumps({"step": s, "tok/s": 1000.0, "loss": 2.0 if s < 30 else math.nan}) + "\n"
            for s in range(1, 61)
        )
    )
    symptoms = explain(check_all(find(fact_of(nan, ledger)), ledger), [])
    check = _symptom_check(DiagnosisState(target="local", symptoms=symptoms), True)
    assert (check.status, check.message) == (
        "failed",
        "the loss is nan in 31 record(s), first at step 30",
    )
    blind = tmp_path / "blind.jsonl"
    blind.write_text("".join(json.dumps({"step": s, "loss": 2.0}) + "\n" for s in range(1, 61)))
    symptoms = explain(check_all(find(fact_of(blind, ledger)), ledger), [])
    check = _symptom_check(DiagnosisState(target="local", symptoms=symptoms), True)
    assert check.status == "error"
    assert check.message.startswith("the run's speed is not observed: a tokens/s field"), check


@pytest.mark.parametrize(
    ("losses", "diverged"),
    [
        # A loss that falls, as a healthy run's does: nothing to tell.
        ([3.0 - 0.02 * s for s in range(100)], False),
        # Falling, then from step 60 climbing to 3 times the early windows': diverged,
        # dated at the first window past twice the early median.
        ([2.0 - 0.005 * s for s in range(60)] + [1.7 + 0.1 * s for s in range(40)], True),
        # Negative losses (some objectives) are not judged.
        ([-1.0 - 0.01 * s for s in range(100)], False),
    ],
)
def test_a_loss_that_grows_past_twice_its_early_level_diverged(
    tmp_path: Path, losses: list[float], diverged: bool
) -> None:
    """A loss that climbs past twice its early level is a verified divergence, dated at the first
    window past it; a falling loss, or a negative one, is not judged diverged."""
    ledger = Ledger()
    log = tmp_path / "loss.jsonl"
    log.write_text(
        "".join(
            json.dumps({"step": s, "tok/s": 1000.0, "loss": v}) + "\n" for s, v in enumerate(losses)
        )
    )
    found = [s for s in check_all(find(fact_of(log, ledger)), ledger) if s.kind == "loss_diverged"]
    if not diverged:
        assert found == []
        return
    (symptom,) = found
    assert symptom.status == "verified"
    first_past = next(s for s, v in enumerate(losses) if s > 25 and v >= 2 * 1.9)
    assert symptom.step is not None and abs(symptom.step - first_past) <= 1, symptom.step
    assert "diverged" in symptom.headline()


def test_a_resume_the_console_states_is_a_restart_where_the_log_shows_none(
    tmp_path: Path,
) -> None:
    """Lightning's metrics go on from step 40 after a resume (no step goes back, no
    counter): its console's restore line is the restart, dated by the last step it
    printed before it; a log that itself shows a restart needs no second one."""
    import io

    from agent.analysis.progress import resumed_in_console
    from agent.model.facts import Fact
    from tools.parsers import stdoutlog

    ledger = Ledger()
    log = tmp_path / "metrics.jsonl"
    log.write_text("".join(json.dumps({"step": s, "tok/s": 900.0}) + "\n" for s in range(1, 61)))
    console = tmp_path / "train.log"
    console.write_text(
        "Epoch 0: step 40 loss=2.1\n"
        "Restoring states from the checkpoint path at /ws/ckpt/epoch=0-step=40.ckpt\n"
        "Epoch 0: step 45 loss=2.0\n"
    )
    with io.FileIO(str(console), "r") as f:
        said = ledger.append(Fact(probe="stdoutlog", target="local", value=stdoutlog.scan(f)))
    trainlog = fact_of(log, ledger)
    found = find(trainlog)
    assert not [s for s in found if s.kind == "restarted"]
    resumed = resumed_in_console(ledger, [trainlog.id, said.id], found)
    assert resumed is not None
    (checked,) = check_all([resumed], ledger)
    assert checked.status == "verified"
    assert checked.headline().startswith(
        "the run restarted at step 40 (the console says so at line 2"
    )
    restarted = tmp_path / "restarted.jsonl"
    restarted.write_text(
        "".join(
            json.dumps({"step": s, "tok/s": 900.0}) + "\n" for s in [*range(1, 41), *range(30, 61)]
        )
    )
    again = fact_of(restarted, ledger)
    assert resumed_in_console(ledger, [again.id, said.id], find(again)) is None


FILTERED = (
    ", while the logged loss stays finite (a trainer that filters NaN losses, as Trainer's"
    " logging_nan_inf_filter does, logs them so)"
)


@pytest.mark.parametrize(
    ("first", "headline"),
    [
        (
            {"step": 12, "value": "inf"},
            "the gradient norm (grad_norm) is inf at step 12 and after" + FILTERED,
        ),
        ({"value": "nan"}, "the gradient norm (grad_norm) is nan" + FILTERED),
    ],
    ids=["dated", "undated"],
)
def test_a_nonfinite_gradient_norm_is_told_in_plain_words(
    first: dict[str, object], headline: str
) -> None:
    """A gradient norm gone infinite at step 12 while the logged loss stayed finite reads
    "is inf at step 12 and after"; one whose first such record has no step reads "is
    nan", with no dangling "from" or "on"."""
    ledger = Ledger()
    value = {"loss": {"nonfinite": 0}, "grad_norm": {"first_nonfinite": first}}
    (symptom,) = loss_nonfinite(ledger.append(Fact(probe="trainlog", target="local", value=value)))
    assert symptom.headline() == headline
