"""The diagnosis graph's state (``agent.graph.state``): how what nodes running side by
side return is merged into it (fact ids once each, proposals per round, answers and menu
choices appended, examined facts per family), its defaults, the latest menu answer, and
the refusal of any field or value it does not know."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph
from pydantic import ValidationError

from agent.graph.state import Answer, Choice, DiagnosisState, Refusal, _merge, _round, _union
from agent.model.hypotheses import Hypothesis


@pytest.mark.parametrize(
    ("left", "right", "merged"),
    [
        ([], ["F-1", "F-2"], ["F-1", "F-2"]),
        (["F-1", "F-2"], [], ["F-1", "F-2"]),
        (["F-1", "F-2"], ["F-3"], ["F-1", "F-2", "F-3"]),
        (["F-1", "F-2"], ["F-2", "F-3", "F-1"], ["F-1", "F-2", "F-3"]),
        (["F-2"], ["F-3", "F-1"], ["F-2", "F-3", "F-1"]),
    ],
    ids=["into-empty", "nothing-added", "new-appended", "known-skipped", "order-kept"],
)
def test_fact_ids_are_merged_once_each_in_the_order_first_seen(
    left: list[str], right: list[str], merged: list[str]
) -> None:
    """Fact ids another node adds are appended after those already held, in the order it
    gave them, skipping any already held."""
    assert _union(left, right) == merged


@pytest.mark.parametrize(
    ("left", "right", "merged"),
    [
        (["a"], ["b", "c"], ["a", "b", "c"]),
        (["a", "b"], [], ["a", "b"]),
        (["a", "b"], None, []),
        ([], None, []),
    ],
    ids=["appended", "nothing-added", "none-starts-a-round", "none-on-empty"],
)
def test_a_round_appends_until_none_starts_a_new_one(
    left: list[str], right: list[str] | None, merged: list[str]
) -> None:
    """What a node adds to a round is appended (duplicates kept: two families may
    propose alike); ``None`` empties it for the next round."""
    assert _round(left, right) == merged


def test_examined_facts_are_kept_per_family_the_latest_winning() -> None:
    """Each family's examined facts are its own entry; a family reporting again replaces
    its entry, the others are kept."""
    left = {"fx_trace_race": ["F-1"], "script_changed": ["F-2"]}
    right = {"script_changed": ["F-3"], "environment_drift": ["F-4"]}
    assert _merge(left, right) == {
        "fx_trace_race": ["F-1"],
        "script_changed": ["F-3"],
        "environment_drift": ["F-4"],
    }


def test_nodes_side_by_side_merge_into_the_state_in_a_graph() -> None:
    """Run by LangGraph, two nodes that ran side by side leave the fact ids of both
    (each once), the proposals of both, the examined facts of both families and every
    proposer answer."""
    proposal = Hypothesis(kind="fx_trace_race", claims=())

    def family(kind: str, fact: str) -> Any:
        def node(state: DiagnosisState) -> dict[str, Any]:
            return {
                "facts": ["F-shared", fact],
                "proposed": [proposal.model_copy(update={"kind": kind})],
                "examined": {kind: [fact]},
                "answers": [Answer(source=kind, text=None)],
            }

        return node

    graph = StateGraph(DiagnosisState)
    graph.add_node("race", family("fx_trace_race", "F-race"))
    graph.add_node("script", family("script_changed", "F-script"))
    for name in ("race", "script"):
        graph.add_edge(START, name)
        graph.add_edge(name, END)
    start = DiagnosisState(target="local", facts=["F-gathered"])
    state = DiagnosisState.model_validate(graph.compile().invoke(start))
    assert state.facts[:2] == ["F-gathered", "F-shared"]
    assert sorted(state.facts[2:]) == ["F-race", "F-script"]
    assert sorted(h.kind for h in state.proposed) == ["fx_trace_race", "script_changed"]
    assert state.examined == {"fx_trace_race": ["F-race"], "script_changed": ["F-script"]}
    assert sorted(a.source for a in state.answers) == ["fx_trace_race", "script_changed"]


def test_a_new_state_is_a_guided_first_round_with_nothing_decided() -> None:
    """A state given only its target is a guided session's first round, not interactive,
    holding no facts, hypotheses, verdict, plan or approval."""
    state = DiagnosisState(target="local")
    assert (state.mode, state.rounds, state.interactive, state.plan_only) == (
        "guided",
        1,
        False,
        False,
    )
    assert (state.facts, state.hypotheses, state.choices, state.focus) == ([], [], [], [])
    assert (state.verdict, state.plan, state.approved, state.outcome) == (None, None, None, None)
    assert (state.baseline, state.approved_by, state.choice) == (None, "", None)


def test_the_choice_is_the_latest_answer_at_the_menu() -> None:
    """``choice`` is the last of the answers given at the menu."""
    first = Choice(action="test", kind="fx_trace_race")
    last = Choice(action="probe", probes=["trainlog"])
    assert DiagnosisState(target="local", choices=[first, last]).choice == last


@pytest.mark.parametrize(
    ("model", "data", "field"),
    [
        (DiagnosisState, {"target": "local", "verdit": "fault_found"}, "verdit"),
        (DiagnosisState, {"target": "local", "mode": "batch"}, "mode"),
        (DiagnosisState, {"target": "local", "verdict": "maybe"}, "verdict"),
        (DiagnosisState, {"target": "local", "focus": ["gremlins"]}, "focus.0"),
        (Choice, {"action": "retry"}, "action"),
        (Choice, {"action": "test", "kind": "gremlins"}, "kind"),
        (Choice, {"action": "stop", "why": "tired"}, "why"),
        (Refusal, {"source": "llm", "reason": "no cite", "extra": 1}, "extra"),
        (Answer, {"source": "llm"}, "text"),
    ],
    ids=[
        "misspelt-field",
        "unknown-mode",
        "unknown-verdict",
        "unknown-focus",
        "unknown-action",
        "unknown-family",
        "choice-extra",
        "refusal-extra",
        "answer-without-text",
    ],
)
def test_an_unknown_field_or_value_is_refused_naming_it(
    model: type[DiagnosisState | Choice | Refusal | Answer], data: dict[str, Any], field: str
) -> None:
    """A field the state does not have, or a mode, verdict, family or menu action it does
    not know, is a validation error naming that field (a checkpoint or transcript read
    back never silently drops or invents a value); an answer must say its text, even if
    it is none."""
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    assert [".".join(str(p) for p in e["loc"]) for e in info.value.errors()] == [field]
