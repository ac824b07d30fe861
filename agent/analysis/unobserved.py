"""A run whose speed is not observed: the symptom that says so, with what would make it
observable for the trainer its log shows, and what the Trainer's run summaries state
instead (an average over each train() call, cited, never a speed over time)."""

from __future__ import annotations

from typing import Any

from agent.analysis.symptoms import Symptom
from agent.model.claims import AtMost, Claim, Exists, Ref, resolve
from agent.model.facts import Fact, as_dict
from tools.parsers import trainlog_paths as log_paths

RUN_RATES = ("train_tokens_per_second", "train_samples_per_second", "train_steps_per_second")


def with_run_summaries(found: list[Symptom], console: Fact | None) -> list[Symptom]:
    """A speed left unobserved, with what the Trainer's summaries of its train() calls
    state (an average over each call, not a speed over time): each call's rates cited
    where the console holds them, so the report shows the trainer's own figures."""
    if console is None or not console.ok:
        return found
    summaries = as_dict(console.value).get("run_summaries")
    if not isinstance(summaries, list) or not summaries:
        return found
    claims = []
    for i, summary in enumerate(summaries[-4:], start=max(0, len(summaries) - 4)):
        figures = as_dict(as_dict(summary).get("figures"))
        for key in RUN_RATES:
            if key in figures:
                label = f"{key} of the Trainer's run summary at line {as_dict(summary).get('line')}"
                path = ("run_summaries", i, "figures", key)
                claims.append(
                    Claim(predicate=Exists(a=Ref(fact=console.id, path=path, label=label)))
                )
                break
    added = (
        f"; the Trainer's summaries of its {len(summaries)} train() call(s) state only an"
        " average over each"
    )
    return [
        s.model_copy(update={"claims": (*s.claims, *claims), "note": s.note + added})
        if s.kind == "speed_unobserved"
        else s
        for s in found
    ]


def speed_hint(value: dict[str, Any]) -> str:
    """What would make a run's speed observable, by what its log shows of its trainer."""
    fmt = value.get("format")
    seen = {str(k) for k in value.get("keys_seen") or ()}
    if fmt == "trainer_state" or {"grad_norm", "learning_rate", "epoch"} <= seen:
        return (
            "Hugging Face Trainer logs its speed with include_num_input_tokens_seen=True"
            " (train_tokens_per_second at each logging step); its progress bar"
            " (disable_tqdm=False, the default) on the console states one too"
        )
    if fmt == "csv":
        return (
            "Lightning logs it with the ThroughputMonitor callback"
            " (throughput/tokens_per_sec); or a tokens/s or a timestamp column"
        )
    return (
        "a tokens/s field, or a running token count with a timestamp, in each record"
        " (or name them in the profile's log_fields); or a tqdm progress bar on the console"
    )


def speed_unobserved(fact: Fact) -> Symptom:
    value = as_dict(fact.value)
    have = resolve(fact, log_paths.SPEED_WINDOWS)
    counted = isinstance(have, int) and have > 0
    note = (
        f"{have} window(s) with a speed, too few to tell a trend; {speed_hint(value)}"
        if counted
        else speed_hint(value)
    )
    return Symptom(
        kind="speed_unobserved",
        series="speed",
        subject=True,
        note=note,
        claims=(
            Claim(
                predicate=AtMost(
                    a=Ref(
                        fact=fact.id,
                        path=log_paths.SPEED_WINDOWS,
                        label="train-log windows with a speed",
                    ),
                    value=(have if counted else 0),
                )
            ),
        ),
    )
