"""Running a session (``agent.sessions.runner``): the doctor built from the session and
its target, the graph started, answered or continued from the session's own checkpoint
with where it paused said, and the outcome recorded into the transcript after the
commands, once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from agent.analysis.baseline import BaselineStore
from agent.graph.doctor import Doctor, Fixer
from agent.graph.gather import SweepGatherer
from agent.graph.state import Answer, Choice, DiagnosisState, Refusal
from agent.model.facts import Fact
from agent.model.hypotheses import Hypothesis
from agent.rules import default_rules
from agent.rules.base import Rule
from agent.sessions import runner
from agent.sessions.config import SessionConfig
from agent.sessions.runner import build_doctor, record_outcome, run_session
from agent.sessions.session import Session
from tools.errors import ConfigError
from tools.sweep import SweepSpec
from tools.transcript import read_transcript
from tools.transport.base import Transport

TRANSPORT = cast(Transport, object())  # nothing is run on the target here
QUESTION = {"question": "approve", "plan": {"playbook": "pin-torch"}}


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    """A new diagnosis session of ``local`` in ``tmp_path``; closed after the test."""
    made = Session.create(SessionConfig(command="diagnose", target="local"), root=tmp_path)
    yield made
    made.close()


def test_a_doctor_reads_and_files_the_sessions_facts_with_the_defaults(session: Session) -> None:
    """Built from a session alone, the doctor files facts in the session's ledger through
    a sweep of the target (py-spy not carried), sanitizes them as the session records
    them, runs the default rules against this installation's baselines, has no playbook
    or proposer, and never approves a fix."""
    spec = SweepSpec(workspace="/srv/ws")
    doctor = build_doctor(session, TRANSPORT, spec)
    assert doctor.ledger is session.ledger
    assert isinstance(doctor.gather, SweepGatherer)
    gather = doctor.gather
    assert (gather.transport, gather.spec, gather.ledger, gather.carry) == (
        TRANSPORT,
        spec,
        session.ledger,
        False,
    )
    assert doctor.sanitize == session.sanitize
    assert [type(r) for r in doctor.rules] == [type(r) for r in default_rules()]
    assert isinstance(doctor.baselines, BaselineStore)
    assert (doctor.playbooks, doctor.approver, doctor.proposers) == ({}, "never", ())


def test_a_doctor_takes_what_it_is_given(session: Session, tmp_path: Path) -> None:
    """The approver, playbooks, rules, baselines and proposers given are the doctor's,
    and ``carry_py_spy`` makes its sweeps carry py-spy."""
    rules: list[Rule] = default_rules()[:1]
    fixer = cast(Fixer, object())
    store = BaselineStore(tmp_path / "baselines")
    doctor = build_doctor(
        session,
        TRANSPORT,
        SweepSpec(),
        approver="human",
        playbooks={"pin-torch": fixer},
        rules=rules,
        baselines=store,
        carry_py_spy=True,
    )
    assert (doctor.approver, doctor.playbooks, doctor.rules, doctor.baselines) == (
        "human",
        {"pin-torch": fixer},
        rules,
        store,
    )
    assert isinstance(doctor.gather, SweepGatherer) and doctor.gather.carry is True


@pytest.fixture
def graphs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """The diagnosis graph is a stand-in of two nodes, built on the checkpointer the
    runner gives it: ``ask`` waits for an approval (``QUESTION``) and keeps the answer,
    ``conclude`` sets the verdict. Yields whether each build asked for the fix branch."""
    built: list[bool] = []

    def ask(state: DiagnosisState) -> dict[str, Any]:
        return {"approved": interrupt(QUESTION), "approved_by": "engineer"}

    def conclude(state: DiagnosisState) -> dict[str, Any]:
        return {"verdict": "fault_found"}

    def build_graph(
        rules: list[Rule], *, checkpointer: BaseCheckpointSaver[Any], fixes: bool
    ) -> Any:
        built.append(fixes)
        graph = StateGraph(DiagnosisState)
        graph.add_node("ask", ask)
        graph.add_node("conclude", conclude)
        graph.add_edge(START, "ask")
        graph.add_edge("ask", "conclude")
        graph.add_edge("conclude", END)
        return graph.compile(checkpointer=checkpointer)

    monkeypatch.setattr(runner, "build_graph", build_graph)
    yield built


def doctor_of(session: Session) -> Doctor:
    return build_doctor(session, TRANSPORT, SweepSpec(), rules=[])


def test_a_graph_waiting_for_an_answer_says_its_question(
    session: Session, graphs: list[bool]
) -> None:
    """Started, a graph that stops for an approval is paused with its question; the
    state is where it stopped, nothing approved yet."""
    outcome = run_session(session, doctor_of(session), start=DiagnosisState(target="local"))
    assert outcome.paused == QUESTION
    assert outcome.state == DiagnosisState(target="local")
    assert session.graph_path.exists()
    assert graphs == [True]


@pytest.mark.parametrize("answer", [True, False], ids=["approve", "decline"])
def test_an_answer_goes_on_from_the_checkpoint(
    session: Session, graphs: list[bool], answer: bool
) -> None:
    """Answered (yes or no), the paused graph goes on from its checkpoint with that
    answer to its end: no longer paused, the answer and the verdict in the state."""
    doctor = doctor_of(session)
    run_session(session, doctor, start=DiagnosisState(target="local"))
    outcome = run_session(session, doctor, answer=answer)
    assert outcome.paused is None
    assert (outcome.state.approved, outcome.state.approved_by) == (answer, "engineer")
    assert outcome.state.verdict == "fault_found"


def test_continuing_without_an_answer_asks_again(session: Session, graphs: list[bool]) -> None:
    """Continued without an answer (after a crash), a graph that waits for one is paused
    with the same question again."""
    doctor = doctor_of(session)
    run_session(session, doctor, start=DiagnosisState(target="local"))
    assert run_session(session, doctor).paused == QUESTION


def test_the_fix_branch_is_left_out_when_asked(session: Session, graphs: list[bool]) -> None:
    """``fixes=False`` builds the graph without its fix branch."""
    run_session(session, doctor_of(session), start=DiagnosisState(target="local"), fixes=False)
    assert graphs == [False]


@pytest.mark.parametrize("answer", [None, True], ids=["continue", "answer"])
def test_a_session_with_no_saved_state_cannot_go_on(
    session: Session, graphs: list[bool], answer: bool | None
) -> None:
    """Continuing or answering a session whose checkpoint database holds nothing for it
    is a one-line error naming the database and the session, saying to start anew."""
    with pytest.raises(ConfigError) as info:
        run_session(session, doctor_of(session), answer=answer)
    assert str(info.value) == (
        f"{session.graph_path}: holds no saved state for session {session.id}; "
        "it cannot be resumed (start a new diagnosis)"
    )


def events_of(session: Session) -> list[dict[str, Any]]:
    """The transcript's events less the writer's envelope (``seq``, ``prev``)."""
    _, events = read_transcript(session.transcript_path)
    return [{k: v for k, v in e.items() if k not in ("seq", "prev")} for e in events]


def test_the_outcome_is_recorded_in_order_ending_in_the_verdict(session: Session) -> None:
    """The facts come first, then proposer answers, refusals, menu choices, the symptoms
    (even none), the hypotheses, and last the verdict event with what the report reads."""
    fact = session.ledger.append(Fact(probe="host", target="local", value={"cpus": 8}))
    state = DiagnosisState(
        target="local",
        facts=[fact.id],
        answers=[Answer(source="llm:a", text="[]")],
        refused=[Refusal(source="llm:a", reason="no cite")],
        choices=[Choice(action="stop")],
        hypotheses=[Hypothesis(kind="fx_trace_race", claims=(), status="refuted")],
        verdict="no_fault_found",
        focus=["fx_trace_race"],
        examined={"fx_trace_race": [fact.id]},
    )
    record_outcome(session, state)
    events = events_of(session)
    assert [e["type"] for e in events] == [
        "fact",
        "answer",
        "refused",
        "choice",
        "symptoms",
        "hypothesis",
        "verdict",
    ]
    assert events[1:5] == [
        {"type": "answer", "source": "llm:a", "text": "[]"},
        {"type": "refused", "source": "llm:a", "reason": "no cite"},
        {
            "type": "choice",
            "choice": {"action": "stop", "kind": None, "probes": [], "playbook": None},
        },
        {"type": "symptoms", "symptoms": []},
    ]
    assert events[-1] == {
        "type": "verdict",
        "verdict": "no_fault_found",
        "missing": [],
        "baseline": None,
        "mode": "guided",
        "focus": ["fx_trace_race"],
        "examined": {"fx_trace_race": [fact.id]},
        "offered_for": {},
        "offered": [],
        "not_applicable": None,
        "plan_error": None,
        "plan_only": False,
    }


def test_a_fact_is_recorded_once_and_as_baseline_only_when_only_the_baseline_has_it(
    session: Session,
) -> None:
    """Each fact is recorded once, the session's own first in their order, then the
    baseline's; a fact that is both the baseline's and the session's counts as the
    session's."""
    facts = [
        session.ledger.append(Fact(probe="host", target="local", value={"cpus": n}))
        for n in (1, 2, 3)
    ]
    shared, own, baseline_only = (f.id for f in facts)
    state = DiagnosisState(
        target="local", facts=[own, shared], baseline_facts=[baseline_only, shared]
    )
    record_outcome(session, state)
    recorded = [(e["fact"]["id"], e["baseline"]) for e in events_of(session) if e["type"] == "fact"]
    assert recorded == [(own, False), (shared, False), (baseline_only, True)]


def test_a_finished_session_resumed_records_nothing_more(tmp_path: Path) -> None:
    """A session whose transcript already ends in a verdict (it finished, then was
    resumed) adds no event when its outcome is recorded again."""
    first = Session.create(SessionConfig(command="diagnose", target="local"), root=tmp_path)
    state = DiagnosisState(target="local", verdict="no_fault_found")
    record_outcome(first, state)
    first.close()
    again = Session.reopen(first.id, root=tmp_path)
    try:
        record_outcome(again, state)
        assert [e["type"] for e in events_of(again)] == ["symptoms", "verdict"]
    finally:
        again.close()
