"""Hypotheses: a typed diagnosis made of claims, with a status that only its claims decide.

Status rules (``verify``):
- ``verified``: every claim holds (and there is at least one);
- ``refuted``: at least one claim fails on its facts;
- ``unverifiable``: no claim fails, but one cites a failed observation or a missing value,
  or was rejected (cites nothing / a fact not in the ledger);
- ``untested``: not checked yet.

"What it predicts" is kept apart from the claims: predictions are things that would be
true if the hypothesis were, that no fact checked yet; the report shows them as such.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent.model.claims import Claim, ClaimVerdict, check
from agent.model.facts import Ledger

Kind = Literal[
    "environment_drift",
    "script_changed",
    "compile_cache_cold",
    "fx_trace_race",
    "silent_eager_fallback",
    "ineffective_monkeypatch",
    "dataset_shape_churn",
    "checkpoint_integrity",
    "crash_stated",
    "own_code_time",
    "threads_blocked",
    "input_bound",
    "host_contention",
    "limit_not_applied",
]
# The failure families by name (``diagnose --hypothesis``, a proposer's prompt).
KINDS: tuple[str, ...] = get_args(Kind)

Status = Literal["verified", "refuted", "unverifiable", "untested"]
Fit = Literal["fits", "does_not_fit", "undated"]

TITLES: dict[str, str] = {
    "environment_drift": "environment drift since the known good state",
    "script_changed": "training script or config changed since the known good state",
    "compile_cache_cold": "compile cache cold or wiped",
    "fx_trace_race": "FX-tracing race under per-device compilation",
    "silent_eager_fallback": "silent eager fallback (compiled code not running)",
    "ineffective_monkeypatch": "ineffective monkeypatch of is_fx_symbolic_tracing",
    "dataset_shape_churn": "dataset shape churn (new sequence lengths, recompiles)",
    "checkpoint_integrity": "checkpoint or log integrity problem",
    "crash_stated": "crash with a stated cause",
    "own_code_time": "time in the trainer's own code (a sleep or a slow loop there)",
    "threads_blocked": "threads blocked waiting (a deadlock, or a wait nothing ends)",
    "input_bound": "input-bound (the training thread waits on data loading)",
    "host_contention": "host contention (other processes take the trainer's cores)",
    "limit_not_applied": "recompile limit set in one thread, not in the threads that compile",
}


class Prediction(BaseModel):
    """Something the hypothesis implies that no fact has checked yet, and how to check it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    expect: str
    probe: str


class Hypothesis(BaseModel):
    # extra="forbid": a field a rule misspells is an error, not silently dropped.
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Kind
    claims: tuple[Claim, ...]
    predictions: tuple[Prediction, ...] = ()
    status: Status = "untested"
    verdicts: tuple[ClaimVerdict, ...] = ()
    # Who proposed it: "rule" or "llm:<model>". The checker does not care; readers do.
    source: str = "rule"
    # Claims a proposer sent that could not even be formed (free text, no citation, not
    # a known predicate), each with the reason; they count as rejected verdicts.
    rejected: tuple[ClaimVerdict, ...] = ()
    # How strongly the facts point here, for ranking: see ``rank``.
    weight: int = Field(default=1, ge=0)
    # Its evidence dated against the drop it would explain (``agent.analysis.timing``): checked
    # claims kept apart from ``verdicts``, since evidence older than the drop makes the
    # family no explanation of it, not false.
    timing: tuple[ClaimVerdict, ...] = ()
    # False for a cause of slowness that is a fault only where the run shows a slowdown
    # or a stall (a busy loop in the trainer's own code, a neighbour using the cores):
    # verified on a run that shows neither, it says what the run does, not what is wrong
    # (``agent.analysis.symptoms.is_fault``).
    fault_alone: bool = True

    @model_validator(mode="before")
    @classmethod
    def _without_retired_fields(cls, data: Any) -> Any:
        """A hypothesis recorded with ``unlocks`` (a rule's wish, read by nothing and at
        odds with the playbooks' ``requires``, which say what is offered) reads without
        it: transcripts and paused sessions written before it went still load."""
        if isinstance(data, dict) and "unlocks" in data:
            return {k: v for k, v in data.items() if k != "unlocks"}
        return data

    @property
    def title(self) -> str:
        return TITLES[self.kind]

    @property
    def cites(self) -> list[str]:
        seen: list[str] = []
        for claim in self.claims:
            seen.extend(c for c in claim.cites if c not in seen)
        return seen

    def holding(self) -> int:
        return sum(v.outcome == "holds" for v in self.verdicts)

    def timing_fit(self) -> Fit:
        """ "fits" when every timing claim holds, "does_not_fit" when one fails, else
        "undated" (nothing dated, or a date not observed)."""
        outcomes = {v.outcome for v in self.timing}
        if "fails" in outcomes:
            return "does_not_fit"
        return "fits" if outcomes == {"holds"} else "undated"


def status_of(verdicts: tuple[ClaimVerdict, ...]) -> Status:
    """The status rule (module docstring), for anything made of checked claims: a
    hypothesis, or a symptom (``agent.analysis.symptoms``)."""
    outcomes = {v.outcome for v in verdicts}
    if not verdicts:
        return "unverifiable"
    if "fails" in outcomes:
        return "refuted"
    if outcomes == {"holds"}:
        return "verified"
    return "unverifiable"


def verify(hypothesis: Hypothesis, ledger: Ledger) -> Hypothesis:
    verdicts = hypothesis.rejected + tuple(check(claim, ledger) for claim in hypothesis.claims)
    return hypothesis.model_copy(update={"verdicts": verdicts, "status": status_of(verdicts)})


_STATUS_ORDER = {"verified": 0, "unverifiable": 1, "untested": 2, "refuted": 3}
_FIT_ORDER = {"fits": 0, "undated": 1, "does_not_fit": 2}


def rank(hypotheses: list[Hypothesis]) -> list[Hypothesis]:
    """Verified first; among equals, the one whose evidence is dated to the drop (its
    timing fits), then the one with more holding claims times its weight.

    A rule sets ``weight`` from the facts it found (e.g. the FX race counts the error
    lines it saw), never from prose, so the order can be explained by the facts cited.
    """
    return sorted(
        hypotheses,
        key=lambda h: (
            _STATUS_ORDER[h.status],
            _FIT_ORDER[h.timing_fit()],
            -h.holding() * h.weight,
            h.kind,
        ),
    )
