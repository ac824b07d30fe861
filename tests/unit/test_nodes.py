"""The diagnosis graph's nodes and routers (``agent.graph.nodes``), called one at a time
on a state and an injected ``Doctor``: where each router sends the run, what a node adds
to the state, and that only ``apply`` changes anything, after approval. The whole graph's
verdicts and its approval interrupt are specified with the graph itself."""

from __future__ import annotations

import re
from typing import Any

import pytest
from langgraph.runtime import Runtime
from langgraph.types import Send

from agent.graph import nodes
from agent.graph.doctor import Approver, Doctor
from agent.graph.proposer import Proposed
from agent.graph.state import Answer, DiagnosisState, FixOutcome, FixPlan, Refusal
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, Kind
from agent.rules.base import Evidence
from tools.errors import DoctorError


class Gatherer:
    """Files one fact per probe asked for (all of ``probes`` for ``None``)."""

    def __init__(self, ledger: Ledger, probes: tuple[str, ...] = ("host", "gpus")) -> None:
        self.ledger = ledger
        self.probes = probes
        self.calls: list[frozenset[str] | None] = []

    def __call__(self, only: frozenset[str] | None) -> list[Fact]:
        self.calls.append(only)
        names = sorted(self.probes if only is None else only)
        return [self.ledger.append(Fact(probe=n, target="local", value={"n": 1})) for n in names]


class Rule:
    def __init__(self, kind: Kind, *needs: str) -> None:
        self.kind = kind
        self.needs = frozenset(needs)

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        return [Hypothesis(kind=self.kind, claims=())]


class Playbook:
    """Plans for any verified kind it requires, or refuses with a reason."""

    def __init__(self, name: str, *requires: str, refuse: str = "") -> None:
        self.name = name
        self.requires = frozenset(requires)
        self.refuse = refuse
        self.applied: list[FixPlan] = []
        self.observations: dict[str, float | int | str | None] = {}

    def plan(self, evidence: Evidence) -> FixPlan:
        if self.refuse:
            raise DoctorError(self.refuse)
        return FixPlan(playbook=self.name, hypothesis="whatever it says", steps=["do it"])

    def apply(self, plan: FixPlan, evidence: Evidence) -> FixOutcome:
        self.applied.append(plan)
        return FixOutcome(playbook=self.name, status="applied", observations=self.observations)


class Proposer:
    def __init__(self, name: str, said: Proposed) -> None:
        self.name = name
        self.said = said

    def propose(self, evidence: Evidence) -> Proposed:
        return self.said


def runtime(**fields: Any) -> Runtime[Doctor]:
    ledger = fields.pop("ledger", Ledger())
    fields.setdefault("gather", Gatherer(ledger))
    fields.setdefault("rules", [])
    return Runtime(context=Doctor(ledger=ledger, **fields))


def state(**fields: Any) -> DiagnosisState:
    return DiagnosisState.model_validate({"target": "local", **fields})


def verified(kind: str) -> Hypothesis:
    return Hypothesis.model_validate({"kind": kind, "claims": [], "status": "verified"})


# -- routers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "approver", "route"),
    [
        ({"mode": "health", "interactive": True, "offered": ["p"]}, "human", "report"),
        ({"mode": "guided", "interactive": True}, "never", "guide"),
        ({"mode": "replay", "interactive": True}, "never", "guide"),
        ({"mode": "demo", "interactive": True, "offered": ["p"]}, "human", "plan_fix"),
        ({"mode": "guided", "offered": []}, "human", "report"),
        ({"mode": "guided", "offered": ["p"]}, "never", "report"),
        ({"mode": "guided", "offered": ["p"]}, "human", "plan_fix"),
    ],
    ids=[
        "health-never-fixes",
        "guided-menu",
        "replay-menu",
        "demo-has-no-menu",
        "nothing-offered",
        "approver-never",
        "offered-and-approvable",
    ],
)
def test_after_verify_the_run_goes_to_the_menu_a_fix_or_the_report(
    fields: dict[str, Any], approver: Approver, route: str
) -> None:
    """Health mode always reports; an interactive guided or replayed session shows the
    menu; otherwise a fix is planned only when one is offered and may be approved."""
    assert nodes.route_after_verify(state(**fields), runtime(approver=approver)) == route


@pytest.mark.parametrize(
    ("choices", "route"),
    [
        ([], "report"),
        ([{"action": "test", "kind": "fx_trace_race"}], "probe_more"),
        ([{"action": "probe", "probes": ["gpus"]}], "probe_more"),
        ([{"action": "fix", "playbook": "p"}], "plan_fix"),
        ([{"action": "fix", "playbook": "p"}, {"action": "stop"}], "report"),
    ],
    ids=["no-answer", "test", "probe", "fix", "latest-answer-counts"],
)
def test_after_the_menu_the_latest_answer_decides(choices: list[Any], route: str) -> None:
    """Testing or probing gathers more; a fix is planned; stopping, or no answer, reports.
    Only the latest answer counts."""
    assert nodes.route_after_guide(state(choices=choices)) == route


def test_a_plan_goes_to_approval_unless_only_planned_or_absent() -> None:
    """A plan is taken to approval; with ``--plan-only``, or with no plan, the run reports.
    An approved plan is applied; any other answer reports."""
    plan = FixPlan(playbook="p", hypothesis="fx_trace_race")
    assert nodes.route_after_plan(state(plan=plan)) == "approve"
    assert nodes.route_after_plan(state(plan=plan, plan_only=True)) == "report"
    assert nodes.route_after_plan(state()) == "report"
    assert nodes.route_after_approve(state(approved=True)) == "apply"
    assert nodes.route_after_approve(state(approved=False)) == "report"
    assert nodes.route_after_approve(state()) == "report"


def test_families_fan_out_side_by_side_with_the_proposers() -> None:
    """Each rule gets its own node (only those in focus, when there is one), plus the
    proposers' node when any proposer is configured."""
    rules = [Rule("fx_trace_race", "stdoutlog"), Rule("input_bound", "live")]
    said = Proposed("llm:x", "[]", [], [])
    with_llm = runtime(rules=rules, proposers=[Proposer("llm:x", said)])
    sends = nodes.fan_out(state(), with_llm)
    assert [s.node for s in sends] == ["family_fx_trace_race", "family_input_bound", "propose"]
    focused = nodes.fan_out(state(focus=["input_bound"]), runtime(rules=rules))
    assert focused == [Send("family_input_bound", state(focus=["input_bound"]))]


# -- gathering and proposing ----------------------------------------------------------


def test_gather_sweeps_everything_and_records_the_fact_ids() -> None:
    """The first node sweeps every probe and puts the facts' ids in the state."""
    ledger = Ledger()
    gatherer = Gatherer(ledger)
    update = nodes.gather(state(), runtime(ledger=ledger, gather=gatherer))
    assert gatherer.calls == [None]
    assert [ledger.get(i).probe for i in update["facts"]] == ["gpus", "host"]


def test_a_family_node_says_which_facts_it_looked_at() -> None:
    """A family node gathers only what it lacks, proposes on the facts it then has, and
    records as examined the newest fact of each probe it needs."""
    ledger = Ledger()
    have = ledger.append(Fact(probe="stdoutlog", target="local", value={}))
    gatherer = Gatherer(ledger)
    family = nodes.make_family_node(Rule("fx_trace_race", "stdoutlog", "torch_source"))
    update = family(state(facts=[have.id]), runtime(ledger=ledger, gather=gatherer))
    assert family.__name__ == "family_fx_trace_race"
    assert gatherer.calls == [frozenset({"torch_source"})]
    (new,) = update["facts"]
    assert update["examined"] == {"fx_trace_race": [have.id, new]}
    assert [h.kind for h in update["proposed"]] == ["fx_trace_race"]


def test_proposers_answers_refusals_and_hypotheses_are_collected() -> None:
    """Every proposer is asked; their hypotheses are pooled, each refusal is kept with its
    source, and each raw answer is kept for the transcript."""
    first = Proposed("llm:a", "[...]", [Hypothesis(kind="fx_trace_race", claims=())], ["bad 1"])
    second = Proposed("llm:b", None, [], ["the model failed: TimeoutError: "])
    doctor = runtime(proposers=[Proposer("a", first), Proposer("b", second)])
    update = nodes.propose(state(), doctor)
    assert [h.kind for h in update["proposed"]] == ["fx_trace_race"]
    assert update["refused"] == [
        Refusal(source="llm:a", reason="bad 1"),
        Refusal(source="llm:b", reason="the model failed: TimeoutError: "),
    ]
    assert update["answers"] == [
        Answer(source="llm:a", text="[...]"),
        Answer(source="llm:b", text=None),
    ]


@pytest.mark.parametrize(
    ("choice", "focus", "wanted"),
    [
        ({"action": "test", "kind": "input_bound"}, ["input_bound"], {"live", "trainlog"}),
        ({"action": "test"}, [], {"live", "trainlog", "stdoutlog"}),
        (
            {"action": "test", "kind": "input_bound", "probes": ["gpus"]},
            ["input_bound"],
            {"live", "trainlog", "gpus"},
        ),
        ({"action": "probe", "probes": ["gpus", "host"]}, ["fx_trace_race"], {"gpus", "host"}),
    ],
    ids=["test-one-family", "test-all-again", "test-and-probes", "probe-keeps-focus"],
)
def test_probing_again_gathers_what_was_asked_and_starts_a_new_round(
    choice: dict[str, Any], focus: list[str], wanted: set[str]
) -> None:
    """Testing a family gathers its probes and focuses on it (all families when none is
    named); probing gathers the named probes and keeps the focus; either way the next
    round starts with no proposals."""
    ledger = Ledger()
    gatherer = Gatherer(ledger)
    rules = [Rule("input_bound", "live", "trainlog"), Rule("fx_trace_race", "stdoutlog")]
    before = state(choices=[choice], focus=["fx_trace_race"], rounds=2)
    update = nodes.probe_more(before, runtime(ledger=ledger, gather=gatherer, rules=rules))
    assert gatherer.calls == [frozenset(wanted)]
    assert (update["focus"], update["rounds"]) == (focus, 3)
    assert (update["proposed"], update["refused"]) == (None, None)
    assert sorted(ledger.get(i).probe for i in update["facts"]) == sorted(wanted)


def test_probing_nothing_gathers_nothing() -> None:
    """A probe answer naming no probe sweeps nothing."""
    gatherer = Gatherer(Ledger())
    update = nodes.probe_more(
        state(choices=[{"action": "probe"}]), runtime(gather=gatherer, rules=[])
    )
    assert (gatherer.calls, update["facts"]) == ([], [])


# -- planning, approving, applying ---------------------------------------------------


def test_the_plan_answers_the_best_ranked_verified_kind_it_requires() -> None:
    """Without a menu choice, the first offered playbook that can plan is the plan, bound
    to the best-ranked verified hypothesis it answers; those that cannot plan are named
    with why."""
    plans = {
        "no-launch": Playbook("no-launch", "fx_trace_race", refuse="no launch file"),
        "pad": Playbook("pad", "dataset_shape_churn", "fx_trace_race"),
    }
    hypotheses = [
        Hypothesis(kind="input_bound", claims=()),
        verified("fx_trace_race"),
        verified("dataset_shape_churn"),
    ]
    before = state(offered=["no-launch", "pad"], hypotheses=hypotheses, facts=["F-2", "F-1"])
    update = nodes.plan_fix(before, runtime(playbooks=plans))
    plan = update["plan"]
    assert (plan.playbook, plan.hypothesis) == ("pad", "fx_trace_race")
    assert update["plan_error"] == "no-launch: no launch file"
    assert re.fullmatch(r"[0-9a-f]{64}", plan.digest)


def test_the_plans_digest_binds_it_to_the_facts_in_any_order() -> None:
    """The approval is bound to the plan and the facts it was made from: the same facts in
    another order give the same digest, other facts another."""
    plans = {"pad": Playbook("pad", "fx_trace_race")}
    doctor = runtime(playbooks=plans)

    def digest(facts: list[str]) -> str:
        before = state(offered=["pad"], hypotheses=[verified("fx_trace_race")], facts=facts)
        return str(nodes.plan_fix(before, doctor)["plan"].digest)

    assert digest(["F-1", "F-2"]) == digest(["F-2", "F-1"]) != digest(["F-1", "F-3"])


def test_a_chosen_fix_is_the_only_one_planned() -> None:
    """A fix chosen at the menu is planned alone, even when others are offered first."""
    plans = {"a": Playbook("a", "fx_trace_race"), "b": Playbook("b", "fx_trace_race")}
    before = state(
        offered=["a", "b"],
        hypotheses=[verified("fx_trace_race")],
        choices=[{"action": "fix", "playbook": "b"}],
    )
    update = nodes.plan_fix(before, runtime(playbooks=plans))
    assert (update["plan"].playbook, update["plan_error"]) == ("b", None)


@pytest.mark.parametrize(
    ("offered", "hypotheses", "error"),
    [
        (["x", "y"], [verified("fx_trace_race")], "x: no launch file; y: option missing"),
        (
            ["z"],
            [Hypothesis(kind="fx_trace_race", claims=())],
            "z: no verified hypothesis it answers",
        ),
    ],
    ids=["none-can-plan", "nothing-verified-it-answers"],
)
def test_no_plan_is_a_plan_error_saying_why(
    offered: list[str], hypotheses: list[Hypothesis], error: str
) -> None:
    """When no offered fix can plan, the reasons are joined; a plan that answers no
    verified hypothesis is refused rather than bound to a kind the facts did not verify."""
    plans = {
        "x": Playbook("x", "fx_trace_race", refuse="no launch file"),
        "y": Playbook("y", "fx_trace_race", refuse="option missing"),
        "z": Playbook("z", "fx_trace_race"),
    }
    update = nodes.plan_fix(state(offered=offered, hypotheses=hypotheses), runtime(playbooks=plans))
    assert update == {"plan_error": error}


@pytest.mark.parametrize(
    ("approver", "answer"),
    [
        ("never", {"approved": False, "approved_by": "policy: never"}),
        (
            lambda plan: (True, f"policy: {plan.playbook} is safe"),
            {"approved": True, "approved_by": "policy: p is safe"},
        ),
        (lambda plan: (False, "ci"), {"approved": False, "approved_by": "ci"}),
    ],
    ids=["never", "callable-approves", "callable-declines"],
)
def test_approval_comes_from_the_approver(approver: Approver, answer: dict[str, Any]) -> None:
    """A "never" policy declines; an approver function decides and says who it is."""
    plan = FixPlan(playbook="p", hypothesis="fx_trace_race")
    assert nodes.approve(state(plan=plan), runtime(approver=approver)) == answer


def test_an_apply_without_observations_is_its_outcome_alone() -> None:
    """Applying an approved plan runs the playbook once; with nothing observed after it,
    no fact is filed."""
    playbook = Playbook("p", "fx_trace_race")
    plan = FixPlan(playbook="p", hypothesis="fx_trace_race")
    ledger = Ledger()
    update = nodes.apply(
        state(plan=plan, approved=True), runtime(ledger=ledger, playbooks={"p": playbook})
    )
    assert update == {"outcome": FixOutcome(playbook="p", status="applied")}
    assert playbook.applied == [plan] and len(ledger) == 0


def test_what_an_apply_observed_is_a_fact_and_its_checks_are_claims() -> None:
    """What the apply saw after the restart is filed as a ``verify:<playbook>`` fact; the
    outcome cites it, and the verification is each claim checked on it."""
    playbook = Playbook("p", "fx_trace_race")
    playbook.observations = {"new_drafter_records": 4, "new_fx_errors": 1}
    ledger = Ledger()
    update = nodes.apply(
        state(plan=FixPlan(playbook="p", hypothesis="fx_trace_race"), approved=True),
        runtime(ledger=ledger, playbooks={"p": playbook}),
    )
    (fact,) = ledger
    assert (fact.probe, fact.value) == ("verify:p", {"new_drafter_records": 4, "new_fx_errors": 1})
    assert update["facts"] == [fact.id] and update["outcome"].facts == [fact.id]
    assert [(v.outcome, v.sentence) for v in update["verification"]] == [
        ("holds", f"drafter train-log records after the fix = 4 [{fact.id}] ≥ 1"),
        ("fails", f"FX-trace errors after the fix = 1 [{fact.id}] > 0"),
    ]


@pytest.mark.parametrize(
    ("value", "labels"),
    [
        (
            {"series": "rank=0 ", "min_ratio": 0.9},
            [
                "rank=0 train-log records after the fix",
                "FX-trace errors after the fix",
                "rank=0 tokens/s after the fix",
            ],
        ),
        (
            {"series": 7, "min_ratio": "0.9"},
            ["train-log records after the fix", "FX-trace errors after the fix"],
        ),
        (
            {"signature": "recompile-limit warning"},
            ["drafter train-log records after the fix", "FX-trace errors after the fix"],
        ),
    ],
    ids=["named-series-with-ratio", "series-not-text-ratio-not-number", "signature-not-observed"],
)
def test_the_verification_names_the_series_and_claims_a_ratio_only_when_given(
    value: dict[str, Any], labels: list[str]
) -> None:
    """The claims name the series the fix was measured on ("drafter" when a verification
    recorded none, nothing when it is not text); the speed is claimed only with a numeric
    minimum ratio, and a signature is claimed gone only where its lines were counted."""
    fact = Ledger().append(Fact(probe="verify:p", target="local", value=value))
    claims = nodes.verification_claims(fact)
    assert [c.predicate.refs()[0].label for c in claims] == labels


def test_confirm_gathers_fresh_facts_only_after_an_applied_fix() -> None:
    """After a fix that was applied, every probe runs again; otherwise nothing does."""
    ledger = Ledger()
    gatherer = Gatherer(ledger)
    doctor = runtime(ledger=ledger, gather=gatherer)
    assert nodes.confirm(state(), doctor) == {}
    declined = FixOutcome(playbook="p", status="declined")
    assert nodes.confirm(state(outcome=declined), doctor) == {}
    assert gatherer.calls == []
    applied = FixOutcome(playbook="p", status="applied")
    update = nodes.confirm(state(outcome=applied), doctor)
    assert gatherer.calls == [None] and len(update["facts"]) == 2
