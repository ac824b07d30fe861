"""The diagnosis graph's mechanics, with small rules and playbooks defined here.

The gatherer below stands in for the probe sweep (tests/e2e/test_diagnose*.py run the real
one against the reference trainer): it records which probes were asked for, so the tests
can prove a family node's facts are gathered before it runs.
"""

from __future__ import annotations

from pathlib import Path

from langgraph.types import Command

from agent.analysis.symptoms import EXPLAINS_DROP
from agent.graph.doctor import Doctor
from agent.graph.state import DiagnosisState, FixOutcome, FixPlan
from agent.graph.wiring import build_graph, sqlite_checkpointer
from agent.model.claims import AtLeast, Claim, Ref
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import TITLES, Hypothesis, Kind
from agent.report.build import build_report
from agent.rules.base import Evidence


class RecordingGatherer:
    """Stand-in for the probe sweep: probe name -> value, every call recorded."""

    def __init__(self, ledger: Ledger, values: dict[str, object]) -> None:
        self.ledger = ledger
        self.values = values
        self.calls: list[frozenset[str] | None] = []

    def __call__(self, only: frozenset[str] | None) -> list[Fact]:
        self.calls.append(only)
        names = sorted(self.values if only is None else only & self.values.keys())
        return [
            self.ledger.append(Fact(probe=n, target="local", value=self.values[n])) for n in names
        ]


class CountRule:
    """Verified when probe ``needs`` reports count >= threshold."""

    def __init__(self, kind: Kind, probe: str, threshold: int) -> None:
        self.kind = kind
        self.needs = frozenset({probe})
        self.probe = probe
        self.threshold = threshold

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        fact = evidence.latest(self.probe)
        assert fact is not None, "the graph must gather a rule's facts before it runs"
        claim = Claim(predicate=AtLeast(a=Ref(fact=fact.id, path=("count",)), value=self.threshold))
        return [Hypothesis(kind=self.kind, claims=(claim,))]


class CountingPlaybook:
    name = "lock-warmup"
    requires = frozenset({"fx_trace_race"})

    def __init__(self) -> None:
        self.applied = 0

    def plan(self, evidence: Evidence) -> FixPlan:
        return FixPlan(playbook=self.name, hypothesis="fx_trace_race", steps=["add --compile-lock"])

    def apply(self, plan: FixPlan, evidence: Evidence) -> FixOutcome:
        self.applied += 1
        return FixOutcome(playbook=self.name, status="applied")


def doctor(values: dict[str, object], **kw: object) -> tuple[Doctor, RecordingGatherer]:
    ledger = Ledger()
    gatherer = RecordingGatherer(ledger, values)
    rules = [
        CountRule("fx_trace_race", "stdout_log", 1),
        CountRule("checkpoint_integrity", "checkpoints", 1),
    ]
    return Doctor(ledger=ledger, gather=gatherer, rules=rules, **kw), gatherer  # type: ignore[arg-type]


def test_family_nodes_gather_missing_facts_first() -> None:
    """The first sweep lacks 'checkpoints'; its family node asks for it before proposing."""
    doc, gatherer = doctor({"stdout_log": {"count": 3}})
    gatherer.values["checkpoints"] = {"count": 0}
    original = gatherer.__call__

    first = True

    def partial(only: frozenset[str] | None) -> list[Fact]:
        nonlocal first
        if only is None and first:
            first = False
            return [f for f in original(None) if f.probe == "stdout_log"]
        return original(only)

    doc.gather = partial
    graph = build_graph(doc.rules, fixes=False)
    final = DiagnosisState.model_validate(
        graph.invoke(DiagnosisState(target="local", mode="health"), context=doc)
    )
    assert frozenset({"checkpoints"}) in gatherer.calls
    statuses = {h.kind: h.status for h in final.hypotheses}
    assert statuses == {"fx_trace_race": "verified", "checkpoint_integrity": "refuted"}
    assert final.verdict == "fault_found"
    assert final.hypotheses[0].kind == "fx_trace_race"  # verified ranks first


def test_no_fault_found_when_every_claim_fails() -> None:
    """Every family refuted and the speed observed steady: no fault found."""
    values = {
        "stdout_log": {"count": 0},
        "checkpoints": {"count": 0},
        "trainlog": _trainlog(12800.0, 12800.0),
    }
    doc, _ = doctor(values)
    final = build_graph(doc.rules, fixes=False).invoke(DiagnosisState(target="local"), context=doc)
    assert final["verdict"] == "no_fault_found"


def test_every_claim_failing_without_a_speed_is_insufficient_evidence() -> None:
    """Every family refuted but no train log, so no speed was observed: "no fault found"
    would be a claim without its facts, so the evidence is insufficient."""
    doc, _ = doctor({"stdout_log": {"count": 0}, "checkpoints": {"count": 0}})
    final = build_graph(doc.rules, fixes=False).invoke(DiagnosisState(target="local"), context=doc)
    assert final["verdict"] == "insufficient_evidence"


def test_insufficient_evidence_when_a_needed_fact_failed() -> None:
    """A rule whose claim cites a failed probe's fact cannot decide: the verdict is insufficient
    evidence, naming 'checkpoints' as what is missing."""
    doc, gatherer = doctor({"stdout_log": {"count": 0}})
    # 'checkpoints' could not be observed: the rule's claim cites a failed fact.
    doc.ledger.append(Fact(probe="checkpoints", target="local", error="permission denied"))
    gatherer.values["checkpoints"] = None

    def failing(only: frozenset[str] | None) -> list[Fact]:
        facts = [doc.ledger.append(Fact(probe="stdout_log", target="local", value={"count": 0}))]
        if only is None or "checkpoints" in only:
            facts.append(
                doc.ledger.append(
                    Fact(probe="checkpoints", target="local", error="permission denied")
                )
            )
        return facts

    doc.gather = failing
    rule = doc.rules[1]
    original = rule.propose

    def propose(evidence: Evidence) -> list[Hypothesis]:
        fact = evidence.latest("checkpoints")
        assert fact is not None
        return [
            Hypothesis(
                kind="checkpoint_integrity",
                claims=(Claim(predicate=AtLeast(a=Ref(fact=fact.id, path=("count",)), value=1)),),
            )
        ]

    rule.propose = propose  # type: ignore[method-assign]
    final = build_graph(doc.rules, fixes=False).invoke(DiagnosisState(target="local"), context=doc)
    assert final["verdict"] == "insufficient_evidence"
    assert final["missing"] == ["checkpoints"]
    rule.propose = original  # type: ignore[method-assign]


def test_health_graph_has_no_fix_path() -> None:
    """A graph built with fixes=False has no node that plans, approves, applies or confirms a
    fix."""
    doc, _ = doctor({"stdout_log": {"count": 3}, "checkpoints": {"count": 0}})
    graph = build_graph(doc.rules, fixes=False)
    assert not {"plan_fix", "approve", "apply", "confirm"} & set(graph.get_graph().nodes)


def test_human_approval_interrupts_and_resume_applies_once(tmp_path: Path) -> None:
    """The session stops at the approval; a new process (new graph, same SQLite file)
    resumes it; the fix is applied exactly once, and only with the plan's digest."""
    playbook = CountingPlaybook()
    values: dict[str, object] = {"stdout_log": {"count": 3}, "checkpoints": {"count": 0}}
    doc, _ = doctor(values, playbooks={"lock-warmup": playbook}, approver="human")
    config = {"configurable": {"thread_id": "s1"}}
    db = tmp_path / "graph.sqlite"
    first = build_graph(doc.rules, checkpointer=sqlite_checkpointer(db))
    paused = first.invoke(DiagnosisState(target="local"), config, context=doc)
    assert "__interrupt__" in paused
    question = paused["__interrupt__"][0].value
    assert question["plan"]["playbook"] == "lock-warmup"
    assert playbook.applied == 0

    again = build_graph(doc.rules, checkpointer=sqlite_checkpointer(db))
    final = again.invoke(
        Command(resume={"approve": True, "digest": question["plan"]["digest"]}), config, context=doc
    )
    assert final["approved"] is True
    assert final["outcome"].status == "applied"
    assert playbook.applied == 1


def test_approval_for_another_plan_is_refused(tmp_path: Path) -> None:
    """An approval carrying a different digest does not apply anything."""
    playbook = CountingPlaybook()
    doc, _ = doctor(
        {"stdout_log": {"count": 3}, "checkpoints": {"count": 0}},
        playbooks={"lock-warmup": playbook},
        approver="human",
    )
    config = {"configurable": {"thread_id": "s2"}}
    graph = build_graph(doc.rules, checkpointer=sqlite_checkpointer(tmp_path / "g.sqlite"))
    graph.invoke(DiagnosisState(target="local"), config, context=doc)
    final = graph.invoke(Command(resume={"approve": True, "digest": "0" * 64}), config, context=doc)
    assert final["approved"] is False
    assert playbook.applied == 0


def test_verification_claims_the_playbooks_own_signature_gone() -> None:
    """A playbook that answers another error than the FX trace (recompile-limit) gets a
    claim that its error is gone; the FX-trace claim is always there."""
    from agent.graph.nodes import verification_claims
    from agent.model.claims import check

    ledger = Ledger()
    observed = {
        "new_drafter_records": 5,
        "new_fx_errors": 0,
        "signature": "recompile-limit warning",
        "new_signature_lines": 2,
        "drafter_tok_s": 100.0,
        "baseline_tok_s": 100.0,
        "min_ratio": 0.9,
    }
    fact = ledger.append(Fact(probe="verify:recompile-limit", target="local", value=observed))
    verdicts = [check(c, ledger) for c in verification_claims(fact)]
    said = {v.sentence: v.outcome for v in verdicts}
    assert said["recompile-limit warning lines after the fix = 2 [" + fact.id + "] > 0"] == "fails"
    assert said["FX-trace errors after the fix = 0 [" + fact.id + "] ≤ 0"] == "holds"

    fx = ledger.append(
        Fact(
            probe="verify:lock-warmup",
            target="local",
            value={**observed, "signature": "FX-trace error", "new_signature_lines": 0},
        )
    )
    assert not any("FX-trace error lines" in str(c) for c in verification_claims(fx))
    assert len(verification_claims(fx)) == 3


class AnyOfPlaybook(CountingPlaybook):
    """Answers either of two kinds; its own plan names the first, whatever was verified."""

    name = "recompile-limit"
    requires = frozenset({"dataset_shape_churn", "checkpoint_integrity"})

    def plan(self, evidence: Evidence) -> FixPlan:
        return FixPlan(playbook=self.name, hypothesis="dataset_shape_churn", steps=["raise it"])


def test_a_playbook_is_offered_when_one_kind_it_answers_is_verified() -> None:
    """Only checkpoint_integrity is verified: the playbook answering it or churn is
    offered, and its plan names the kind that was verified, never the other one."""
    doc, _ = doctor(
        {"stdout_log": {"count": 0}, "checkpoints": {"count": 1}},
        playbooks={"recompile-limit": AnyOfPlaybook(), "lock-warmup": CountingPlaybook()},
        approver="human",
    )
    final = build_graph(doc.rules).invoke(
        DiagnosisState(target="local", plan_only=True), context=doc
    )
    assert final["offered"] == ["recompile-limit"]  # lock-warmup's fx_trace_race is refuted
    assert final["plan"].hypothesis == "checkpoint_integrity"


def _trainlog(before: float, after: float) -> dict[str, object]:
    """A train-log fact's windows (the parser's shape): 40 at ``before`` tok/s, then 40
    at ``after``; the first is warm-up. The speed is stated at each record (``tok/s``)."""
    windows = [
        {"first_line": i + 1, "first_step": 10 * i, "last_step": 10 * i, "speed": v}
        for i, v in enumerate([100.0] + [before] * 40 + [after] * 40)
    ]
    return {
        "windows": windows,
        "steps": {"max": 800, "restarts": 0, "restart_samples": []},
        "speed": {
            "kind": "stated",
            "field": "tok/s",
            "unit": "tokens/s",
            "recent": {"value": after, "records": 20},
            "early": {"value": before},
        },
    }


def test_a_drop_nothing_explains_is_its_own_verdict_and_a_verified_cause_explains_it() -> None:
    """The drafter fell to a third and every family is refuted: "symptom unexplained",
    never "no fault found". With the race verified, the drop names it as its cause."""
    values: dict[str, object] = {
        "stdout_log": {"count": 0},
        "checkpoints": {"count": 0},
        "trainlog": _trainlog(12800.0, 4300.0),
    }
    doc, _ = doctor(values)
    final = DiagnosisState.model_validate(
        build_graph(doc.rules, fixes=False).invoke(DiagnosisState(target="local"), context=doc)
    )
    assert final.verdict == "unexplained_symptom"
    (drop,) = final.symptoms
    assert (drop.kind, drop.status, drop.step, drop.explained_by) == (
        "throughput_drop",
        "verified",
        410,
        (),
    )
    # The verdict is an answer of its own: the drop, and why each known cause is not it.
    report = build_report(final, doc.ledger, "s")
    (section,) = [s for s in report.sections if s.title.endswith("no known cause explains it")]
    assert section.title == f"{drop.headline()}: no known cause explains it"
    assert report.sections.index(section) < min(
        report.sections.index(s) for s in report.sections if s.status
    ), [s.title for s in report.sections]
    said = {line.text.split(": ", 1)[0]: line for line in section.lines}
    # Each family that ran and would explain a drop says why it does not; one that did
    # not run says nothing (this doctor runs two rules).
    ran = {rule.kind for rule in doc.rules}
    for kind in EXPLAINS_DROP:
        assert (TITLES[kind] in said) == (kind in ran), (kind, list(said))
    race = said[TITLES["fx_trace_race"]]
    assert race.text.startswith(f"{TITLES['fx_trace_race']}: refuted: ")
    assert race.cites and f"= 0 [{race.cites[0]}] < 1" in race.text
    values["stdout_log"] = {"count": 2}
    doc, _ = doctor(values)
    final = DiagnosisState.model_validate(
        build_graph(doc.rules, fixes=False).invoke(DiagnosisState(target="local"), context=doc)
    )
    assert final.verdict == "fault_found"
    assert final.symptoms[0].explained_by == ("fx_trace_race",)
    # Steady: no drop, and "no fault found" stands.
    values.update(stdout_log={"count": 0}, trainlog=_trainlog(12800.0, 12500.0))
    doc, _ = doctor(values)
    final = DiagnosisState.model_validate(
        build_graph(doc.rules, fixes=False).invoke(DiagnosisState(target="local"), context=doc)
    )
    assert final.verdict == "no_fault_found"
    assert [(s.kind, s.status) for s in final.symptoms] == [("throughput_steady", "verified")]


def test_asked_about_one_family_the_answer_is_about_that_family() -> None:
    """--hypothesis checkpoint_integrity on a run whose speed was never observed: the
    family is refuted, so "no fault found" for what was asked; the whole-run verdict
    without a focus stays "insufficient evidence" (the test above)."""
    doc, _ = doctor({"stdout_log": {"count": 0}, "checkpoints": {"count": 0}})
    start = DiagnosisState(target="local", focus=["checkpoint_integrity"])
    final = build_graph(doc.rules, fixes=False).invoke(start, context=doc)
    assert final["verdict"] == "no_fault_found"
    assert {h.kind for h in final["hypotheses"]} == {"checkpoint_integrity"}
