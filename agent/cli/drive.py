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
from agent.sessions.runner import Outcome, build_doctor, record_outcome, run_session
from agent.sessions.session import Session
from playbooks import default_playbooks
from tools.errors import UsageError
from tools.text import model_json

if TYPE_CHECKING:
    from agent.graph.doctor import Doctor
    from agent.graph.state import DiagnosisState
    from agent.model.facts import Fact
    from agent.report.model import Report
    from tools.sweep import SweepSpec
    from tools.transport import Transport


def drive(
    session: Session,
    start: DiagnosisState | None,
    fmt: str,
    interactive: bool,
    answer: bool | None = None,
    *,
    full: bool = False,
) -> None:
    """Run ``session`` from ``start`` (None: on from where it paused; ``answer``, when
    given, to the approval question it waits at), asking at the terminal while
    ``interactive``; print the report in ``fmt``."""
    assert session.config is not None and session.config.spec is not None
    err = Console(stderr=True)
    try:
        transport = session.target(session.config.target)
        doctor = _doctor(session, transport, session.config.spec, session.config.proposer)
        reply = None if answer is None else _approval(session, doctor, answer)
        outcome = run_session(session, doctor, start=start, answer=reply)
        fresh: list[Fact] = []
        while outcome.paused is not None and interactive:
            outcome, fresh = _next_round(session, doctor, outcome, fresh, err)
        _show_new(err, fresh)  # what the last round brought, where no menu follows
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
    _say_how_it_ended(session, outcome)


def _doctor(
    session: Session, transport: Transport, spec: SweepSpec, proposer: str | None
) -> Doctor:
    """The doctor of a diagnosis: a human approves, the playbooks fit the trainer's site."""
    # Fixes need to know where the trainer lives: its workspace, launch and logs, from
    # the profile and the facts when a plan is made (agent.graph.fix_site). Without a
    # workspace, the diagnosis still runs and no playbook is offered.
    playbooks = (
        adapt(default_playbooks(), site_for(spec, transport), transport) if spec.workspace else {}
    )
    proposers = []
    if proposer:
        from agent.graph.proposer import LLMProposer, load_model  # langchain's chat models

        proposers.append(LLMProposer(load_model(proposer)))
    return build_doctor(
        session,
        transport,
        spec,
        approver="human",
        playbooks=playbooks,
        proposers=proposers,
        carry_py_spy=True,
    )


def _approval(session: Session, doctor: Doctor, answer: bool) -> dict[str, Any]:
    """``answer`` to the approval question the session waits at, bound to its plan."""
    pending = _pending_question(session, doctor)
    if pending is not None and pending.get("question") == "next":
        raise UsageError(
            f"session {session.id} waits at the menu, not for an approval: "
            f"run `dflash-doctor resume {session.id}` in a terminal"
        )
    return {"approve": answer, "digest": (pending or {}).get("plan", {}).get("digest")}


def _next_round(
    session: Session, doctor: Doctor, outcome: Outcome, fresh: list[Fact], err: Console
) -> tuple[Outcome, list[Fact]]:
    """Ask the question ``outcome`` paused at, at the terminal, and run on with the
    answer. At the menu the report's screen comes first, then what the last [p]robe or
    [t]est brought (``fresh``), right above the prompt, where it is still on the screen.
    Returns the next outcome and the facts this round brought."""
    question = outcome.paused or {}
    if question.get("question") == "next":
        guided.show(err, _report(session, outcome.state))
        _show_new(err, fresh)
        reply = guided.ask_next(question, _prompt, err.print)
    else:
        _show_new(err, fresh)
        reply = _ask_approval(err, question.get("plan", {}))
    seen = set(outcome.state.facts)
    after = run_session(session, doctor, answer=reply)
    return after, [session.ledger.get(i) for i in after.state.facts if i not in seen]


def _show_new(err: Console, fresh: list[Fact]) -> None:
    """Each new fact with what it holds."""
    guided.show_new(err, [(f.id, f.probe, fact_summary(f)) for f in fresh])


def _ask_approval(err: Console, plan: dict[str, Any]) -> dict[str, Any]:
    """The fix ``plan`` shown whole, and whether to apply it."""
    err.print(
        f"fix {plan.get('playbook')} answers {plan.get('hypothesis')}: "
        + "; ".join(plan.get("steps", [])),
        markup=False,
    )
    for change in plan.get("changes", []):
        err.print(change.get("diff", ""), markup=False)
    ok = typer.confirm("apply this fix?", default=False, err=True)
    return {"approve": ok, "digest": plan.get("digest")}


def _say_how_it_ended(session: Session, outcome: Outcome) -> None:
    """How to go on from a pause; exit 1 when no verdict was reached."""
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
