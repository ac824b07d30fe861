"""The health run as a Prometheus textfile-collector file (node_exporter's
``--collector.textfile.directory``): status, regression flags per family and for the
throughput, the judged tokens/s and the baseline's (the figures the verdict followed
from), the ratio and the figure below which it is a regression, which baseline it was,
the last step's age, and when each status began.

node_exporter reads the directory at every scrape, so the file is written whole and
renamed into place (see ``agent.health.output.formats``); a half-written file is never read.
node_exporter also exports each file's mtime (``node_textfile_mtime_seconds``), and
``dflash_doctor_health_last_run_timestamp_seconds`` says when the run happened, so a
check that stopped running is itself alertable.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agent.health.model import (
    REGRESSED_BELOW,
    RULE,
    THROUGHPUT_CHECK,
    HealthRun,
    Status,
    TargetResult,
    exact,
)
from agent.rules import default_rules

STATUSES: tuple[Status, ...] = ("healthy", "regressed", "could_not_check")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


class _Family:
    def __init__(self, name: str, kind: str, help_: str) -> None:
        self.name, self.kind, self.help = name, kind, help_
        self.samples: list[str] = []

    def add(self, value: float, **labels: str) -> None:
        self.samples.append(f"{self.name}{_labels(**labels) if labels else ''} {exact(value)}")

    def lines(self) -> Iterable[str]:
        if not self.samples:
            return []
        return [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}", *self.samples]


def render(run: HealthRun) -> str:
    f = {
        name: _Family(f"dflash_doctor_{name}", "gauge", help_)
        for name, help_ in (
            ("health_status", "1 for the status the last health run found for the target."),
            ("health_up", "1 if the last health run could check the target, 0 if not."),
            ("health_regression", "1 if the last health run found a regression on the target."),
            (
                "health_regression_family",
                "1 if the failure family is verified against the baseline (checked targets).",
            ),
            (
                "health_throughput_regression",
                "1 if the judged tokens/s is below the ratio times the baseline's, 0 if not "
                "(targets whose throughput was judged).",
            ),
            ("health_regression_ratio", f"The ratio in the rule: {RULE}."),
            (
                "tokens_per_second",
                "The judged tokens/s: the subject's recent median in the train log.",
            ),
            (
                "baseline_tokens_per_second",
                "The baseline's tokens/s the judged figure was compared with.",
            ),
            (
                "regressed_below_tokens_per_second",
                "The baseline's tokens/s times the ratio: below it, the target regressed.",
            ),
            (
                "health_baseline_info",
                "1, labelled with the baseline the target was compared with: a snapshot "
                "(its name) or derived from its own record.",
            ),
            ("last_step", "The last step in the train log."),
            (
                "last_step_age_seconds",
                "Seconds from the last train-log record to the target's clock.",
            ),
            ("health_status_since_timestamp_seconds", "When the target's current status began."),
            ("health_check_duration_seconds", "How long checking the target took."),
            ("health_last_run_timestamp_seconds", "When the last health run started."),
            ("health_exit_code", "The last health run's exit code (0, 1 or 2)."),
        )
    }
    families = [r.kind for r in default_rules()]
    for t in run.targets:
        _target(t, f, families)
    f["health_regression_ratio"].add(REGRESSED_BELOW)
    f["health_last_run_timestamp_seconds"].add(round(run.started_at.timestamp(), 3))
    f["health_exit_code"].add(run.exit_code)
    return "\n".join(line for family in f.values() for line in family.lines()) + "\n"


def _target(t: TargetResult, f: dict[str, _Family], families: Sequence[str]) -> None:
    for status in STATUSES:
        f["health_status"].add(int(t.status == status), target=t.target, status=status)
    f["health_up"].add(int(t.status != "could_not_check"), target=t.target)
    f["health_regression"].add(int(t.status == "regressed"), target=t.target)
    checked = {c.name: c.status for c in t.checks if c.status in ("passed", "failed")}
    if THROUGHPUT_CHECK in checked:
        f["health_throughput_regression"].add(
            int(checked[THROUGHPUT_CHECK] == "failed"), target=t.target
        )
    f["health_baseline_info"].add(
        1,
        target=t.target,
        kind="snapshot" if t.baseline is not None else "derived",
        baseline=t.baseline or "",
    )
    for family in families:
        if family in checked:
            f["health_regression_family"].add(
                int(checked[family] == "failed"), target=t.target, family=family
            )
    for key, name in (
        ("tokens_per_s", "tokens_per_second"),
        ("baseline_tokens_per_s", "baseline_tokens_per_second"),
        ("last_step", "last_step"),
        ("last_step_age_s", "last_step_age_seconds"),
    ):
        if key in t.metrics:
            f[name].add(t.metrics[key].value, target=t.target)
    if t.judged is not None:
        f["regressed_below_tokens_per_second"].add(t.judged.threshold, target=t.target)
    if t.since is not None:
        f["health_status_since_timestamp_seconds"].add(
            round(t.since.timestamp(), 3), target=t.target
        )
    f["health_check_duration_seconds"].add(t.duration_s, target=t.target)
