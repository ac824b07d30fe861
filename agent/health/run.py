"""Unattended health checks: one or many targets, read-only, bounded in time, against a
baseline; machine-readable results and an exit code (see ``agent.health.model``).

    targets = plan_targets(["gpu-a", "ssh://root@gpu-b/pct:200"], baselines=["good"])
    targets = plan_targets(["gpu-a"])  # no snapshot: derived, as diagnose derives it
    run = run_health(targets, ssh=SSHOptions(), jobs=4, limit=600)
    run.exit_code                      # 0 healthy, 1 regression, 2 could not check

Per target: ``agent.health.check`` (the sweep through a ``ReadOnlyTransport``, the diff,
the rule base; no fix path). Across targets: ``agent.health.fleet`` (bounded concurrency,
hard time limits). Every run is kept by ``agent.health.history``, which also answers
"since when" and draws the trends; ``agent.health.output.formats`` writes the formats.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.health.check import Cancel, HealthTarget, bounded_ssh, check_target
from agent.health.fleet import CheckFn, run_fleet
from agent.health.history import HealthHistory
from agent.health.model import HealthRun, TargetResult, exit_code
from agent.sessions.session import new_session_id
from agent.sessions.targets import resolve_target
from tools.errors import UsageError
from tools.profile import default_config_path, load_config
from tools.pseudonym import HostNames, host_names
from tools.statedir import ensure_app_state_dir
from tools.transport import SSHOptions
from tools.transport.uri import parse_target

__all__ = [
    "HealthHistory",
    "HealthRun",
    "HealthTarget",
    "TargetResult",
    "health_home",
    "plan_targets",
    "run_health",
]


def health_home() -> Path:
    return ensure_app_state_dir() / "health"


def _baselines(given: Sequence[str], targets: Sequence[tuple[str, str]]) -> dict[str, str | None]:
    """``--baseline NAME`` for every target, ``--baseline TARGET=NAME`` for one; the
    TARGET is the profile name or the URI, as given to ``--target`` or as reported. A
    target named by neither gets None: its baseline is derived from its own record, as
    ``diagnose`` derives one without ``--baseline``."""
    default: str | None = None
    override: dict[str, str] = {}
    for item in given:
        key, sep, name = item.rpartition("=")
        if not sep:
            if default is not None and default != name:
                raise UsageError(f"two default baselines: {default!r} and {name!r}")
            default = name
        elif not key or not name:
            raise UsageError(f"bad --baseline {item!r}: expected NAME or TARGET=NAME")
        else:
            override[key] = name
    known = {k for pair in targets for k in pair}
    unknown = sorted(set(override) - known)
    if unknown:
        raise UsageError(f"--baseline for unknown target(s): {', '.join(unknown)}")
    return {
        label: override.get(typed) or override.get(label) or default for typed, label in targets
    }


def plan_targets(
    targets: Sequence[str] = (),
    *,
    all_targets: bool = False,
    baselines: Sequence[str] = (),
    workspace: str | None = None,
    interpreter: str | None = None,
    config: str | None = None,
) -> list[HealthTarget]:
    """Resolve what the user typed; a target that does not resolve stops the run before
    anything is checked (the command line is wrong), a snapshot that does not exist does
    not (that target is reported as not checked, the others are checked)."""
    if all_targets and targets:
        raise UsageError("give --all or --target, not both")
    if all_targets:
        names: list[str | None] = list(load_config(config).targets)
        if not names:
            raise UsageError("--all: the profile names no targets (see dflash-doctor init)")
    else:
        names = list(targets) or [None]
    resolved = []
    for name in names:
        r = resolve_target(name, workspace=workspace, interpreter=interpreter, config=config)
        label = r.name or str(r.uri)
        resolved.append((name or label, label, r))
    labels = [label for _, label, _ in resolved]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise UsageError(f"target(s) named more than once: {', '.join(twice)}")
    chosen = _baselines(baselines, [(typed, label) for typed, label, _ in resolved])
    # The profile file is part of a target's history key (agent.health.history).
    profile = str((Path(config) if config else default_config_path()).resolve())
    return [
        HealthTarget(
            label=label,
            uri=str(r.uri),
            spec=r.spec,
            baseline=chosen[label],
            profile=profile if r.profile is not None else None,
        )
        for _, label, r in resolved
    ]


def pseudonymous(result: TargetResult, names: HostNames, host: str | None) -> TargetResult:
    """``result`` as every health output and the history keep it: ``host`` (the
    target's, as given) is its pseudonym wherever it stands, in the URI, a label that is
    the URI, and a reason quoting a transport's error. The same host is the same
    pseudonym every night, so its trend and streak join up."""
    if host is None:
        return result
    return TargetResult.model_validate(
        _each_string(result.model_dump(mode="json"), names.replacer([host]))
    )


def _each_string(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_each_string(v, change) for v in value]
    if isinstance(value, dict):
        return {change(k): _each_string(v, change) for k, v in value.items()}
    return value


def run_health(
    targets: Sequence[HealthTarget],
    *,
    ssh: SSHOptions,
    jobs: int = 4,
    limit: float = 600.0,
    trend: int = 30,
    history: HealthHistory | None = None,
    check: CheckFn | None = None,
) -> HealthRun:
    """Check ``targets`` (at most ``jobs`` at a time, ``limit`` seconds each), annotate
    the results from the history, keep the run, and return it."""
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    if limit <= 0:
        raise UsageError(f"--target-timeout must be positive, got {limit:g}")
    names = host_names()
    history = history or HealthHistory(health_home(), names)
    run_id = new_session_id()
    started = datetime.now(UTC)
    bounded = bounded_ssh(ssh, limit)

    def one(target: HealthTarget, deadline: float, cancel: Cancel) -> TargetResult:
        return check_target(target, ssh=bounded, deadline=deadline, cancel=cancel)

    results = run_fleet(targets, check or one, jobs=jobs, limit=limit)
    hosts = {t.label: parse_target(t.uri).host for t in targets}
    results = [pseudonymous(r, names, hosts.get(r.target)) for r in results]
    results = history.annotate_all(results, run_id, trend)
    code, why = exit_code(results)
    run = HealthRun(
        run=run_id,
        started_at=started,
        finished_at=datetime.now(UTC),
        exit_code=code,
        exit_reason=why,
        jobs=jobs,
        target_timeout_s=limit,
        targets=results,
    )
    history.record(run)
    return run
