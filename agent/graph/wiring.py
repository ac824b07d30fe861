"""The diagnosis graph, wiring only; the nodes live in ``agent.graph.nodes``.

    gather -> diff_baseline -> family_<kind> (one typed node per failure family, fanned
    out with Send; plus ``propose`` when an LLM proposer is configured) -> verify -> report
                             \\-> plan_fix -> approve -> apply -> confirm -> report
                             \\-> guide (the guided menu, an interrupt) -> probe_more ->
                                 family_<kind> … (a new round) | plan_fix | report

``health`` mode builds the graph without the fix branch at all: there is no path from
verify to a node that could change a target.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from agent.graph import nodes
from agent.graph.doctor import Doctor
from agent.graph.state import DiagnosisState
from agent.model.claims import PREDICATES
from agent.rules.base import Rule
from tools.errors import ConfigError
from tools.localfile import refuse_special

# Our own models that the checkpointer may turn back into objects (LangGraph refuses
# unregistered types in strict mode and warns today).
CHECKPOINT_TYPES = [
    ("agent.graph.state", "DiagnosisState"),
    ("playbooks.base", "FixPlan"),
    ("playbooks.base", "FixOutcome"),
    ("playbooks.base", "FileChange"),
    ("agent.model.hypotheses", "Hypothesis"),
    ("agent.model.hypotheses", "Prediction"),
    ("agent.model.claims", "Claim"),
    ("agent.model.claims", "ClaimVerdict"),
    ("agent.model.claims", "Ref"),
    *[("agent.model.claims", cls.__name__) for cls in PREDICATES],
    ("agent.analysis.baseline", "DiffEntry"),
    ("agent.analysis.symptoms", "Symptom"),
    ("agent.graph.applicability", "NotApplicable"),
    ("agent.graph.state", "Choice"),
    ("agent.graph.state", "Refusal"),
    ("agent.graph.state", "Answer"),
]


class _CheckpointSerde(JsonPlusSerializer):
    """LangGraph keeps a failed node's exception among a checkpoint's writes, as its
    repr: a transport's error quotes the host as the user typed it ("ssh://gpu-7:
    connection refused"). It is kept as the transcript records it (``redact``); like
    the repr, it loads back as a string."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        super().__init__(allowed_msgpack_modules=CHECKPOINT_TYPES)
        self._redact = redact

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        if isinstance(obj, BaseException):
            obj = self._redact(repr(obj))
        return super().dumps_typed(obj)


def sqlite_checkpointer(path: Path, redact: Callable[[str], str] = str) -> SqliteSaver:
    """The session's graph checkpoints in ``path`` (see ``open_checkpoints``); an error
    a node raised is kept as ``redact`` gives it (the session's ``recorded``)."""
    conn = open_checkpoints(path)
    return SqliteSaver(conn, serde=_CheckpointSerde(redact))


def open_checkpoints(path: Path) -> sqlite3.Connection:
    """The checkpoint database at ``path``, opened: ConfigError in one line for a FIFO,
    a device, a directory or a link put in its place, or a damaged database."""
    path.parent.mkdir(parents=True, exist_ok=True)
    refuse_special(path, "the graph's checkpoint database")
    try:
        conn = sqlite3.connect(str(path), check_same_thread=False)
    except sqlite3.Error as exc:
        raise ConfigError(f"{path}: cannot open the graph checkpoint database: {exc}") from None
    try:
        # A damaged header fails the first statement; a damaged page, the check.
        problem = conn.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        problem = str(exc)
    if problem != "ok":
        conn.close()
        raise ConfigError(f"{path}: not a usable graph checkpoint database: {problem}")
    return conn


def build_graph(
    rules: Sequence[Rule],
    *,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    fixes: bool = True,
) -> Any:
    graph = StateGraph(DiagnosisState, context_schema=Doctor)
    graph.add_node("gather", nodes.gather)
    graph.add_node("symptoms", nodes.symptoms)
    graph.add_node("diff_baseline", nodes.diff_baseline)
    families = []
    for rule in rules:
        name = nodes.family_node_name(rule)
        # Built per rule at run time, so the overloads cannot see its signature.
        family: Any = nodes.make_family_node(rule)
        graph.add_node(name, family)
        graph.add_edge(name, "verify")
        families.append(name)
    graph.add_node("propose", nodes.propose)
    graph.add_edge("propose", "verify")
    families.append("propose")
    graph.add_node("verify", nodes.verify_all)
    graph.add_node("report", nodes.report)

    graph.add_edge(START, "gather")
    graph.add_edge("gather", "symptoms")
    graph.add_edge("symptoms", "diff_baseline")
    graph.add_conditional_edges("diff_baseline", nodes.fan_out, families)
    if fixes:
        graph.add_node("plan_fix", nodes.plan_fix)
        graph.add_node("approve", nodes.approve)
        graph.add_node("apply", nodes.apply)
        graph.add_node("confirm", nodes.confirm)
        graph.add_node("guide", nodes.guide)
        graph.add_node("probe_more", nodes.probe_more)
        graph.add_conditional_edges(
            "verify", nodes.route_after_verify, ["guide", "plan_fix", "report"]
        )
        graph.add_conditional_edges(
            "guide", nodes.route_after_guide, ["probe_more", "plan_fix", "report"]
        )
        graph.add_conditional_edges("probe_more", nodes.fan_out, families)
        graph.add_conditional_edges("plan_fix", nodes.route_after_plan, ["approve", "report"])
        graph.add_conditional_edges("approve", nodes.route_after_approve, ["apply", "report"])
        graph.add_edge("apply", "confirm")
        graph.add_edge("confirm", "report")
    else:
        graph.add_edge("verify", "report")
    graph.add_edge("report", END)
    return graph.compile(checkpointer=checkpointer)
