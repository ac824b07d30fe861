"""What a person reads beside a claim's mark: ✔ and ✘ mark the claim, so a failing
claim's line states what was claimed beside what the facts hold; the checked sentence
itself (what a replay compares) is unchanged."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agent.model.claims import (
    PREDICATES,
    Absent,
    AtLeast,
    AtMost,
    Claim,
    ClaimVerdict,
    Contains,
    Differs,
    Equal,
    Exists,
    Greater,
    Matches,
    NotBefore,
    Predicate,
    RatioAtLeast,
    RatioBelow,
    Ref,
    VersionDiffers,
    WindowRatio,
    check,
)
from agent.model.facts import Fact, Ledger

VALUES = {
    "n": 0,
    "m": 5,
    "version": "2.13.0",
    "other_version": "2.11.0",
    "log": "all fine",
    "empty": [],
    "windows": [{"speed": 10.0}, {"speed": 10.0}, {"speed": 10.0}, {"speed": 10.0}],
}


@pytest.fixture
def fact() -> tuple[Ledger, str]:
    ledger = Ledger()
    return ledger, ledger.append(Fact(probe="p", target="local", value=VALUES)).id


def ref(fact_id: str, key: str, label: str) -> Ref:
    return Ref(fact=fact_id, path=(key,), label=label)


# (predicate builder, what the line adds after the sentence when the claim fails): the
# expected words are written here by hand, not taken from the code under test.
Build = Callable[[str], Predicate]
FAILING: list[tuple[Build, str]] = [
    (lambda f: AtLeast(a=ref(f, "n", "patches"), value=1), "(the claim: ≥ 1)"),
    (lambda f: AtMost(a=ref(f, "m", "lines"), value=2), "(the claim: ≤ 2)"),
    (lambda f: Equal(a=ref(f, "version", "torch"), value="2.11.0"), "(the claim: equals '2.11.0')"),
    (
        lambda f: Differs(a=ref(f, "version", "torch"), b=ref(f, "version", "torch then")),
        "(the claim: differs from torch then)",
    ),
    (lambda f: Contains(a=ref(f, "log", "log"), item="NCCL"), "(the claim: contains 'NCCL')"),
    (lambda f: Matches(a=ref(f, "log", "log"), pattern="^Error"), "(the claim: matches /^Error/)"),
    (
        lambda f: RatioBelow(a=ref(f, "m", "now"), b=ref(f, "m", "then"), ratio=0.5),
        "(the claim: below 0.5× then)",
    ),
    (
        lambda f: RatioAtLeast(a=ref(f, "n", "now"), b=ref(f, "m", "then"), ratio=0.9),
        "(the claim: at least 0.9× then)",
    ),
    (lambda f: Greater(a=ref(f, "n", "new"), b=ref(f, "m", "old")), "(the claim: > old)"),
    (
        lambda f: NotBefore(a=ref(f, "n", "printed"), b=ref(f, "m", "began")),
        "(the claim: not before began)",
    ),
    (lambda f: Exists(a=ref(f, "empty", "errors")), "(the claim: present)"),
    (lambda f: Absent(a=ref(f, "log", "log")), "(the claim: absent)"),
    (
        lambda f: WindowRatio(
            a=ref(f, "windows", "tokens/s"),
            series=(("speed",),),
            before=(0, 1),
            after=(2, 3),
            ratio=0.8,
        ),
        "(the claim: below 0.8×)",
    ),
]


@pytest.mark.parametrize(("build", "said"), FAILING)
def test_a_failing_claims_line_says_what_it_claimed(
    fact: tuple[Ledger, str], build: Build, said: str
) -> None:
    """A failing claim reads as "what the facts hold (the claim: what it said)": the ✘
    beside it marks the claim, never the true sentence before it."""
    ledger, fact_id = fact
    verdict = check(Claim(predicate=build(fact_id)), ledger)
    assert verdict.outcome == "fails", verdict
    assert verdict.stated() == f"{verdict.sentence} {said}"
    assert "(the claim:" not in verdict.sentence  # what a replay compares stays as it was


def test_a_holding_or_undecided_claim_is_its_sentence(fact: tuple[Ledger, str]) -> None:
    """A claim that holds is what the facts hold, and one that cannot be decided says why;
    neither adds what it claimed."""
    ledger, fact_id = fact
    holds = check(Claim(predicate=AtLeast(a=ref(fact_id, "m", "lines"), value=1)), ledger)
    assert holds.outcome == "holds" and holds.stated() == holds.sentence
    missing = Claim(predicate=AtLeast(a=ref(fact_id, "absent_key", "lines"), value=1))
    unknown = check(missing, ledger)
    assert unknown.outcome == "unverifiable" and unknown.stated() == unknown.sentence


def test_a_verdict_recorded_before_claims_said_themselves_reads_as_it_did() -> None:
    """A verdict read back from an older transcript has no claim text: its line is its
    sentence, with nothing invented."""
    old = ClaimVerdict.model_validate(
        {"outcome": "fails", "sentence": "x = 0 [F-1] < 1", "cites": ["F-1"]}
    )
    assert old.stated() == "x = 0 [F-1] < 1"


def test_every_predicate_says_what_it_claims() -> None:
    """No predicate is left without its own words (the base class raises for one)."""
    covered = {type(build("F-1")) for build, _ in FAILING}
    assert covered | {VersionDiffers} == set(PREDICATES)
