"""The diagnosis graph's wiring (``agent.graph.wiring``): which nodes follow which, with
and without the fix branch, and the session's checkpoint database: opened only when it is
a usable SQLite file, and a failed node's error kept as the transcript would record it."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.analysis.baseline import DiffEntry
from agent.analysis.symptoms import Symptom
from agent.graph.applicability import NotApplicable
from agent.graph.doctor import Doctor
from agent.graph.state import Answer, Choice, DiagnosisState, FixOutcome, FixPlan, Refusal
from agent.graph.wiring import _CheckpointSerde, build_graph, open_checkpoints, sqlite_checkpointer
from agent.model.claims import AtLeast, Claim, ClaimVerdict, Ref, WindowRatio
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, Prediction
from agent.rules.base import Evidence
from tools.errors import ConfigError, UsageError


class Rule:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.needs: frozenset[str] = frozenset()

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        return []


def edges(fixes: bool) -> set[tuple[str, str]]:
    rules = [Rule("fx_trace_race"), Rule("input_bound")]
    graph = build_graph(rules, fixes=fixes).get_graph()  # type: ignore[arg-type]
    return {(e.source, e.target) for e in graph.edges}


# Read top to bottom as the module's docstring draws it.
DIAGNOSIS = {
    ("__start__", "gather"),
    ("gather", "symptoms"),
    ("symptoms", "diff_baseline"),
    ("diff_baseline", "family_fx_trace_race"),
    ("diff_baseline", "family_input_bound"),
    ("diff_baseline", "propose"),
    ("family_fx_trace_race", "verify"),
    ("family_input_bound", "verify"),
    ("propose", "verify"),
    ("report", "__end__"),
}
FIXES = {
    ("verify", "guide"),
    ("verify", "plan_fix"),
    ("verify", "report"),
    ("guide", "probe_more"),
    ("guide", "plan_fix"),
    ("guide", "report"),
    ("probe_more", "family_fx_trace_race"),
    ("probe_more", "family_input_bound"),
    ("probe_more", "propose"),
    ("plan_fix", "approve"),
    ("plan_fix", "report"),
    ("approve", "apply"),
    ("approve", "report"),
    ("apply", "confirm"),
    ("confirm", "report"),
}


def test_the_full_graph_wires_diagnosis_then_menu_and_fix() -> None:
    """Gather, symptoms and the diff run in a line, fan out to one node per family and the
    proposers, meet at verify; from there the menu, a fix (plan, approve, apply,
    confirm) or the report."""
    assert edges(fixes=True) == DIAGNOSIS | FIXES


def test_without_fixes_verify_leads_only_to_the_report() -> None:
    """Built without the fix branch, the graph goes from verify to the report and has no
    edge into a node that could change a target, nor the menu."""
    assert edges(fixes=False) == DIAGNOSIS | {("verify", "report")}


# -- the checkpoint database ----------------------------------------------------------


def test_a_checkpoint_database_is_made_with_its_folder(tmp_path: Path) -> None:
    """A database that does not exist yet is made, its folders too; an empty file is a
    new database as well."""
    made = tmp_path / "a" / "b" / "graph.sqlite"
    open_checkpoints(made).close()
    assert made.is_file()
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    conn = open_checkpoints(empty)
    assert conn.execute("PRAGMA quick_check").fetchone() == ("ok",)
    conn.close()


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: os.mkfifo(p), "a FIFO, not a regular file"),
        (lambda p: p.mkdir(), "a directory, not a regular file"),
        (lambda p: p.symlink_to(p.parent / "elsewhere.sqlite"), "a symlink, not a regular file"),
    ],
    ids=["fifo", "directory", "symlink"],
)
def test_something_else_in_the_databases_place_is_refused_by_name(
    tmp_path: Path, make: Callable[[Path], object], said: str
) -> None:
    """A FIFO (which would block), a directory or a link in the database's place is
    refused in one line naming the path and what is there, before SQLite opens it."""
    path = tmp_path / "graph.sqlite"
    make(path)
    with pytest.raises(UsageError) as caught:
        open_checkpoints(path)
    assert str(caught.value) == (f"{path}: {said}; not used as the graph's checkpoint database")


def test_a_damaged_database_is_refused_in_one_line(tmp_path: Path) -> None:
    """A file that is not an SQLite database is refused, naming the path and SQLite's
    words for it."""
    path = tmp_path / "graph.sqlite"
    path.write_bytes(b"SQLite format 2\0" + bytes(2000))
    with pytest.raises(ConfigError) as caught:
        open_checkpoints(path)
    assert str(caught.value) == (
        f"{path}: not a usable graph checkpoint database: file is not a database"
    )


# -- what a checkpoint keeps ----------------------------------------------------------


def test_a_failed_nodes_error_is_kept_redacted_and_loads_back_as_text() -> None:
    """An exception a node raised is stored as its repr, passed through the session's
    redaction (a transport error quotes the host as typed), and reads back as that
    string, not as an exception object."""
    serde = _CheckpointSerde(lambda text: text.replace("gpu-7", "[REDACTED-HOST-1]"))
    stored = serde.dumps_typed(ConnectionRefusedError("ssh://gpu-7: connection refused"))
    assert b"gpu-7" not in stored[1]
    assert serde.loads_typed(stored) == (
        "ConnectionRefusedError('ssh://[REDACTED-HOST-1]: connection refused')"
    )


def test_a_checkpoint_of_a_failed_run_does_not_name_the_host(tmp_path: Path) -> None:
    """A graph whose first node fails leaves its error among the checkpoint's writes only
    as the redaction gives it; no file of the database names the host."""
    db = tmp_path / "graph.sqlite"

    def gather(only: frozenset[str] | None) -> list[Fact]:
        raise ConnectionRefusedError("ssh://gpu-7: connection refused")

    doctor = Doctor(ledger=Ledger(), gather=gather, rules=[])
    saver = sqlite_checkpointer(db, lambda text: text.replace("gpu-7", "[H-1]"))
    graph = build_graph([], checkpointer=saver)
    with pytest.raises(ConnectionRefusedError):
        graph.invoke(
            DiagnosisState(target="ssh://x"),
            {"configurable": {"thread_id": "t"}},
            context=doctor,
        )
    stored = b"".join(f.read_bytes() for f in tmp_path.iterdir())  # the WAL included
    assert b"gpu-7" not in stored
    conn = open_checkpoints(db)
    (error,) = conn.execute("SELECT value FROM writes WHERE channel = '__error__'").fetchall()
    conn.close()
    assert b"ConnectionRefusedError('ssh://[H-1]: connection refused')" in error[0]


def test_a_whole_diagnosis_state_comes_back_as_itself() -> None:
    """Every model a state holds is registered with the checkpointer: a state with
    facts, diffs, symptoms, hypotheses, a plan, an outcome and the menu's answers loads
    back equal, as models, with no warning."""
    ref = Ref(fact="F-1", path=("x", 0), label="x")
    claim = Claim(predicate=AtLeast(a=ref, value=1))
    checked = ClaimVerdict(outcome="holds", sentence="x = 2 [F-1] ≥ 1", cites=("F-1",))
    window = Claim(
        predicate=WindowRatio(a=ref, series=(("speed",),), before=(0, 3), after=(4, 7), ratio=0.8)
    )
    state = DiagnosisState(
        target="local",
        facts=["F-1"],
        diff=[
            DiffEntry(
                key="k", label="k", baseline=ref, current=ref, baseline_value=1, current_value=2
            )
        ],
        symptoms=[Symptom(kind="throughput_drop", series="s", subject=True, claims=(window,))],
        hypotheses=[
            Hypothesis(
                kind="fx_trace_race",
                claims=(claim,),
                verdicts=(checked,),
                predictions=(Prediction(expect="e", probe="torch_source"),),
            )
        ],
        not_applicable=NotApplicable(kinds=("compile_cache_cold",), claims=(claim,)),
        plan=FixPlan(playbook="p", hypothesis="fx_trace_race"),
        outcome=FixOutcome(playbook="p", status="applied"),
        choices=[Choice(action="stop")],
        refused=[Refusal(source="llm:x", reason="r")],
        answers=[Answer(source="llm:x", text=None)],
        verification=[checked],
    )
    serde = _CheckpointSerde(str)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = serde.loads_typed(serde.dumps_typed(state))
    assert loaded == state and isinstance(loaded, DiagnosisState)
