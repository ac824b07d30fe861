"""The symptom layer: what the run did over time, before any failure family is asked
why, and what a set of checked symptoms says of the run.

A *symptom* is a checked observation: claims over a fact, verified like a hypothesis's.
``detect`` finds them (the speed's changes, restarts; ``loss`` the loss's), and this
module checks them (``check_all``), says which explain a drop, and judges the run by them:
healthy (``observed_healthy``), slowed, broken.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agent.model.claims import Claim, ClaimVerdict, Ref, check
from agent.model.facts import Ledger
from agent.model.hypotheses import Hypothesis, status_of

SymptomKind = Literal[
    "throughput_drop",
    "throughput_rise",
    "throughput_steady",
    "throughput_possible_drop",
    "speed_unobserved",
    "loss_nonfinite",
    "loss_diverged",
    "stalled",
    "stopped",
    "restarted",
]

# Families whose verified hypothesis explains a throughput drop (a slower run): compiled
# code not running, recompiling, a cold cache, another torch, another script, a crash
# and restart. A family not named here explains no drop.
EXPLAINS_DROP = frozenset(
    {
        "silent_eager_fallback",
        "dataset_shape_churn",
        "compile_cache_cold",
        "environment_drift",
        "script_changed",
        "fx_trace_race",
        "ineffective_monkeypatch",
        "crash_stated",
        "own_code_time",
        "threads_blocked",
        "input_bound",
        "host_contention",
        "limit_not_applied",
    }
)


class Symptom(BaseModel):
    """One checked observation about the run over time."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: SymptomKind
    series: str  # what was measured: "drafter tokens/s (sum of 3 series)", "rank=0 tokens/s"
    subject: bool  # the throughput the diagnosis judges, or one group of it
    claims: tuple[Claim, ...]
    verdicts: tuple[ClaimVerdict, ...] = ()
    status: Literal["verified", "refuted", "unverifiable", "untested"] = "untested"
    step: float | None = None  # where it changed (the first step after the change point)
    # The step the new regime began at, in the train-log fact, to the resolution of a
    # window: the earliest first step of the old regime's last window and the windows up
    # to the new regime's first (a restarted run's warm-up window starts where it
    # resumed; interleaved devices put a step on both sides of a window's edge). What
    # events and the derived baseline's checkpoint are dated against (agent.analysis.timing).
    began: Ref | None = None
    began_step: float | None = None
    ratio: float | None = None
    explained_by: tuple[str, ...] = ()
    # What a headline adds from the fact (why a drop is not confirmed, what would make
    # the speed observable, the loss's value): text the symptom's own numbers gave.
    note: str = ""

    def unsteady(self) -> str:
        """For a refuted steady claim, which way the last quarter moved: a climb once
        compiling is done is a healthy run's, a slowdown is a symptom."""
        return _unsteady_word(self.verdicts)

    def headline(self) -> str:
        """The symptom in a few words, from its own numbers."""
        where = f" at step {_num(self.step)}" if self.step is not None else ""
        if self.kind == "throughput_drop":
            return f"{self.series} fell to {self.ratio:.2f}×{where}"
        if self.kind == "throughput_rise":
            return f"{self.series} rose to {self.ratio:.2f}×{where}"
        if self.kind == "throughput_possible_drop":
            return (
                f"{self.series}: possible drop to {self.ratio:.2f}×{where}, not confirmed"
                f" ({self.note})"
            )
        if self.kind == "loss_diverged":
            return f"the loss diverged{where}: {self.note}"
        if self.kind == "stalled":
            after = f" after step {_num(self.step)}" if self.step is not None else ""
            return f"the run stalled{after}: {self.note}"
        if self.kind == "stopped":
            after = f" after step {_num(self.step)}" if self.step is not None else ""
            return f"the run is not running{after}: {self.note}"
        if self.kind == "speed_unobserved":
            return f"the run's speed is not observed: {self.note}"
        if self.kind == "loss_nonfinite" and self.series != "loss":
            since = f"{where} and after" if where else ""
            return (
                f"the {self.series} is {self.note}{since}, while the logged loss stays"
                " finite (a trainer that filters NaN losses, as Trainer's"
                " logging_nan_inf_filter does, logs them so)"
            )
        if self.kind == "loss_nonfinite":
            return f"the loss is {self.note}{where}"
        if self.kind == "throughput_steady":
            if self.status == "refuted":
                return (
                    f"{self.series} {self.unsteady()} in its last quarter, with no change"
                    " point sustained enough to place"
                )
            return f"{self.series} is steady"
        return f"the run restarted{where}" + (f" ({self.note})" if self.note else "")


def _unsteady_word(verdicts: Sequence[ClaimVerdict]) -> str:
    """Which way a refuted steady claim went: its first claim is "the last quarter is
    not below 0.8× the whole", its second "below 1.25×" (``find``)."""
    fell = bool(verdicts) and verdicts[0].outcome == "fails"
    rose = len(verdicts) > 1 and verdicts[1].outcome == "fails"
    if fell and not rose:
        return "slowed"
    if rose and not fell:
        return "climbed"
    return "was not steady"


def _num(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.4g}"


def judged_speed(symptoms: Sequence[Symptom]) -> bool:
    """Whether a symptom judges the run's speed (a change, a possible drop, steady)."""
    return any(s.subject and s.kind.startswith("throughput_") for s in symptoms)


def observed_healthy(symptoms: Sequence[Symptom]) -> bool:
    """The judged speed was observed and held: a verified steady or rise, or a last
    quarter that climbed (compiling done), and no possible drop or broken loss."""
    ok = any(
        s.subject
        and (
            (s.kind in ("throughput_steady", "throughput_rise") and s.status == "verified")
            or (
                s.kind == "throughput_steady"
                and s.status == "refuted"
                and s.unsteady() == "climbed"
            )
        )
        for s in symptoms
    )
    return ok and not any(
        s.status == "verified" and s.kind in ("throughput_possible_drop", *BROKEN) for s in symptoms
    )


# Symptoms that are faults whatever the speed: a loss gone NaN or infinite or diverged,
# a trainer alive whose logs stopped.
BROKEN = ("loss_nonfinite", "loss_diverged", "stalled")

# Symptoms of a slower or stuck run: what a family that is no fault alone needs.
SLOWED = ("throughput_drop", "throughput_possible_drop", "stalled")


def slowed(symptoms: Sequence[Symptom]) -> bool:
    """The run shows a verified drop (confirmed or possible) of the judged throughput,
    or a stall."""
    return any(
        s.status == "verified" and s.kind in SLOWED and (s.subject or s.kind == "stalled")
        for s in symptoms
    )


def is_fault(hypothesis: Hypothesis, symptoms: Sequence[Symptom]) -> bool:
    """A verified hypothesis that says something is wrong: one that is a fault alone, or
    a cause of slowness on a run that shows a slowdown or a stall."""
    return hypothesis.status == "verified" and (hypothesis.fault_alone or slowed(symptoms))


def broken(symptoms: Sequence[Symptom]) -> list[Symptom]:
    """The verified symptoms of ``BROKEN``."""
    return [s for s in symptoms if s.kind in BROKEN and s.status == "verified"]


def check_all(symptoms: Sequence[Symptom], ledger: Ledger) -> list[Symptom]:
    """Each symptom with its claims checked, by the hypotheses' status rule."""
    out = []
    for symptom in symptoms:
        verdicts = tuple(check(c, ledger) for c in symptom.claims)
        out.append(symptom.model_copy(update={"verdicts": verdicts, "status": status_of(verdicts)}))
    return out


def explain(symptoms: Sequence[Symptom], verified_kinds: Sequence[str]) -> list[Symptom]:
    """Each verified drop of the judged throughput with the verified families that
    explain a drop."""
    by = tuple(k for k in verified_kinds if k in EXPLAINS_DROP)
    return [
        s.model_copy(update={"explained_by": by})
        if s.kind == "throughput_drop" and s.status == "verified"
        else s
        for s in symptoms
    ]


def unexplained(symptoms: Sequence[Symptom]) -> list[Symptom]:
    """Verified drops of the judged throughput that no verified family explains."""
    return [
        s
        for s in symptoms
        if s.kind == "throughput_drop"
        and s.subject
        and s.status == "verified"
        and not s.explained_by
    ]
