"""The graph's side of a fix's target: the ``TrainerSite`` (playbooks.site) a playbook
acts on, built from the profile and the session's facts, and what the restarted run's
throughput is judged by.

The launch is the profile's (file or command), else the running trainer's (the processes
fact: command line, working directory, environment; the interpreter fact: its Python),
else a launch file the workspace discovery found (the layout fact) — never a fixed name.
The train and stdout logs are the sweep's, else the layout fact's first candidates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.analysis.throughput import subject
from agent.rules.base import Evidence
from playbooks import Remote, TrainerSite
from playbooks.measure import Measure, overall_median
from playbooks.site import running_trainer, site
from tools.errors import ApplyError
from tools.probes import value_paths as vp
from tools.sweep import SweepSpec
from tools.transport.base import Transport

__all__ = ["measure_for", "series_words", "site_for"]


def _first(candidates: object) -> str | None:
    if not isinstance(candidates, list) or not candidates:
        return None
    path = candidates[0].get("path") if isinstance(candidates[0], dict) else None
    return str(path) if path else None


def _trainer_python(evidence: Evidence, pid: int) -> str | None:
    """The interpreter fact's path when discovery chose it as that process's."""
    chosen = evidence.value("interpreter")
    if not isinstance(chosen, dict) or not chosen.get("discovered"):
        return None
    for candidate in chosen.get("candidates") or []:
        if candidate.get("verdict") == "running trainer" and str(
            candidate.get("source", "")
        ).startswith(f"process {pid}:"):
            return str(candidate["path"])
    return None


def _launch_file(evidence: Evidence, remote: Remote) -> str | None:
    """The first launch file workspace discovery found that starts the trainer with an
    ``exec`` line (the one line a playbook edits)."""
    candidates = evidence.value("layout", *vp.LAUNCH_FILES)
    for candidate in candidates if isinstance(candidates, list) else []:
        path = candidate.get("path") if isinstance(candidate, dict) else None
        if not path:
            continue
        try:
            text = remote.read(str(path)).decode(errors="replace")
        except ApplyError:
            continue
        if any(line.lstrip().startswith("exec ") for line in text.splitlines()):
            return str(path)
    return None


def site_for(spec: SweepSpec, transport: Transport) -> Callable[[Evidence], TrainerSite]:
    """The site of the trainer ``spec`` sweeps, from the facts a plan is made from."""

    def build(evidence: Evidence) -> TrainerSite:
        process = running_trainer(evidence.value("processes"), spec.workspace)
        workspace = spec.workspace or (str(process["cwd"]) if process else None)
        if not workspace:
            raise ApplyError("no workspace known for the trainer (--workspace or the profile)")
        # The Python the sweep ran on (discovered or given) runs the fix's operations too.
        ran = evidence.value("interpreter", *vp.INTERPRETER_PATH)
        python_here = ran if isinstance(ran, str) and ran else spec.interpreter
        remote = Remote(transport, interpreter=python_here)
        train_log = spec.train_log or _first(evidence.value("layout", *vp.TRAIN_LOGS))
        stdout_log = spec.stdout_log or _first(evidence.value("layout", *vp.STDOUT_LOGS))
        launch = spec.launch
        if launch is None and process is None:
            launch = _launch_file(evidence, remote)
        python = stdio = None
        if launch is None and process is not None:
            python = _trainer_python(evidence, int(process["pid"]))
            stdio = remote.stdio(int(process["pid"]))
        found = site(
            workspace=workspace,
            train_log=train_log,
            stdout_log=stdout_log,
            interpreter=python_here,
            launch=launch,
            process=process,
            python=python,
            stdio=stdio,
            launch_source=None
            if spec.launch
            else f"the launch file {launch} (found in the workspace)",
            log_fields=spec.log_fields,
            throughput_unit=spec.throughput_unit,
            extra_signatures=spec.extra_signatures,
        )
        return found

    return build


def series_words(evidence: Evidence) -> str:
    """What the measured series is called ("drafter ", "rank=0 ", ""), as the diagnosis
    named it (agent.analysis.throughput's subject)."""
    found = subject(evidence.latest("trainlog"))
    return found.who if found is not None else ""


def measure_for(evidence: Evidence) -> Measure:
    """The restarted run's tokens/s, read as the diagnosis read the run's own: the same
    series (agent.analysis.throughput's subject) in the new window's summary."""
    found = subject(evidence.latest("trainlog"))
    if found is None:
        return overall_median
    path = found.path
    # The records behind it: one series' own, an aggregate's members', or the log's.
    series = [path[1]] if path[0] == "groups" else list(found.members)

    def measure(summary: dict[str, Any]) -> tuple[float | None, int]:
        value: Any = summary
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        groups = summary.get("groups") or {}
        counts = [(groups.get(g) or {}).get("records") for g in series]
        records = sum(c for c in counts if isinstance(c, int)) if series else summary.get("records")
        return (
            float(value) if isinstance(value, int | float) else None,
            records if isinstance(records, int) else 0,
        )

    return measure
