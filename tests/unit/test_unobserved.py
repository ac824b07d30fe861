"""agent.analysis.unobserved: the symptom that a run's speed is not observed, what would
make it observable for the trainer its log shows, and the Trainer's run summaries
(an average over each train() call) cited beside it."""

from __future__ import annotations

from typing import Any

import pytest

from agent.analysis.symptoms import Symptom
from agent.analysis.unobserved import speed_hint, speed_unobserved, with_run_summaries
from agent.model.claims import AtMost, Claim, Exists, Ref
from agent.model.facts import Fact, Ledger

HF = (
    "Hugging Face Trainer logs its speed with include_num_input_tokens_seen=True"
    " (train_tokens_per_second at each logging step); its progress bar"
    " (disable_tqdm=False, the default) on the console states one too"
)
LIGHTNING = (
    "Lightning logs it with the ThroughputMonitor callback"
    " (throughput/tokens_per_sec); or a tokens/s or a timestamp column"
)
ANY = (
    "a tokens/s field, or a running token count with a timestamp, in each record"
    " (or name them in the profile's log_fields); or a tqdm progress bar on the console"
)


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        ({"format": "trainer_state"}, HF),
        ({"format": "jsonl", "keys_seen": ["loss", "grad_norm", "learning_rate", "epoch"]}, HF),
        ({"format": "jsonl", "keys_seen": ["loss", "grad_norm", "epoch"]}, ANY),
        ({"format": "csv", "keys_seen": ["step", "loss"]}, LIGHTNING),
        ({"format": "jsonl"}, ANY),
        ({}, ANY),
    ],
    ids=[
        "trainer-state",
        "trainer-keys",
        "some-trainer-keys",
        "csv",
        "other-jsonl",
        "nothing-known",
    ],
)
def test_the_hint_names_what_the_trainer_the_log_shows_needs(
    value: dict[str, Any], hint: str
) -> None:
    """A Trainer's log (its trainer_state.json, or records holding grad_norm,
    learning_rate and epoch together) gets the Trainer's settings; a CSV log
    Lightning's callback; any other the fields a record needs."""
    assert speed_hint(value) == hint


def unobserved(fact: Fact, have: int, note: str) -> Symptom:
    label = "train-log windows with a speed"
    return Symptom(
        kind="speed_unobserved",
        series="speed",
        subject=True,
        note=note,
        claims=(
            Claim(
                predicate=AtMost(
                    a=Ref(fact=fact.id, path=("speed", "windows_with_speed"), label=label),
                    value=have,
                )
            ),
        ),
    )


@pytest.mark.parametrize(
    ("have", "claimed", "prefix"),
    [
        (3, 3, "3 window(s) with a speed, too few to tell a trend; "),
        (0, 0, ""),
        (None, 0, ""),
        ("2", 0, ""),
    ],
    ids=["a-few-windows", "none", "not-counted", "count-not-a-number"],
)
def test_an_unobserved_speed_claims_how_few_windows_held_one(
    have: object, claimed: int, prefix: str
) -> None:
    """The symptom claims the windows with a speed are at most as many as the log
    counted (a count that is no positive number claims none), and its note says how
    many there were before the hint."""
    ledger = Ledger()
    value = {"format": "csv", "speed": {"windows_with_speed": have}}
    fact = ledger.append(Fact(probe="trainlog", target="local", value=value))
    assert speed_unobserved(fact) == unobserved(fact, claimed, prefix + LIGHTNING)


def summaries(ledger: Ledger, runs: list[dict[str, Any]]) -> Fact:
    return ledger.append(Fact(probe="stdoutlog", target="local", value={"run_summaries": runs}))


def test_no_summaries_leave_the_symptoms_as_they_are() -> None:
    """No console, a failed one, or one without run summaries: the symptoms are returned
    unchanged."""
    ledger = Ledger()
    log = ledger.append(Fact(probe="trainlog", target="local", value={}))
    found = [unobserved(log, 0, ANY)]
    failed = ledger.append(Fact(probe="stdoutlog", target="local", error="gone"))
    assert with_run_summaries(found, None) == found
    assert with_run_summaries(found, failed) == found
    assert with_run_summaries(found, summaries(ledger, [])) == found


def test_the_last_four_summaries_are_cited_by_their_first_rate() -> None:
    """Six train() calls summarised: the note says six, and the last four (at indices 2
    to 5) are each cited by the first rate they state, tokens before samples before
    steps; a summary stating no rate is counted but not cited. Other symptoms are left
    as they were."""
    ledger = Ledger()
    log = ledger.append(Fact(probe="trainlog", target="local", value={}))
    runs: list[dict[str, Any]] = [
        {"line": 10, "figures": {"train_tokens_per_second": 1.0}},
        {"line": 20, "figures": {"train_tokens_per_second": 1.0}},
        {"line": 30, "figures": {"train_steps_per_second": 2.0, "train_samples_per_second": 3.0}},
        {"line": 40, "figures": {"train_loss": 2.0}},
        {"line": 50, "figures": {"train_steps_per_second": 2.0}},
        {
            "line": 60,
            "figures": {"train_samples_per_second": 3.0, "train_tokens_per_second": 4.0},
        },
    ]
    console = summaries(ledger, runs)
    other = Symptom(kind="restarted", series="steps", subject=False, claims=())
    told = with_run_summaries([unobserved(log, 0, ANY), other], console)

    def cited(i: int, key: str, line: int) -> Claim:
        label = f"{key} of the Trainer's run summary at line {line}"
        path = ("run_summaries", i, "figures", key)
        return Claim(predicate=Exists(a=Ref(fact=console.id, path=path, label=label)))

    base = unobserved(log, 0, ANY)
    assert told == [
        base.model_copy(
            update={
                "claims": (
                    *base.claims,
                    cited(2, "train_samples_per_second", 30),
                    cited(4, "train_steps_per_second", 50),
                    cited(5, "train_tokens_per_second", 60),
                ),
                "note": ANY + "; the Trainer's summaries of its 6 train() call(s) state only"
                " an average over each",
            }
        ),
        other,
    ]
