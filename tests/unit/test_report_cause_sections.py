"""The report's sections on the causes weighed (``agent.report.cause_sections``): a drop no
known cause explains, one section per ranked hypothesis, the refused proposals, the families
set aside or checked, and the fix. Each expected line is written out by hand from the state
built in the test."""

from __future__ import annotations

from typing import Any

import pytest

from agent.analysis.baseline import DiffEntry
from agent.analysis.symptoms import Symptom
from agent.graph.applicability import NotApplicable
from agent.graph.state import DiagnosisState, FixOutcome, FixPlan, Refusal
from agent.model.claims import AtLeast, Claim, ClaimVerdict, Ref
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, Prediction
from agent.report.cause_sections import (
    checked_section,
    fix_section,
    hypothesis_sections,
    not_applicable_section,
    plan_error_section,
    refused_section,
    unexplained_section,
)
from agent.report.model import Line, Section
from playbooks.base import FileChange

DROP_HEADLINE = "drafter tokens/s fell to 0.33× at step 410"


def drop(explained_by: tuple[str, ...] = ()) -> Symptom:
    """A verified drop of the judged throughput (headline ``DROP_HEADLINE``)."""
    return Symptom(
        kind="throughput_drop",
        series="drafter tokens/s",
        subject=True,
        claims=(Claim(predicate=AtLeast(a=Ref(fact="F-log"), value=1)),),
        status="verified",
        step=410,
        ratio=0.33,
        explained_by=explained_by,
    )


def verdict(outcome: Any, sentence: str, *cites: str, claimed: str = "") -> ClaimVerdict:
    return ClaimVerdict(outcome=outcome, sentence=sentence, cites=cites, claimed=claimed)


def entry(label: str, before: object, now: object, ids: tuple[str, str]) -> DiffEntry:
    return DiffEntry.model_validate(
        {
            "key": label,
            "label": label,
            "baseline": {"fact": ids[0]},
            "current": {"fact": ids[1]},
            "baseline_value": before,
            "current_value": now,
        }
    )


# -- the unexplained drop ------------------------------------------------------------


def test_an_unexplained_drop_says_why_each_family_that_ran_is_not_its_cause() -> None:
    """Under "symptom unexplained" the section names the drop, what differs, one line per
    family that would explain a drop and ran (refuted: the failing claim; dated before the
    drop: the timing claim; set aside; formed nothing; otherwise its status), and which
    probes would decide (predictions first, then failed facts, each once)."""
    ledger = Ledger()
    ok = ledger.append(Fact(probe="stdoutlog", target="local", value={"count": 0}))
    failed = ledger.append(Fact(probe="torch_runtime", target="local", error="timed out"))
    race = Hypothesis(
        kind="fx_trace_race",
        claims=(),
        status="refuted",
        verdicts=(
            verdict("holds", "torch 2.5 [F-v]", "F-v"),
            verdict("fails", "= 0 [F-s] < 1", "F-s", claimed="≥ 1"),
        ),
        predictions=(Prediction(expect="the check binds at wrap", probe="torch_source"),),
    )
    script = Hypothesis(
        kind="script_changed",
        claims=(),
        status="verified",
        verdicts=(verdict("holds", "changed [F-h]", "F-h"),),
        timing=(verdict("fails", "written at step 90 [F-t]", "F-t", claimed="after 410"),),
    )
    drift = Hypothesis(
        kind="environment_drift",
        claims=(Claim(predicate=AtLeast(a=Ref(fact="F-e"), value=1)),),
        status="unverifiable",
        verdicts=(verdict("unverifiable", "F-e has no such value", "F-e"),),
        predictions=(Prediction(expect="torch differs", probe="torch_runtime"),),
    )
    state = DiagnosisState(
        target="local",
        facts=[ok.id, failed.id],
        verdict="unexplained_symptom",
        symptoms=[drop()],
        diff=[
            entry("torch version", "2.4", "2.5", ("F-b1", "F-c1")),
            entry("prompts", 128, 128, ("F-b2", "F-c2")),
        ],
        hypotheses=[race, script, drift],
        examined={
            "compile_cache_cold": ["F-cc"],
            "dataset_shape_churn": ["F-d1", "F-d2"],
            "checkpoint_integrity": ["F-x"],  # explains no drop: not listed
        },
        not_applicable=NotApplicable(
            kinds=("compile_cache_cold",),
            claims=(),
            verdicts=(verdict("holds", "no compile [F-n2] [F-n1]", "F-n2", "F-n1"),),
        ),
    )
    section = unexplained_section(state, ledger)
    assert section == Section(
        title=f"{DROP_HEADLINE}: no known cause explains it",
        kind="unexplained",
        lines=[
            Line(text="what differs since it worked: torch version", cites=["F-b1", "F-c1"]),
            Line(
                text="compile cache cold or wiped: not applicable, the run does not compile",
                cites=["F-n1", "F-n2"],
            ),
            Line(
                text="dataset shape churn (new sequence lengths, recompiles): "
                "no hypothesis formed from its facts",
                cites=["F-d1", "F-d2"],
            ),
            Line(text="environment drift since the known good state: unverifiable", cites=["F-e"]),
            Line(
                text="FX-tracing race under per-device compilation: refuted: "
                "= 0 [F-s] < 1 (the claim: ≥ 1)",
                cites=["F-s"],
            ),
            Line(
                text="training script or config changed since the known good state: "
                "dated before the drop: written at step 90 [F-t] (the claim: after 410)",
                cites=["F-t"],
            ),
            Line(text="would decide: torch_runtime, torch_source", cites=[failed.id]),
        ],
    )


@pytest.mark.parametrize(
    ("diff", "line"),
    [
        ([], Line(text="nothing could be compared with a state in which it worked", cites=[])),
        (
            [entry("a", 1, 1, ("F-b", "F-c")), entry("b", 2, 2, ("F-a", "F-c"))],
            Line(
                text="none of the 2 compared quantities differs since it worked",
                cites=["F-a", "F-b", "F-c"],
            ),
        ),
    ],
    ids=["nothing-compared", "nothing-differs"],
)
def test_an_unexplained_drop_says_when_nothing_differs(diff: list[DiffEntry], line: Line) -> None:
    """With no baseline diff, or one where nothing differs, the first line says so (citing
    every compared fact once); with no family run and no fact failed, that is all."""
    state = DiagnosisState(
        target="local", verdict="unexplained_symptom", symptoms=[drop()], diff=diff
    )
    section = unexplained_section(state, Ledger())
    assert section is not None and section.lines == [line]


def test_under_focus_only_the_families_asked_about_answer() -> None:
    """Asked about named families, the families outside them say nothing here even when
    they ran."""
    state = DiagnosisState(
        target="local",
        verdict="unexplained_symptom",
        symptoms=[drop()],
        focus=["input_bound"],
        examined={"input_bound": ["F-i"], "host_contention": ["F-h"]},
    )
    section = unexplained_section(state, Ledger())
    assert section is not None
    assert [line.text for line in section.lines[1:]] == [
        "input-bound (the training thread waits on data loading): "
        "no hypothesis formed from its facts"
    ]


@pytest.mark.parametrize(
    ("verdict_", "symptoms"),
    [
        ("no_fault_found", [drop()]),
        ("insufficient_evidence", [drop()]),
        ("unexplained_symptom", [drop(explained_by=("fx_trace_race",))]),
        ("unexplained_symptom", []),
    ],
    ids=["no-fault", "insufficient", "drop-explained", "no-drop"],
)
def test_no_unexplained_section_without_that_verdict_and_an_unexplained_drop(
    verdict_: Any, symptoms: list[Symptom]
) -> None:
    """The section exists only under "symptom unexplained" with a verified drop that no
    family explains."""
    state = DiagnosisState(target="local", verdict=verdict_, symptoms=symptoms)
    assert unexplained_section(state, Ledger()) is None


# -- one section per hypothesis ----------------------------------------------------


def test_each_hypothesis_is_a_section_in_rank_order_saying_what_it_holds_and_offers() -> None:
    """A hypothesis's section lists its claims, its rank with the numbers it was ranked
    by, its open predictions and timing claims, the drop it explains, the playbooks it
    unlocks and who proposed it; a family that is no fault alone on a run that shows no
    slowdown says so, and one whose evidence predates the drop says it explains none."""
    race = Hypothesis(
        kind="fx_trace_race",
        claims=(),
        status="verified",
        weight=3,
        source="llm:Fake",
        verdicts=(verdict("holds", "FX errors = 2 [F-1] ≥ 1", "F-1"),),
        predictions=(Prediction(expect="the check binds at wrap", probe="torch_source"),),
        timing=(verdict("holds", "first at step 420 [F-1]", "F-1"),),
    )
    own = Hypothesis(
        kind="own_code_time",
        claims=(),
        status="verified",
        fault_alone=False,
        verdicts=(
            verdict("holds", "sleep 40% [F-2]", "F-2"),
            verdict("holds", "samples 50 [F-2]", "F-2"),
        ),
        timing=(verdict("fails", "since step 5 [F-2]", "F-2", claimed="after 410"),),
    )
    refuted = Hypothesis(
        kind="input_bound",
        claims=(),
        status="refuted",
        verdicts=(verdict("fails", "data 1% [F-3]", "F-3", claimed="≥ 50%"),),
    )
    state = DiagnosisState(
        target="local",
        # An unverified possible drop and a drop of another series slow nothing judged.
        symptoms=[
            drop(explained_by=("fx_trace_race", "own_code_time")).model_copy(
                update={"status": "refuted"}
            ),
            drop(explained_by=("fx_trace_race",)).model_copy(update={"subject": False}),
        ],
        hypotheses=[race, own, refuted],
        offered_for={"fx_trace_race": ["lock-warmup", "pin"], "input_bound": ["prefetch"]},
    )
    first, second, third = hypothesis_sections(state)
    assert first == Section(
        title="FX-tracing race under per-device compilation",
        status="verified",
        kind="hypothesis",
        lines=[
            Line(text="FX errors = 2 [F-1] ≥ 1", cites=["F-1"], outcome="holds"),
            Line(text="rank 1: verified, 1 of 1 claims hold, weight 3", cites=[]),
            Line(text="not yet checked: the check binds at wrap (probe: torch_source)", cites=[]),
            Line(text="timing: first at step 420 [F-1]", cites=["F-1"], outcome="holds"),
            Line(text="unlocks playbooks: lock-warmup, pin", cites=[]),
            Line(text="proposed by llm:Fake", cites=[]),
        ],
    )
    assert [line.text for line in second.lines] == [
        "sleep 40% [F-2]",
        "samples 50 [F-2]",
        "rank 2: verified, 2 of 2 claims hold, weight 1",
        "timing: since step 5 [F-2] (the claim: after 410)",
        "no fault on its own: it would explain a slowdown or a stall, and the run shows "
        "neither (what the run does, not what is wrong)",
        "explains no drop: its evidence is dated before the drop began",
    ]
    assert [line.text for line in third.lines] == [
        "data 1% [F-3] (the claim: ≥ 50%)",
        "rank 3: refuted, 0 of 1 claims hold, weight 1",
    ]
    assert third.lines[0].outcome == "fails"


def test_a_verified_cause_names_each_verified_drop_it_explains() -> None:
    """A verified hypothesis names the verified drop of the judged throughput that lists
    its family; a family the drop does not list names none."""
    race = Hypothesis(kind="fx_trace_race", claims=(), status="verified")
    drift = Hypothesis(kind="environment_drift", claims=(), status="verified")
    state = DiagnosisState(
        target="local", symptoms=[drop(explained_by=("fx_trace_race",))], hypotheses=[race, drift]
    )
    explains = [
        [line.text for line in section.lines if line.text.startswith("explains the symptom")]
        for section in hypothesis_sections(state)
    ]
    assert explains == [[f"explains the symptom: {DROP_HEADLINE}"], []]


# -- refused, set aside, checked ---------------------------------------------------


def test_refused_proposals_are_listed_by_source_as_rejected() -> None:
    """Each refused proposal is one rejected line naming its source and the reason; none
    refused, no section."""
    assert refused_section(DiagnosisState(target="local")) is None
    state = DiagnosisState(
        target="local",
        refused=[
            Refusal(source="llm:A", reason="the answer is not JSON"),
            Refusal(source="llm:B", reason="proposal 2: unknown kind 'gremlins'"),
        ],
    )
    assert refused_section(state) == Section(
        title="refused proposals",
        kind="refused",
        lines=[
            Line(text="llm:A: the answer is not JSON", cites=[], outcome="rejected"),
            Line(text="llm:B: proposal 2: unknown kind 'gremlins'", cites=[], outcome="rejected"),
        ],
    )


def test_families_set_aside_are_named_then_each_claim_why() -> None:
    """The set-aside section names the families (citing every fact of the claims once),
    then each checked claim that the run does not compile."""
    assert not_applicable_section(DiagnosisState(target="local")) is None
    aside = NotApplicable(
        kinds=("compile_cache_cold", "fx_trace_race"),
        claims=(),
        verdicts=(
            verdict("holds", "compile calls = 0 [F-b]", "F-b"),
            verdict("holds", "no inductor [F-a] [F-b]", "F-a", "F-b"),
        ),
    )
    section = not_applicable_section(DiagnosisState(target="local", not_applicable=aside))
    assert section == Section(
        title="not applicable: the run does not compile",
        kind="not_applicable",
        lines=[
            Line(
                text="compile cache cold or wiped, FX-tracing race under per-device compilation",
                cites=["F-a", "F-b"],
            ),
            Line(text="compile calls = 0 [F-b]", cites=["F-b"], outcome="holds"),
            Line(text="no inductor [F-a] [F-b]", cites=["F-a", "F-b"], outcome="holds"),
        ],
    )


def test_what_was_checked_lists_each_family_by_name_with_what_it_formed() -> None:
    """Each examined family (in name order, only those in focus when there is one) says
    how many hypotheses it formed, that it was set aside, or that it formed none, citing
    the facts it looked at."""
    state = DiagnosisState(
        target="local",
        verdict="no_fault_found",
        examined={"input_bound": ["F-i"], "compile_cache_cold": ["F-c"], "crash_stated": []},
        hypotheses=[
            Hypothesis(kind="input_bound", claims=()),
            Hypothesis(kind="input_bound", claims=(), source="llm:x"),
        ],
        not_applicable=NotApplicable(kinds=("compile_cache_cold",), claims=()),
    )
    section = checked_section(state)
    assert section == Section(
        title="what was checked",
        kind="checked",
        lines=[
            Line(
                text="compile_cache_cold: not applicable (the run does not compile)",
                cites=["F-c"],
            ),
            Line(text="crash_stated: no hypothesis formed from its facts", cites=[]),
            Line(text="input_bound: 2 hypothesis(es) formed", cites=["F-i"]),
        ],
    )
    focused = checked_section(state.model_copy(update={"focus": ["crash_stated"]}))
    assert focused is not None
    assert [line.text for line in focused.lines] == [
        "crash_stated: no hypothesis formed from its facts"
    ]


@pytest.mark.parametrize(
    "fields",
    [{"verdict": None, "examined": {"input_bound": ["F-i"]}}, {"verdict": "no_fault_found"}],
    ids=["no-verdict", "nothing-examined"],
)
def test_nothing_checked_or_no_verdict_is_no_checked_section(fields: dict[str, Any]) -> None:
    """Without a verdict, or with no family examined, there is no "what was checked"."""
    assert checked_section(DiagnosisState.model_validate({"target": "local", **fields})) is None


# -- the fix ------------------------------------------------------------------------


def plan() -> FixPlan:
    change = FileChange(path="launch.sh", before_sha256=None, after="x", diff="+x")
    return FixPlan(
        playbook="lock-warmup",
        hypothesis="fx_trace_race",
        steps=["write launch.sh", "restart the trainer"],
        changes=[change],
    )


def test_a_fix_not_offered_says_why_in_one_line() -> None:
    """The reason a fix could not be planned is a section of its own; none, no section."""
    assert plan_error_section(DiagnosisState(target="local")) is None
    state = DiagnosisState(target="local", plan_error="lock-warmup: no launch file")
    assert plan_error_section(state) == Section(
        title="fix not offered",
        kind="fix",
        lines=[Line(text="lock-warmup: no launch file", cites=[])],
    )


def test_an_applied_fix_lists_its_steps_diffs_approval_outcome_and_checks() -> None:
    """The fix section lists the plan's steps and diffs, who approved it, what the apply
    did (citing its facts) and each verification claim."""
    state = DiagnosisState(
        target="local",
        plan=plan(),
        approved=True,
        approved_by="human",
        outcome=FixOutcome(
            playbook="lock-warmup", status="applied", detail="restarted", facts=["F-v"]
        ),
        verification=[verdict("holds", "records = 3 [F-v] ≥ 1", "F-v")],
    )
    assert fix_section(state) == Section(
        title="fix: lock-warmup",
        kind="fix",
        lines=[
            Line(text="step: write launch.sh", cites=[]),
            Line(text="step: restart the trainer", cites=[]),
            Line(text="diff of launch.sh:\n+x", cites=[]),
            Line(text="approved by human", cites=[]),
            Line(text="applied: restarted", cites=["F-v"]),
            Line(text="records = 3 [F-v] ≥ 1", cites=["F-v"], outcome="holds"),
        ],
    )


@pytest.mark.parametrize(
    ("fields", "last"),
    [
        ({"plan_only": True}, "plan only: nothing was written"),
        ({"approved": False, "approved_by": "policy: never"}, "not approved by policy: never"),
        ({}, "not approved by nobody"),
    ],
    ids=["plan-only", "declined", "unanswered"],
)
def test_a_fix_not_applied_says_whether_it_was_only_planned_or_not_approved(
    fields: dict[str, Any], last: str
) -> None:
    """A plan only says nothing was written; an unapproved plan says who declined it
    ("nobody" when no one answered)."""
    state = DiagnosisState.model_validate({"target": "local", "plan": plan(), **fields})
    section = fix_section(state)
    assert section is not None and section.lines[-1].text == last
    assert fix_section(DiagnosisState(target="local")) is None
