"""agent.analysis.loss: the loss's symptoms in a train-log fact: a loss (or, where the
trainer filters such losses, a gradient norm) gone NaN or infinite, and a loss whose
recent level is at least twice its early one, each dated at its first record.

Facts are written by hand, window by window, so the early and recent windows each
claim spans are worked out from the table."""

from __future__ import annotations

from typing import Any

import pytest

from agent.analysis.loss import loss_diverged, loss_nonfinite
from agent.analysis.symptoms import Symptom
from agent.model.claims import AtLeast, Claim, Exists, Ref, WindowRatio
from agent.model.facts import Fact, Ledger


def windows(losses: list[float | None]) -> list[dict[str, Any]]:
    """Window i starts at step 10i+1; a None loss is a window that logged none."""
    return [
        {"first_step": 10 * i + 1, **({} if v is None else {"loss_median": v})}
        for i, v in enumerate(losses)
    ]


def trainlog(ledger: Ledger, value: dict[str, Any]) -> Fact:
    return ledger.append(Fact(probe="trainlog", target="local", value=value))


def diverged(
    fact: Fact, step: int, ratio: float, early: tuple[int, int], recent: tuple[int, int]
) -> Symptom:
    return Symptom(
        kind="loss_diverged",
        series="loss",
        subject=False,
        step=step,
        ratio=ratio,
        note=f"its recent median is {ratio:.2f}× the early windows'",
        claims=(
            Claim(
                predicate=WindowRatio(
                    a=Ref(fact=fact.id, path=("windows",), label="loss"),
                    series=(("loss_median",),),
                    before=early,
                    after=recent,
                    ratio=2.0,
                    below=False,
                )
            ),
        ),
    )


def test_a_loss_that_tripled_diverged_from_the_first_window_past_twice() -> None:
    """Eight windows: the early level is windows 1-2 (a quarter of the log, the first
    left out) at 1.0, the recent level windows 6-7 (the last quarter) at 3.0; the loss
    diverged at 3.00×, dated at window 4 (step 41), the first after the early windows at
    twice their level or more."""
    ledger = Ledger()
    rows = windows([5.0, 1.0, 1.0, 1.5, 2.5, 3.0, 3.0, 3.0])
    fact = trainlog(ledger, {"windows": rows})
    assert loss_diverged(fact, rows) == [diverged(fact, 41, 3.0, (1, 2), (6, 7))]


def test_exactly_twice_the_early_level_is_diverged() -> None:
    """The threshold is inclusive: a recent median of exactly twice the early one is a
    divergence, dated at the first window that reached it (window 6, step 61)."""
    ledger = Ledger()
    rows = windows([5.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 2.0])
    fact = trainlog(ledger, {"windows": rows})
    assert loss_diverged(fact, rows) == [diverged(fact, 61, 2.0, (1, 2), (6, 7))]


@pytest.mark.parametrize(
    "losses",
    [
        [5.0, 1.0, 1.0, 1.5, 1.9, 1.9, 1.9, 1.9],
        [5.0, 1.0, 1.0, 1.5, 2.5, 3.0, 3.0],
        [0.5, 1.0, 1.2, 1.5, 2.1, 2.1, 2.1, 2.1],
        [5.0, None, None, 1.0, 1.0, 1.0, 3.0, 3.0, 3.0, 3.0],
        [3.0 - 0.2 * i for i in range(12)],
    ],
    ids=[
        "below-twice",
        "seven-windows",
        "first-window-not-early",
        "no-early-windows",
        "falling",
    ],
)
def test_a_loss_short_of_a_divergence_is_not_told(losses: list[float | None]) -> None:
    """Not told: a recent level under twice the early one (1.9×); fewer than eight
    windows with a loss; a first window below the rest, which is a warm-up and not part
    of the early level (windows 1-2 at 1.1 against 2.1: 1.91×); a log whose early
    windows hold no loss; a loss that falls."""
    ledger = Ledger()
    rows = windows(losses)
    assert loss_diverged(trainlog(ledger, {"windows": rows}), rows) == []


def test_a_loss_gone_nan_is_dated_at_its_first_record() -> None:
    """Three NaN records, the first at step 40: one symptom claiming at least one such
    record, begun and dated at step 40, its headline saying how many and from where."""
    ledger = Ledger()
    loss = {"nonfinite": 3, "first_nonfinite": {"step": 40, "value": "nan"}}
    fact = trainlog(ledger, {"loss": loss})
    label = "records whose loss is NaN or infinite"
    assert loss_nonfinite(fact) == [
        Symptom(
            kind="loss_nonfinite",
            series="loss",
            subject=False,
            step=40,
            began=Ref(fact=fact.id, path=("loss", "first_nonfinite", "step"), label="step"),
            began_step=40,
            note="nan in 3 record(s), first",
            claims=(
                Claim(
                    predicate=AtLeast(
                        a=Ref(fact=fact.id, path=("loss", "nonfinite"), label=label), value=1
                    )
                ),
            ),
        )
    ]
    assert loss_nonfinite(fact)[0].headline() == "the loss is nan in 3 record(s), first at step 40"


def test_a_nonfinite_loss_without_its_first_record_is_undated() -> None:
    """A count of non-finite records with no first record stated: said as "not finite",
    with no step and no start."""
    ledger = Ledger()
    (symptom,) = loss_nonfinite(trainlog(ledger, {"loss": {"nonfinite": 1}}))
    assert (symptom.note, symptom.step, symptom.began, symptom.began_step) == (
        "not finite in 1 record(s), first",
        None,
        None,
        None,
    )


@pytest.mark.parametrize(
    ("first", "series", "label"),
    [
        (
            {"step": 12, "value": "inf", "field": "train/grad_norm"},
            "gradient norm (train/grad_norm)",
            "the first NaN or infinite train/grad_norm",
        ),
        (
            {"step": 12, "value": "inf"},
            "gradient norm (grad_norm)",
            "the first NaN or infinite grad_norm",
        ),
    ],
    ids=["named-field", "default-field"],
)
def test_a_nonfinite_gradient_norm_stands_for_a_filtered_loss(
    first: dict[str, Any], series: str, label: str
) -> None:
    """The logged loss stays finite (the trainer filters NaN losses) but the gradient
    norm went infinite at step 12: a non-finite symptom of the gradient norm, named by
    its field, claiming its first such value exists."""
    ledger = Ledger()
    fact = trainlog(ledger, {"loss": {"nonfinite": 0}, "grad_norm": {"first_nonfinite": first}})
    path = ("grad_norm", "first_nonfinite", "value")
    assert loss_nonfinite(fact) == [
        Symptom(
            kind="loss_nonfinite",
            series=series,
            subject=False,
            step=12,
            began=Ref(fact=fact.id, path=("grad_norm", "first_nonfinite", "step"), label="step"),
            began_step=12,
            note="inf",
            claims=(Claim(predicate=Exists(a=Ref(fact=fact.id, path=path, label=label))),),
        )
    ]


@pytest.mark.parametrize(
    ("value", "series"),
    [
        ({}, []),
        ({"loss": {"nonfinite": 0}}, []),
        ({"loss": {"nonfinite": "3"}}, []),
        ({"loss": {"nonfinite": 2}, "grad_norm": {"first_nonfinite": {"value": "nan"}}}, ["loss"]),
    ],
    ids=["nothing", "all-finite", "count-not-a-number", "loss-before-gradient"],
)
def test_the_loss_is_told_before_the_gradient_and_only_when_counted(
    value: dict[str, Any], series: list[str]
) -> None:
    """A loss told non-finite is the one symptom (a gradient norm adds none); nothing is
    told where no record is counted non-finite and no gradient norm went so."""
    ledger = Ledger()
    assert [s.series for s in loss_nonfinite(trainlog(ledger, value))] == series


@pytest.mark.parametrize("low", [-0.5, 0.0], ids=["negative", "zero"])
def test_a_loss_not_positive_in_some_window_is_not_judged(low: float) -> None:
    """Nine windows that would read as diverged at 3.00× (early windows 1-2 at 1.0,
    recent windows 7-8 at 3.0), but window 3's median loss is ``low``: a loss that is
    not positive everywhere is not judged, so nothing is told."""
    ledger = Ledger()
    rows = windows([5.0, 1.0, 1.0, low, 2.5, 3.0, 3.0, 3.0, 3.0])
    assert loss_diverged(trainlog(ledger, {"windows": rows}), rows) == []


def test_the_same_loss_positive_everywhere_is_still_judged() -> None:
    """The windows above with 0.5 in window 3: the early level is windows 1-2 (n // 4 =
    2) at 1.0, the recent level windows 7-8 at 3.0, so 3.00×, dated at window 4 (step
    41), the first after the early windows at twice their level."""
    ledger = Ledger()
    rows = windows([5.0, 1.0, 1.0, 0.5, 2.5, 3.0, 3.0, 3.0, 3.0])
    fact = trainlog(ledger, {"windows": rows})
    assert loss_diverged(fact, rows) == [diverged(fact, 41, 3.0, (1, 2), (7, 8))]
