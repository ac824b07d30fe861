"""What a health check produces: per-target results made of checks, and the run's exit code.

Every sentence a result carries is a claim verdict rendered by ``agent.model.claims`` (with the
fact ids it cites), a value read from a cited fact, or what the doctor itself met on the
way (a transport error, a time limit): never prose about the target.

Exit codes, for cron, systemd and CI:

    0  every target was checked and is healthy
    1  a regression was found on at least one target
    2  a target could not be checked (unreachable, timed out, insufficient evidence), or
       the command was used wrongly (then nothing was checked)

When both 1 and 2 apply, **1 wins**: a verified regression is a definite answer that
somebody must act on, while a target that could not be checked is a question; every
output still lists the could-not-check targets, so neither is lost.

A target is regressed when one of its checks failed (``RULE``). For throughput that is
the ``throughput`` check alone: the judged tokens/s (``Judged.value``, the figure every
output prints) below ``REGRESSED_BELOW`` times the baseline's (``Judged.baseline``, also
printed). A fall inside the run's own log is told by the ``symptoms`` check and decides
nothing: a run that fell from 3,000 to 2,000 tokens/s against a baseline of 1,500 did not
regress. Where no figure could be judged against a baseline (a run whose speed only its
console's progress bar or its checkpoints' pace shows), the ``symptoms`` check is the one
on the speed: a confirmed fall fails it, and a speed not seen holding leaves the target
not checked.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent.analysis.change_points import DROP

FORMAT: Final = "dflash-doctor-health/1"

Status = Literal["healthy", "regressed", "could_not_check"]
CheckStatus = Literal["passed", "failed", "error", "skipped"]

EXIT_HEALTHY, EXIT_REGRESSION, EXIT_NOT_CHECKED = 0, 1, 2

SWEEP_CHECK = "sweep"
THROUGHPUT_CHECK = "throughput"  # the judged tokens/s against the baseline's
THROUGHPUT_TITLE = "tokens/s against the baseline"
SYMPTOMS_CHECK = "symptoms"  # what the run did over time (agent.analysis.symptoms)
SYMPTOMS_TITLE = "what the run did over time"
APPLIES_CHECK = "applies"  # an apply of the doctor's left unfinished (agent.analysis.applies)

# The ratio below which the judged tokens/s is a regression: the symptom layer's drop,
# so that "fell" means one thing, whether against the run's own earlier windows (a
# symptom) or against the baseline (the verdict).
REGRESSED_BELOW: Final = DROP
RULE: Final = (
    f"regressed when a check failed: the judged tokens/s below {REGRESSED_BELOW:g}× the "
    "baseline's (the throughput check); the run's own speed fallen where no figure is "
    "judged against a baseline, a loss gone NaN or diverged, or a live trainer whose logs "
    "stopped (the symptoms check); a failure family verified against the baseline; "
    "or an apply of the doctor's left unfinished"
)


class Cited(BaseModel):
    """One sentence and the facts it was rendered from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    cites: list[str] = Field(default_factory=list)
    outcome: Literal["holds", "fails", "unverifiable", "rejected", "info"] = "info"


class Check(BaseModel):
    """One thing checked on one target: the sweep itself, the symptoms, or one family.

    ``failed``: a regression (the family's hypothesis is verified); ``error``: it could
    not be decided (unverifiable, or the target could not be reached); ``skipped``: never
    tried because the target could not be reached.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    title: str
    status: CheckStatus
    message: str = ""
    lines: list[Cited] = Field(default_factory=list)
    since: datetime | None = None
    """For a failed check: the first run of the unbroken streak in which it failed."""


class Metric(BaseModel):
    """A number read from facts (``cites``), e.g. the drafter's recent tokens/s."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float
    cites: list[str]
    label: str


class Judged(BaseModel):
    """The throughput a target was judged on: the subject's figure now (``value``) and the
    baseline's (``baseline``), each read from the fact it cites. The throughput check
    fails exactly when ``value < baseline × ratio``; every output prints these figures."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str
    """What was judged: "drafter tokens/s (median of the last N records)"."""
    value: float
    value_fact: str
    baseline: float
    baseline_fact: str
    """A snapshot's fact, or the current fact the derived baseline was read from."""
    ratio: float = REGRESSED_BELOW

    @property
    def threshold(self) -> float:
        """Below this, the target regressed on throughput."""
        return self.baseline * self.ratio


def figure(value: float) -> str:
    """A tokens/s figure as a person reads it (Markdown, charts, messages): 1,932, not
    1932.4817."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.4g}"


def exact(value: float) -> str:
    """A figure as a machine reads it (Prometheus, JUnit properties): the same number as
    the JSON document's, never rounded (``:g`` would print 1234567.0 as 1.23457e+06)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class CitedFact(BaseModel):
    """A fact that a result cites, with the command that produced it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    probe: str
    command: str
    baseline: bool = False


class TrendPoint(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    run: str
    at: datetime
    status: Status
    tokens_per_s: float | None = None
    regressions: list[str] = Field(default_factory=list)
    """The checks that failed in that run (``throughput`` when the figure was judged low)."""


class TargetResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    target: str
    """The label: the profile name, or the URI when the target was given as one."""
    uri: str
    workspace: str | None = None
    """The workspace checked (the target's history is kept per label, URI, workspace and
    profile: ``agent.health.history``)."""
    profile: str | None = None
    """The profile file (doctor.toml) the target's settings came from, if any."""
    baseline: str | None = None
    """The snapshot's name; None when the baseline was derived (``baseline_used`` says
    from what)."""
    baseline_used: Cited | None = None
    """Which baseline the checks compared with: the snapshot, or what the derived one
    was read from, citing the facts."""
    status: Status
    reason: str = ""
    """Why a target could not be checked, or which families regressed."""
    verdict: str | None = None
    session: str | None = None
    transcript: str | None = None
    started_at: datetime
    duration_s: float
    checks: list[Check] = Field(default_factory=list)
    judged: Judged | None = None
    """The throughput the ``throughput`` check judged, when there was one to judge."""
    metrics: dict[str, Metric] = Field(default_factory=dict)
    """``tokens_per_s``, ``baseline_tokens_per_s``, ``last_step``, ``last_step_age_s``;
    the first two are ``judged``'s figures when it is set."""
    facts: list[CitedFact] = Field(default_factory=list)
    since: datetime | None = None
    """When the current status began: the first run of its unbroken streak (this run's
    time when the previous run had another status, or there was none)."""
    since_runs: int = 1
    trend: list[TrendPoint] = Field(default_factory=list)
    """Earlier runs' throughput for this target, oldest first, this run last."""

    @property
    def regressions(self) -> list[str]:
        return [c.name for c in self.checks if c.status == "failed"]


class HealthRun(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: Literal["dflash-doctor-health/1"] = FORMAT
    run: str
    started_at: datetime
    finished_at: datetime
    exit_code: int
    exit_reason: str
    rule: str = RULE
    """When a target is regressed, as every output states it."""
    jobs: int
    target_timeout_s: float
    targets: list[TargetResult]

    def count(self, status: Status) -> int:
        return sum(t.status == status for t in self.targets)


def exit_code(results: list[TargetResult]) -> tuple[int, str]:
    """The run's exit code and why; see the module docstring for the precedence."""
    regressed = [r.target for r in results if r.status == "regressed"]
    unchecked = [r.target for r in results if r.status == "could_not_check"]
    if regressed:
        why = f"regression found on {', '.join(regressed)}"
        if unchecked:
            why += f" (could not check {', '.join(unchecked)})"
        return EXIT_REGRESSION, why
    if unchecked:
        return EXIT_NOT_CHECKED, f"could not check {', '.join(unchecked)}"
    if not results:
        return EXIT_NOT_CHECKED, "no targets"
    return EXIT_HEALTHY, f"all {len(results)} target(s) healthy"
