"""torch is imported on the target only when a family asks for runtime introspection.

The target's Python here is this .venv's (real torch), started through a small wrapper
that adds ``-X importtime`` and keeps each bundle's import log in a file of its own: the
log lists every module each bundle process (and each forked probe) imported, so "torch
was not imported" is read from the interpreter itself, not inferred from the plan.
Workspaces are the reference trainer's own (tests/lib/workspaces.py).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from agent.analysis.baseline import baseline_store
from agent.graph.state import DiagnosisState
from agent.health.check import HealthTarget, check_target
from agent.model.claims import resolve
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis
from agent.rules import default_rules
from agent.rules.base import Evidence, Rule
from agent.rules.fx_trace_race import FxTraceRace
from agent.sessions.config import SessionConfig
from agent.sessions.runner import build_doctor, run_session
from agent.sessions.session import Session
from tools.sweep import SweepSpec
from tools.transcript import read_transcript
from tools.transport import SSHOptions

pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.timeout(300)]


class ReadsTorchRuntime:
    """A family that needs runtime introspection: the FX-race family as shipped, needing
    what ``torch_runtime`` answers as well (no shipped rule does yet). It keeps the
    ``torch_runtime`` fact it was given, to show the family had it before it proposed."""

    def __init__(self) -> None:
        self.inner = FxTraceRace()
        self.kind = self.inner.kind
        self.needs = self.inner.needs | {"torch_runtime"}
        self.seen: list[Fact | None] = []

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        self.seen.append(evidence.latest("torch_runtime"))
        return self.inner.propose(evidence)


def traced_python(tmp_path: Path) -> tuple[str, Path]:
    """An interpreter for the spec: this Python with ``-X importtime``, each run's log
    numbered in the order the bundles ran (the gatherer sends one at a time)."""
    logs = tmp_path / "importtime"
    logs.mkdir()
    wrapper = tmp_path / "python-importtime"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'n=$(ls "{logs}" | wc -l)\n'
        f'exec "{sys.executable}" -X importtime "$@" 2> "{logs}/$n.log"\n'
    )
    wrapper.chmod(0o755)
    return str(wrapper), logs


def imported(log: Path) -> set[str]:
    """The modules an ``-X importtime`` log says were imported."""
    lines = [ln for ln in log.read_text().splitlines() if ln.startswith("import time:")]
    return {ln.rsplit("|", 1)[-1].strip() for ln in lines} - {"imported package"}


def torch_modules(log: Path) -> set[str]:
    return {m for m in imported(log) if m == "torch" or m.startswith("torch.")}


def bundle_logs(logs: Path) -> list[Path]:
    return sorted(logs.glob("*.log"), key=lambda p: int(p.stem))


def diagnose(ws: Path, interpreter: str, rules: list[Rule]) -> tuple[DiagnosisState, Ledger]:
    at = SweepSpec.for_workspace(str(ws), interpreter=interpreter)
    session = Session.create(SessionConfig(command="diagnose", target="local", spec=at))
    doctor = build_doctor(session, session.target("local"), at, rules=rules)
    outcome = run_session(session, doctor, start=DiagnosisState(target="local"))
    session.close()
    return outcome.state, session.ledger


def test_a_full_diagnosis_never_imports_torch_on_the_target(
    good_workspace: Path, tmp_path: Path
) -> None:
    """Every family as shipped, on a trainer's workspace whose Python has torch: one
    bundle ran, it imported no torch module, and what the families read of torch (its
    version, its FX check's source) was still observed, from files."""
    python, logs = traced_python(tmp_path)
    state, ledger = diagnose(good_workspace, python, default_rules())
    (log,) = bundle_logs(logs)
    assert {"json", "ast"} <= imported(log)  # the log is the bundle's
    assert torch_modules(log) == set()
    facts = {ledger.get(i).probe: ledger.get(i) for i in state.facts}
    assert "torch_runtime" not in facts
    version = resolve(facts["pyenv"], ("torch", "version"))
    assert isinstance(version, str) and version.startswith("2."), facts["pyenv"]
    assert resolve(facts["torch_source"], ("binds_check_at_wrap", "value")) in (True, False)


def test_a_family_that_needs_runtime_introspection_gets_it_on_demand(
    good_workspace: Path, tmp_path: Path
) -> None:
    """One family needs ``torch_runtime``: the first sweep still imports no torch, then
    that family's node sends a bundle of its own that does, and the family proposes
    with the answer in hand."""
    python, logs = traced_python(tmp_path)
    family = ReadsTorchRuntime()
    rules = [family if r.kind == family.kind else r for r in default_rules()]
    state, _ = diagnose(good_workspace, python, rules)
    first, second = bundle_logs(logs)
    assert torch_modules(first) == set()
    assert {"torch", "torch._dynamo"} <= torch_modules(second)
    (runtime,) = family.seen
    assert runtime is not None and runtime.ok, runtime
    assert runtime.id in state.facts
    assert resolve(runtime, ("is_fx_symbolic_tracing", "is_torch_own")) is True


def test_a_health_check_lets_a_familys_on_demand_bundle_through(tmp_path: Path) -> None:
    """Read-only mode registers what a family may still ask for besides the sweep: the
    torch_runtime bundle runs through the guard, nothing is refused, and the family
    got its fact."""
    python, logs = traced_python(tmp_path)
    baseline_store().save("empty", "local", [])
    family = ReadsTorchRuntime()
    spec = SweepSpec(interpreter=python)
    t = HealthTarget(label="local", uri="local", spec=spec, baseline="empty")
    result = check_target(t, ssh=SSHOptions(), deadline=time.monotonic() + 240, rules=[family])
    assert result.transcript is not None, result
    _header, events = read_transcript(Path(result.transcript))
    assert not [e for e in events if e["type"] == "refused"]
    assert [e["argv"] for e in events if e["type"].startswith("command")] == [
        [python, "-B", "-"]
    ] * 2
    first, second = bundle_logs(logs)
    assert torch_modules(first) == set() and "torch" in torch_modules(second)
    (runtime,) = family.seen
    assert runtime is not None and runtime.ok, runtime
    recorded = [e["fact"] for e in events if e["type"] == "fact"]
    assert any(f["probe"] == "torch_runtime" and f["id"] == runtime.id for f in recorded)
