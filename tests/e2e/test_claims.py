"""Claims are checked on the facts they cite and rendered from those facts' values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.model.claims import (
    Absent,
    AtLeast,
    AtMost,
    Claim,
    Contains,
    Differs,
    Equal,
    Exists,
    Greater,
    Matches,
    NotBefore,
    RatioAtLeast,
    RatioBelow,
    Ref,
    VersionDiffers,
    WindowRatio,
    check,
)
from agent.model.facts import Fact, Ledger
from agent.model.versions import difference
from tests.lib.probe_workspace import train_log_lines, write_pt
from tests.lib.torch_error_texts import FX_ERROR


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
    """A claim citing a fact id the ledger does not hold is rejected, and the sentence names
    the missing id."""
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
    """A claim on a fact whose probe failed is unverifiable, not true or false, and the
    sentence carries the probe's error."""
    fid = add(ledger, None, probe="stdout_log", error="permission denied: train_stdout.log")
    verdict = check(Claim(predicate=Absent(a=Ref(fact=fid))), ledger)
    assert verdict.outcome == "unverifiable"
    assert "permission denied" in verdict.sentence


def test_wrong_type_is_unverifiable(ledger: Ledger) -> None:
    """A numeric comparison on a value that is not a number is unverifiable rather than
    failing."""
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
    from agent.model.claims import PREDICATES, Ref

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
    """NotBefore compares two steps: an event at or after the regime's start holds, one
    before it fails, and the sentence says which with both facts cited."""
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


# -- numbers no float holds (issue 14, item 9) ---------------------------------------

HUGE = int("9" * 400)  # what json reads from a 400-digit number: float(HUGE) overflows


@pytest.mark.parametrize(
    "predicate",
    [
        lambda a, b: RatioBelow(a=a, b=b, ratio=0.9),
        lambda a, b: RatioAtLeast(a=b, b=a, ratio=0.9),
        lambda a, b: AtLeast(a=a, value=1.0),
        lambda a, b: AtMost(a=a, value=1.0),
        lambda a, b: Greater(a=a, b=b),
        lambda a, b: NotBefore(a=b, b=a),
    ],
    ids=["ratio_below", "ratio_at_least", "at_least", "at_most", "greater", "not_before"],
)
def test_a_400_digit_number_is_unverifiable(ledger: Ledger, predicate: Any) -> None:
    """A checkpoint that recorded a 400-digit tokens_per_s gives no comparison: the
    claim is unverifiable, not a crash (float() of it raises OverflowError)."""
    now = add(ledger, {"tok_s": 4300.0})
    meta = add(ledger, {"tokens_per_s": HUGE})
    a, b = Ref(fact=meta, path=("tokens_per_s",)), Ref(fact=now, path=("tok_s",))
    verdict = check(Claim(predicate=predicate(a, b)), ledger)
    assert verdict.outcome == "unverifiable", verdict
    assert "9" * 100 not in verdict.sentence


def test_a_400_digit_number_compares_equal_exactly(ledger: Ledger) -> None:
    """Equality needs no float: exact, and the sentence names the number by its size."""
    one = add(ledger, {"n": HUGE})
    two = add(ledger, {"n": HUGE - 1})
    same = check(Claim(predicate=Equal(a=Ref(fact=one, path=("n",)), value=HUGE)), ledger)
    other = check(
        Claim(predicate=Differs(a=Ref(fact=one, path=("n",)), b=Ref(fact=two, path=("n",)))),
        ledger,
    )
    assert (same.outcome, other.outcome) == ("holds", "holds")
    assert "400 digits" in same.sentence and len(same.sentence) < 200


def test_window_ratio_skips_windows_without_a_usable_number(ledger: Ledger) -> None:
    """WindowRatio leaves out a window whose value is unusable (overflowing) and says how
    many windows it compared, instead of letting it spoil the ratio."""
    windows = [{"tok": 100.0}, {"tok": HUGE}, {"tok": 100.0}, {"tok": 50.0}]
    fid = add(ledger, {"windows": windows})
    pred = WindowRatio(
        a=Ref(fact=fid, path=("windows",)),
        series=(("tok",),),
        before=(0, 1),
        after=(2, 3),
        ratio=0.9,
    )
    verdict = check(Claim(predicate=pred), ledger)
    assert verdict.outcome == "holds" and "1 window(s)" in verdict.sentence, verdict


def test_version_with_a_5000_digit_part_is_no_crash(ledger: Ledger) -> None:
    """A version string past Python's digit limit for int() is compared as text."""
    long_part = "2." + "1" * 5000
    now = add(ledger, {"v": long_part})
    then = add(ledger, {"v": "2.1"})
    verdict = check(
        Claim(
            predicate=VersionDiffers(a=Ref(fact=now, path=("v",)), b=Ref(fact=then, path=("v",)))
        ),
        ledger,
    )
    assert verdict.outcome == "holds" and "different releases" in verdict.sentence
    assert difference(long_part, long_part + "+cu130") == "same"
    assert difference(long_part, "2." + "1" * 4999 + "2") == "release"


def test_diagnose_with_a_400_digit_figure_in_the_checkpoint(tmp_path: Path) -> None:
    """End to end: a workspace whose checkpoint meta.json records a 400-digit
    tokens_per_s (and whose log holds one bad line of each kind) is diagnosed, with the
    trainlog and checkpoints facts both observed."""
    ws = tmp_path / "ws"
    step = ws / "checkpoints" / "step_100"
    step.mkdir(parents=True)
    write_pt(step / "drafter.pt")
    (step / "meta.json").write_text(
        '{"step": 100, "torch_version": "2.11.0+cu130", "tokens_per_s": ' + "9" * 400 + "}"
    )
    lines = train_log_lines(range(0, 200, 10))
    lines[5:5] = [
        '{"step": 3, "tokens_per_s": ' + "9" * 400 + "}",
        '{"x": ' + "[" * 2000 + "]" * 2000 + "}",
    ]
    (ws / "train_log.jsonl").write_text("\n".join(lines) + "\n")
    (ws / "train_stdout.log").write_text("2026-01-01 10:00:00 [MainThread] step 10\n")
    state = tmp_path / "state"
    res = subprocess.run(
        [str(Path(sys.executable).with_name("dflash-doctor")), "diagnose", "--target", "local",
         "--workspace", str(ws), "--non-interactive", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_STATE_HOME": str(state)},
        timeout=240,
    )  # fmt: skip
    assert res.returncode in (0, 2), res.stderr[-3000:]
    doc = json.loads(res.stdout)
    facts = {f["probe"]: f for f in doc["facts"]}
    assert facts["checkpoints"]["error"] is None and facts["trainlog"]["error"] is None


def test_diff_entry_with_a_400_digit_value_is_stored_in_the_session_state(
    ledger: Ledger,
) -> None:
    """A diff entry lives in the graph's state, which the checkpointer writes with
    msgpack (64-bit integers at most): a 400-digit value is kept as its exact text, so
    the entry still says whether the two sides differ."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from agent.analysis.baseline import Comparable, diff

    now = add(ledger, {"tokens_per_s": HUGE, "list": [HUGE, 1]}, probe="checkpoints")
    table = [
        Comparable("tok", "tokens/s", "checkpoints", ("tokens_per_s",), derived=None),
        Comparable("list", "list", "checkpoints", ("list",), derived=None),
    ]
    then = add(ledger, {"tokens_per_s": HUGE, "list": [HUGE - 1, 1]}, probe="checkpoints")
    entries = diff(table, ledger, [now], [then])
    assert [e.differs for e in entries] == [False, True]
    assert entries[0].current_value == "9" * 400
    for entry in entries:
        JsonPlusSerializer().dumps_typed(entry)
