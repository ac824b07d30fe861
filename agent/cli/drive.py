"""Driving a diagnosis session to its report, for ``diagnose`` and ``resume``: build the
collaborators, run the graph, ask its questions at a terminal, print the report."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markdown import Markdown

from agent.graph.fix_site import site_for
from agent.graph.playbook_adapter import adapt
from agent.report import terminal as guided
from agent.report.build import build_report
from agent.report.markdown import render_markdown
from agent.report.summaries import fact_summary
from agent.sessions.runner import build_doctor, record_outcome, run_session
from agent.sessions.session import Session
from playbooks import default_playbooks
from tools.errors import UsageError
from tools.text import model_json

if TYPE_CHECKING:
    from agent.graph.doctor import Doctor
    from agent.graph.state import DiagnosisState
    from agent.report.model import Report


def drive(
    session: Session,
    start: DiagnosisState | None,
    fmt: str,
    interactive: bool,
    answer: bool | None = None,
    *,
    full: bool = False,
) -> None:

    assert session.config is not None and session.config.spec is not None
    err = Console(stderr=True)
    try:
        transport = session.target(session.config.target)
        spec = session.config.spec
        # Fixes need to know where the trainer lives: its workspace, launch and logs, from
        # the profile and the facts when a plan is made (agent.graph.fix_site). Without a
        # workspace, the diagnosis still runs and no playbook is offered.
        playbooks = (
            adapt(default_playbooks(), site_for(spec, transport), transport)
            if spec.workspace
            else {}
        )
        proposers = []
        if session.config.proposer:
            from agent.graph.proposer import LLMProposer, load_model  # langchain's chat models

            proposers.append(LLMProposer(load_model(session.config.proposer)))
        doctor = build_doctor(
            session,
            transport,
            spec,
            approver="human",
            playbooks=playbooks,
            proposers=proposers,
            carry_py_spy=True,
        )
        reply = None
        if answer is not None:
            pending = _pending_question(session, doctor)
            if pending is not None and pending.get("question") == "next":
                raise UsageError(
                    f"session {session.id} waits at the menu, not for an approval: "
                    f"run `dflash-doctor resume {session.id}` in a terminal"
                )
            reply = {"approve": answer, "digest": (pending or {}).get("plan", {}).get("digest")}
        outcome = run_session(session, doctor, start=start, answer=reply)
        while outcome.paused is not None and interactive:
            question = outcome.paused
            seen = set(outcome.state.facts)
            if question.get("question") == "next":
                guided.show(err, _report(session, outcome.state))
                reply = guided.ask_next(question, _prompt, err.print)
            else:
                plan = question.get("plan", {})
                err.print(
                    f"fix {plan.get('playbook')} answers {plan.get('hypothesis')}: "
                    + "; ".join(plan.get("steps", [])),
                    markup=False,
                )
                for change in plan.get("changes", []):
                    err.print(change.get("diff", ""), markup=False)
                ok = typer.confirm("apply this fix?", default=False, err=True)
                reply = {"approve": ok, "digest": plan.get("digest")}
            outcome = run_session(session, doctor, answer=reply)
            # What a [p]robe or [t]est brought: each new fact, with what it holds.
            fresh = [session.ledger.get(i) for i in outcome.state.facts if i not in seen]
            guided.show_new(err, [(f.id, f.probe, fact_summary(f)) for f in fresh])
        if outcome.paused is None:
            # A paused session is not finished: its outcome (the plan, the answer, what
            # the fix did) is recorded once, when ``resume`` finishes it.
            record_outcome(session, outcome.state)
    finally:
        session.close()
    report = _report(session, outcome.state)
    if fmt == "json":
        typer.echo(model_json(report, indent=1))
    else:
        Console().print(Markdown(render_markdown(report, full=full)))
    if outcome.paused is not None:
        if outcome.paused.get("question") == "next":
            hint = f"paused at the menu: run `dflash-doctor resume {session.id}` in a terminal"
        else:
            hint = (
                f"paused for approval: dflash-doctor resume {session.id} --approve (or --decline)"
            )
        typer.echo(hint, err=True)
    elif outcome.state.verdict is None:
        raise typer.Exit(1)  # no verdict reached (see the log for why)


def _report(session: Session, state: DiagnosisState) -> Report:
    """The report printed here: its facts as recorded, its target as the user gave it
    (the state keeps the transcript's placeholder for the host)."""
    report = build_report(state, session.ledger, session.id)
    if session.config is None:
        return report
    return report.model_copy(update={"target": session.config.target})


def _prompt(text: str) -> str:
    """A line from the terminal; end of input is the answer "stop"."""
    try:
        return str(typer.prompt(text, default="", show_default=False, err=True))
    except (typer.Abort, EOFError):
        return "stop"


def _pending_question(session: Session, doctor: Doctor) -> dict[str, Any] | None:
    from agent.graph.wiring import build_graph, sqlite_checkpointer

    graph = build_graph(
        doctor.rules, checkpointer=sqlite_checkpointer(session.graph_path, session.recorded)
    )
    snapshot_ = graph.get_state({"configurable": {"thread_id": session.id}})
    for task in snapshot_.tasks:
        for interrupt_ in task.interrupts:
            value = interrupt_.value
            if isinstance(value, dict):
                return value
    return None
