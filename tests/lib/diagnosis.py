"""A diagnosis run in-process on a local workspace, as the CLI runs one, and the checks
every diagnosis test makes of its report."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from agent.analysis.baseline import baseline_store
from agent.graph.state import DiagnosisState
from agent.model.facts import Ledger
from agent.report.build import build_report
from agent.report.markdown import render_markdown
from agent.sessions.config import SessionConfig
from agent.sessions.runner import build_doctor, run_session
from agent.sessions.session import Session
from tests.lib import oracle
from tools.sweep import SweepSpec


def spec(ws: Path, **profile: Any) -> SweepSpec:
    return SweepSpec.for_workspace(str(ws), interpreter=sys.executable, **profile)


def snapshot(ws: Path, name: str = "good", **profile: Any) -> None:
    at = spec(ws, **profile)
    session = Session.create(SessionConfig(command="snapshot", target="local", spec=at))
    doctor = build_doctor(session, session.target("local"), at)
    facts = doctor.gather(None)
    session.close()
    baseline_store().save(name, "local", facts)


def diagnose(
    ws: Path, baseline: str | None = "good", **profile: Any
) -> tuple[DiagnosisState, Ledger, str]:
    at = spec(ws, **profile)
    config = SessionConfig(command="diagnose", target="local", spec=at, baseline=baseline)
    session = Session.create(config)
    try:
        doctor = build_doctor(session, session.target("local"), at)
        start = DiagnosisState(target="local", baseline=baseline)
        outcome = run_session(session, doctor, start=start)
    finally:
        session.close()
    report = render_markdown(build_report(outcome.state, session.ledger, session.id))
    # Every figure of the train-log facts it read, recomputed from the log by the oracle.
    for fact_id in outcome.state.facts:
        fact = session.ledger.get(fact_id)
        if fact.probe == "trainlog":
            assert oracle.check_fact_value(fact.value) == [], fact_id
    return outcome.state, session.ledger, report


def statuses(state: DiagnosisState) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for h in state.hypotheses:
        out.setdefault(h.kind, set()).add(h.status)
    return out


def assert_grounded(state: DiagnosisState, ledger: Ledger, report: str) -> None:
    """Every fact id the report prints is in the ledger and listed with its command."""
    cited = set(re.findall(r"F-[0-9a-f]{4,}", report))
    assert cited, "a report without citations"
    for fact_id in cited:
        assert fact_id in ledger, fact_id
        assert f"| {fact_id} |" in report, f"{fact_id} is cited but not listed with its command"
    for hyp in state.hypotheses:
        for verdict in hyp.verdicts:
            assert verdict.outcome != "rejected", verdict


def explain(state: DiagnosisState) -> str:
    """The ranked hypotheses with their verdicts, for a failing assert's message."""
    lines = []
    for h in state.hypotheses:
        lines.append(f"{h.kind}: {h.status}")
        lines += [f"  {v.outcome}: {v.sentence}" for v in h.verdicts]
    return "\n".join(lines)
