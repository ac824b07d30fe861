"""What a health check produces: per-target results made of checks, and the run's exit code.

Every sentence a result carries is a claim verdict rendered by ``agent.claims`` (with the
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
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

FORMAT: Final = "dflash-doctor-health/1"

Status = Literal["healthy", "regressed", "could_not_check"]
CheckStatus = Literal["passed", "failed", "error", "skipped"]

EXIT_HEALTHY, EXIT_REGRESSION, EXIT_NOT_CHECKED = 0, 1, 2

SWEEP_CHECK = "sweep"
SYMPTOMS_CHECK = "symptoms"  # what the run did over time (agent.symptoms)
SYMPTOMS_TITLE = "what the run did over time"
APPLIES_CHECK = "applies"  # an apply of the doctor's left unfinished (agent.applies)


class Cited(BaseModel):
    """One sentence and the facts it was rendered from."""

    model_config = ConfigDict(frozen=True)

    text: str
    cites: list[str] = Field(default_factory=list)
    outcome: Literal["holds", "fails", "unverifiable", "rejected", "info"] = "info"


class Check(BaseModel):
    """One thing checked on one target: the sweep itself, the symptoms, or one family.

    ``failed``: a regression (the family's hypothesis is verified); ``error``: it could
    not be decided (unverifiable, or the target could not be reached); ``skipped``: never
    tried because the target could not be reached.
    """

    name: str
    title: str
    status: CheckStatus
    message: str = ""
    lines: list[Cited] = Field(default_factory=list)
    since: datetime | None = None
    """For a failed check: the first run of the unbroken streak in which it failed."""


class Metric(BaseModel):
    """A number read from facts (``cites``), e.g. the drafter's recent tokens/s."""

    model_config = ConfigDict(frozen=True)

    value: float
    cites: list[str]
    label: str


class CitedFact(BaseModel):
    """A fact that a result cites, with the command that produced it."""

    model_config = ConfigDict(frozen=True)

    id: str
    probe: str
    command: str
    baseline: bool = False


class TrendPoint(BaseModel):
    model_config = ConfigDict(frozen=True)

    run: str
    at: datetime
    status: Status
    tokens_per_s: float | None = None


class TargetResult(BaseModel):
    target: str
    """The label: the profile name, or the URI when the target was given as one."""
    uri: str
    baseline: str
    status: Status
    reason: str = ""
    """Why a target could not be checked, or which families regressed."""
    verdict: str | None = None
    session: str | None = None
    transcript: str | None = None
    started_at: datetime
    duration_s: float
    checks: list[Check] = Field(default_factory=list)
    metrics: dict[str, Metric] = Field(default_factory=dict)
    """``tokens_per_s``, ``baseline_tokens_per_s``, ``last_step``, ``last_step_age_s``."""
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
    format: Literal["dflash-doctor-health/1"] = FORMAT
    run: str
    started_at: datetime
    finished_at: datetime
    exit_code: int
    exit_reason: str
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
