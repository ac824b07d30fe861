"""Claims are checked on the facts they cite and rendered from those facts' values."""

from __future__ import annotations

import pytest

from agent.claims import (
    Absent,
    AtLeast,
    AtMost,
    Claim,
    Contains,
    Differs,
    Equal,
    Exists,
    Matches,
    NotBefore,
    RatioAtLeast,
    RatioBelow,
    Ref,
    check,
)
from agent.facts import Fact, Ledger

FX_ERROR = "Detected that you are using FX to symbolically trace a dynamo-optimized function"


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


def add(ledger: Ledger, value: object, probe: str = "p", error: str | None = None) -> str:
    return ledger.append(Fact(probe=probe, target="local", value=value, error=error)).id


def test_table_of_predicates(ledger: Ledger) -> None:
    """Each predicate holds or fails exactly as its values say, and the sentence shows
    the values and the fact ids it was checked on."""
    now = add(
        ledger, {"torch": {"version": "2.13.0"}, "tok_s": 4300.0, "log": f"x {FX_ERROR} y", "n": 3}
    )
    base = add(ledger, {"torch": {"version": "2.11.0"}, "tok_s": 12800.0, "empty": []})
    version = ("torch", "version")
    cases: list[tuple[object, str, str]] = [
        (
            Differs(a=Ref(fact=now, path=version), b=Ref(fact=base, path=version)),
            "holds",
            "differs from",
        ),
        (
            Equal(a=Ref(fact=now, path=version), b=Ref(fact=base, path=version)),
            "fails",
            "differs from",
        ),
        (Equal(a=Ref(fact=now, path=version), value="2.13.0"), "holds", "equals '2.13.0'"),
        (Contains(a=Ref(fact=now, path=("log",)), item=FX_ERROR), "holds", "contains"),
        (Contains(a=Ref(fact=now, path=("log",)), item="NCCL"), "fails", "does not contain"),
        (Matches(a=Ref(fact=now, path=version), pattern=r"^2\.1[0-3]"), "holds", "matches"),
        (AtLeast(a=Ref(fact=now, path=("n",)), value=3), "holds", "≥ 3"),
        (AtMost(a=Ref(fact=now, path=("n",)), value=2), "fails", "> 2"),
        (
            RatioBelow(
                a=Ref(fact=now, path=("tok_s",)), b=Ref(fact=base, path=("tok_s",)), ratio=0.5
            ),
            "holds",
            "0.34×",
        ),
        (
            RatioAtLeast(
                a=Ref(fact=now, path=("tok_s",)), b=Ref(fact=base, path=("tok_s",)), ratio=0.9
            ),
            "fails",
            "< 0.9×",
        ),
        (Exists(a=Ref(fact=now, path=("log",))), "holds", "present"),
        (Absent(a=Ref(fact=base, path=("empty",))), "holds", "empty"),
        (Exists(a=Ref(fact=base, path=("empty",))), "fails", "empty"),
    ]
    for predicate, outcome, fragment in cases:
        verdict = check(Claim(predicate=predicate), ledger)
        assert verdict.outcome == outcome, (predicate, verdict)
        assert fragment in verdict.sentence, verdict.sentence
        for fact_id in verdict.cites:
            assert f"[{fact_id}]" in verdict.sentence


def test_citation_to_a_missing_fact_is_rejected(ledger: Ledger) -> None:
    verdict = check(Claim(predicate=Exists(a=Ref(fact="F-dead"))), ledger)
    assert verdict.outcome == "rejected"
    assert "F-dead, which is not in the ledger" in verdict.sentence


def test_missing_value_is_unverifiable_not_false(ledger: Ledger) -> None:
    """A path the fact does not have means "we do not know", not "no"."""
    fid = add(ledger, {"torch": {}})
    verdict = check(Claim(predicate=Absent(a=Ref(fact=fid, path=("torch", "version")))), ledger)
    assert verdict.outcome == "unverifiable"
    assert "has no torch.version" in verdict.sentence


def test_failed_observation_is_unverifiable(ledger: Ledger) -> None:
    fid = add(ledger, None, probe="stdout_log", error="permission denied: train_stdout.log")
    verdict = check(Claim(predicate=Absent(a=Ref(fact=fid))), ledger)
    assert verdict.outcome == "unverifiable"
    assert "permission denied" in verdict.sentence


def test_wrong_type_is_unverifiable(ledger: Ledger) -> None:
    fid = add(ledger, {"tok_s": "fast"})
    verdict = check(Claim(predicate=AtLeast(a=Ref(fact=fid, path=("tok_s",)), value=1)), ledger)
    assert verdict.outcome == "unverifiable"


def test_claims_round_trip_as_json() -> None:
    """Claims travel through the checkpointer and transcripts as JSON."""
    claim = Claim(
        predicate=RatioBelow(a=Ref(fact="F-1", path=("x", 0)), b=Ref(fact="F-2"), ratio=0.5)
    )
    assert Claim.model_validate_json(claim.model_dump_json()) == claim
    assert claim.cites == ["F-1", "F-2"]


def test_selector_paths_pick_list_items_by_key(ledger: Ledger) -> None:
    """("files", "@path=/w/a.py", "md5") finds that file wherever it sits in the list."""
    fid = add(
        ledger, {"files": [{"path": "/w/b.py", "md5": "bb"}, {"path": "/w/a.py", "md5": "aa"}]}
    )
    ref = Ref(fact=fid, path=("files", "@path=/w/a.py", "md5"))
    assert check(Claim(predicate=Equal(a=ref, value="aa")), ledger).outcome == "holds"
    missing = Ref(fact=fid, path=("files", "@path=/w/c.py", "md5"))
    assert check(Claim(predicate=Exists(a=missing)), ledger).outcome == "unverifiable"


def test_every_predicate_is_in_the_union() -> None:
    """A predicate class missing from the discriminated union could not be used in a claim."""
    from agent.claims import PREDICATES, Ref

    for cls in PREDICATES:
        fields: dict[str, Ref] = {n: Ref(fact="F-1") for n in ("a", "b") if n in cls.model_fields}
        extra = {
            "item": "x",
            "pattern": "x",
            "value": 1.0,
            "ratio": 1.0,
            "series": (("v",),),
            "before": (0, 1),
            "after": (2, 3),
        }
        kwargs: dict[str, object] = {
            **{k: v for k, v in extra.items() if k in cls.model_fields},
            **fields,
        }
        claim = Claim(predicate=cls(**kwargs))
        assert type(Claim.model_validate_json(claim.model_dump_json()).predicate) is cls


@pytest.mark.parametrize(
    ("event", "regime", "outcome", "word"),
    [
        (690, 690, "holds", "not before"),
        (700, 690, "holds", "not before"),
        (120, 690, "fails", "before"),
    ],
)
def test_not_before_dates_an_event_against_a_step(
    event: int, regime: int, outcome: str, word: str
) -> None:
    ledger = Ledger()
    log = ledger.append(Fact(probe="stdoutlog", target="local", value={"step": event}))
    train = ledger.append(Fact(probe="trainlog", target="local", value={"step": regime}))
    verdict = check(
        Claim(
            predicate=NotBefore(
                a=Ref(fact=log.id, path=("step",), label="printed before the first error"),
                b=Ref(fact=train.id, path=("step",), label="slower regime begins"),
            )
        ),
        ledger,
    )
    assert verdict.outcome == outcome
    assert f", {word} slower regime begins" in verdict.sentence
    assert verdict.cites == (log.id, train.id)
