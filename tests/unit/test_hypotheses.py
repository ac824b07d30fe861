"""agent.model.hypotheses: a diagnosis as a typed family with claims, whose status only its
checked claims decide, and the order in which checked hypotheses are reported."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agent.model.claims import AtLeast, Claim, ClaimVerdict, Outcome, Ref
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import KINDS, TITLES, Hypothesis, Kind, Status, rank, status_of, verify


def verdict(outcome: Outcome) -> ClaimVerdict:
    return ClaimVerdict(outcome=outcome, sentence=f"a claim that {outcome}", cites=())


def at_least(fact: str, value: float) -> Claim:
    return Claim(predicate=AtLeast(a=Ref(fact=fact, path=("count",)), value=value))


@pytest.mark.parametrize(
    ("outcomes", "status"),
    [
        ((), "unverifiable"),
        (("holds",), "verified"),
        (("holds", "holds"), "verified"),
        (("holds", "fails"), "refuted"),
        (("unverifiable", "fails"), "refuted"),
        (("rejected", "fails"), "refuted"),
        (("holds", "unverifiable"), "unverifiable"),
        (("rejected",), "unverifiable"),
        (("holds", "rejected"), "unverifiable"),
    ],
    ids=[
        "no-claims",
        "one-holds",
        "all-hold",
        "one-fails",
        "fails-beside-open",
        "fails-beside-rejected",
        "one-open",
        "rejected",
        "holds-beside-rejected",
    ],
)
def test_the_status_rule(outcomes: tuple[Outcome, ...], status: Status) -> None:
    """Verified when every claim holds and there is one; refuted when any fails; else
    unverifiable (nothing checked, a claim left open or rejected)."""
    assert status_of(tuple(verdict(o) for o in outcomes)) == status


def test_verify_checks_each_claim_after_the_rejected_ones() -> None:
    """The verdicts are the rejected claims' first, then one per claim in order, checked
    on the ledger; the status follows from all of them, rejected ones included."""
    ledger = Ledger()
    fact = ledger.append(Fact(probe="stdoutlog", target="local", value={"count": 3}))
    rejected = ClaimVerdict(outcome="rejected", sentence="claim cites no fact", cites=())
    hyp = Hypothesis(
        kind="fx_trace_race",
        claims=(at_least(fact.id, 1), at_least(fact.id, 5)),
        rejected=(rejected,),
    )
    checked = verify(hyp, ledger)
    assert [v.outcome for v in checked.verdicts] == ["rejected", "holds", "fails"]
    assert checked.verdicts[0] == rejected
    assert checked.status == "refuted"
    holding = verify(hyp.model_copy(update={"claims": (at_least(fact.id, 1),)}), ledger)
    assert (holding.status, holding.holding()) == ("unverifiable", 1)


def test_a_hypothesis_cites_each_fact_once_in_the_order_its_claims_do() -> None:
    """Its citations are the facts its claims cite, first mention first, none twice."""
    hyp = Hypothesis(
        kind="script_changed",
        claims=(at_least("F-bbbb", 1), at_least("F-aaaa", 1), at_least("F-bbbb", 2)),
    )
    assert hyp.cites == ["F-bbbb", "F-aaaa"]


def test_every_family_has_a_title() -> None:
    """Each family name a proposer may use has the title a report shows for it."""
    assert set(TITLES) == set(KINDS)
    assert Hypothesis(kind="input_bound", claims=()).title == (
        "input-bound (the training thread waits on data loading)"
    )


def test_a_misspelt_field_or_an_unknown_family_is_an_error() -> None:
    """A field the model does not have, a family not named in ``Kind`` or a negative
    weight is refused, naming the field."""
    with pytest.raises(ValidationError, match="because"):
        Hypothesis.model_validate({"kind": "fx_trace_race", "claims": [], "because": "x"})
    with pytest.raises(ValidationError, match="kind"):
        Hypothesis.model_validate({"kind": "gremlins", "claims": []})
    with pytest.raises(ValidationError, match="weight"):
        Hypothesis(kind="fx_trace_race", claims=(), weight=-1)


def test_a_recorded_hypothesis_with_unlocks_still_loads_without_it() -> None:
    """The retired ``unlocks`` field of older transcripts is dropped on reading, not
    refused."""
    old = {"kind": "fx_trace_race", "claims": [], "unlocks": ["lock-warmup"]}
    assert Hypothesis.model_validate(old) == Hypothesis(kind="fx_trace_race", claims=())


@pytest.mark.parametrize(
    ("outcomes", "fit"),
    [
        ((), "undated"),
        (("holds",), "fits"),
        (("holds", "unverifiable"), "undated"),
        (("holds", "fails"), "does_not_fit"),
        (("unverifiable", "fails"), "does_not_fit"),
    ],
    ids=["nothing-dated", "dated", "one-date-open", "one-predates", "open-and-predates"],
)
def test_timing_fits_only_when_every_date_holds(outcomes: tuple[Outcome, ...], fit: str) -> None:
    """A failed timing claim makes the family not fit the drop; every one holding makes
    it fit; anything else (none, or one open) leaves it undated."""
    hyp = Hypothesis(kind="fx_trace_race", claims=(), timing=tuple(verdict(o) for o in outcomes))
    assert hyp.timing_fit() == fit


def checked(kind: Kind, status: Status, holds: int, weight: int = 1) -> Hypothesis:
    return Hypothesis(
        kind=kind,
        claims=(),
        status=status,
        verdicts=tuple(verdict("holds") for _ in range(holds)),
        weight=weight,
    )


def test_rank_orders_by_status_first() -> None:
    """Verified, then unverifiable, then untested, then refuted, whatever their weights."""
    hyps = [
        checked("environment_drift", "refuted", 3, weight=9),
        checked("script_changed", "untested", 0, weight=9),
        checked("compile_cache_cold", "unverifiable", 1, weight=9),
        checked("fx_trace_race", "verified", 1),
    ]
    assert [h.status for h in rank(hyps)] == ["verified", "unverifiable", "untested", "refuted"]


def test_rank_orders_equals_by_holding_claims_times_weight_then_by_name() -> None:
    """Among verified families: one holding claim of weight 3 (3) before two of weight 1
    (2); two at the same score by family name; weight 0 scores nothing."""
    hyps = [
        checked("script_changed", "verified", 2),
        checked("input_bound", "verified", 5, weight=0),
        checked("fx_trace_race", "verified", 1, weight=3),
        checked("environment_drift", "verified", 2),
    ]
    assert [h.kind for h in rank(hyps)] == [
        "fx_trace_race",
        "environment_drift",
        "script_changed",
        "input_bound",
    ]
