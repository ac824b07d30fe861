"""The graph's nodes. Each takes the state and the injected ``Doctor`` (``agent.graph.doctor``)
and returns a partial state update. Side effects (changing a target) happen only in
``apply``, after the ``approve`` interrupt, in a node of their own: LangGraph re-runs an
interrupted node from its start on resume, so nothing before ``interrupt()`` in a node may
change anything."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Send, interrupt

from agent.analysis import detect, progress, timing, unobserved
from agent.analysis import symptoms as layer
from agent.analysis.baseline import diff, import_snapshot
from agent.analysis.symptoms import Symptom
from agent.graph.applicability import set_aside
from agent.graph.doctor import Doctor
from agent.graph.state import Answer, Choice, DiagnosisState, Refusal
from agent.model.claims import AtLeast, AtMost, Claim, RatioAtLeast, Ref, check
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, rank, verify
from agent.rules.base import Evidence, Rule
from playbooks.base import FX_TRACE
from tools.errors import DoctorError
from tools.log import get_logger
from tools.sweep import PROBES

if TYPE_CHECKING:
    pass

log = get_logger(__name__)


def _evidence(state: DiagnosisState, doctor: Doctor) -> Evidence:
    return Evidence(doctor.ledger, state.facts, state.diff)


def gather(state: DiagnosisState, runtime: Runtime[Doctor]) -> dict[str, Any]:
    doctor = runtime.context
    facts = doctor.gather(None)
    log.info("gathered", facts=len(facts), failed=sum(not f.ok for f in facts))
    return {"facts": [f.id for f in facts]}


def _speed_symptoms(evidence: Evidence) -> list[Symptom]:
    """The train log's symptoms; where it states no speed the tests can judge, the
    console's progress bar (tqdm's printed rate, the trainer's own figure) and then, as
    the last resort, the pace its checkpoints were saved at."""
    found = detect.find(evidence.latest("trainlog"))
    if layer.judged_speed(found):
        return found
    for other in (
        detect.find_in_bars(evidence.latest("stdoutlog")),
        detect.find_in_checkpoints(evidence.latest("checkpoints")),
    ):
        if layer.judged_speed(other):
            return [s for s in found if s.kind != "speed_unobserved"] + other
    return unobserved.with_run_summaries(found, evidence.latest("stdoutlog"))


def _progress_symptoms(ledger: Ledger, facts: Sequence[str], found: list[Symptom]) -> list[Symptom]:
    """Whether the run still advances, and where it started again when its train log
    does not show it (``agent.analysis.progress``): each only where the earlier ones found none."""
    out = [
        s
        for s in (
            progress.stalled(ledger, facts),
            progress.stopped(ledger, facts),
            progress.resumed_in_console(ledger, facts, found),
        )
        if s is not None
    ]
    started = progress.restarted_process(ledger, facts, [*found, *out])
    return out if started is None else [*out, started]


def symptoms(state: DiagnosisState, runtime: Runtime[Doctor]) -> dict[str, Any]:
    """The symptom layer, before any family: what the run did over time, from the newest
    train-log fact (else the console's bar, the checkpoints' pace) and the run's
    progress, each symptom checked on its facts (``agent.analysis.symptoms``)."""
    doctor = runtime.context
    found = _speed_symptoms(_evidence(state, doctor))
    found += _progress_symptoms(doctor.ledger, state.facts, found)
    found = layer.check_all(found, doctor.ledger)
    log.info("symptoms", found=[f"{s.kind}:{s.status}" for s in found])
    return {"symptoms": found}


def diff_baseline(state: DiagnosisState, runtime: Runtime[Doctor]) -> dict[str, Any]:
    doctor = runtime.context
    baseline_ids = None
    imported: list[str] = []
    if state.baseline is not None and doctor.baselines is not None:
        snapshot = doctor.baselines.load(state.baseline)
        imported = import_snapshot(snapshot, doctor.ledger, doctor.sanitize)
        baseline_ids = imported
    drop = timing.subject_drop(state.symptoms)
    # Without a snapshot, "when it worked" is before the drop: the derived baseline reads
    # the last checkpoint written before it began (agent.analysis.diff_keys).
    table = doctor.comparables(
        doctor.ledger, state.facts, drop.began_step if drop is not None else None
    )
    entries = diff(table, doctor.ledger, state.facts, baseline_ids)
    derived = diff(table, doctor.ledger, state.facts, None) if baseline_ids is not None else []
    log.info(
        "diffed",
        baseline=state.baseline or "derived",
        entries=len(entries),
        differing=sum(e.differs for e in entries),
    )
    return {"diff": entries, "derived_diff": derived, "baseline_facts": imported}


def fan_out(state: DiagnosisState, runtime: Runtime[Doctor]) -> list[Send]:
    """One typed node per failure family (only the asked-about ones under ``focus``),
    and the proposers' node when there are any; all run side by side."""
    doctor = runtime.context
    sends = [
        Send(family_node_name(rule), state)
        for rule in doctor.rules
        if not state.focus or rule.kind in state.focus
    ]
    if doctor.proposers:
        sends.append(Send("propose", state))
    return sends


def family_node_name(rule: Rule) -> str:
    return f"family_{rule.kind}"


def make_family_node(
    rule: Rule,
) -> Callable[[DiagnosisState, Runtime[Doctor]], dict[str, Any]]:
    """A typed node for one failure family: gather what it needs first, then propose.
    A claim cannot even be formed before its evidence exists."""

    def family(state: DiagnosisState, runtime: Runtime[Doctor]) -> dict[str, Any]:
        doctor = runtime.context
        new = doctor.gather_missing(state.facts, rule.needs)
        ids = [*state.facts, *(f.id for f in new if f.id not in state.facts)]
        evidence = Evidence(doctor.ledger, ids, state.diff)
        proposed = rule.propose(evidence)
        looked_at = [f.id for f in map(evidence.latest, sorted(rule.needs)) if f is not None]
        return {
            "facts": [f.id for f in new],
            "proposed": proposed,
            "examined": {rule.kind: looked_at},
        }

    family.__name__ = f"family_{rule.kind}"
    return family


def propose(state: DiagnosisState, runtime: Runtime[Doctor]) -> dict[str, Any]:
    """The optional proposers, on the same evidence the rules see. Their hypotheses go
    through the same ``verify`` as a rule's; what could not be read is refused here."""
    doctor = runtime.context
    evidence = _evidence(state, doctor)
    hypotheses: list[Hypothesis] = []
    refused: list[Refusal] = []
    answers: list[Answer] = []
    for proposer in doctor.proposers:
        said = proposer.propose(evidence)
        hypotheses += said.hypotheses
        refused += [Refusal(source=said.source, reason=r) for r in said.refused]
        answers.append(Answer(source=said.source, text=said.answer))
        log.info("proposed", source=said.source, hypotheses=len(said.hypotheses))
    return {"proposed": hypotheses, "refused": refused, "answers": answers}


def _for_lack_of_facts(h: Hypothesis) -> bool:
    """Unverifiable because a fact was missing or failed, not because a proposer sent a
    claim that was rejected: only the former makes the evidence insufficient."""
    return h.status == "unverifiable" and all(v.outcome != "rejected" for v in h.verdicts)


def verify_all(state: DiagnosisState, runtime: Runtime[Doctor]) -> dict[str, Any]:
    doctor = runtime.context
    asked = [h for h in state.proposed if not state.focus or h.kind in state.focus]
    checked = [verify(h, doctor.ledger) for h in asked]
    drop = timing.subject_drop(state.symptoms)
    if drop is not None:
        checked = [timing.dated(h, doctor.ledger, state.facts, drop) for h in checked]
    checked, not_applicable = set_aside(checked, doctor.ledger, state.facts)
    checked = rank(checked)
    probes_failed = sorted(
        {doctor.ledger.get(i).probe for i in state.facts if not doctor.ledger.get(i).ok}
    )
    verified = [h.kind for h in checked if h.status == "verified"]
    faults = [h for h in checked if layer.is_fault(h, state.symptoms)]
    # Evidence dated before the drop began was there while the run was fast: no cause.
    explained = layer.explain(
        state.symptoms,
        [h.kind for h in checked if h.status == "verified" and h.timing_fit() != "does_not_fit"],
    )
    if faults:
        verdict = "fault_found"
    elif layer.broken(explained) or (
        layer.unexplained(explained)
        and not any(_for_lack_of_facts(h) and h.kind in layer.EXPLAINS_DROP for h in checked)
    ):
        # The run got slower (or its loss broke) and nothing known explains it: that is
        # the answer, never "no fault found". While a family that would explain a drop
        # is open for lack of facts, the evidence is what is missing, not an explanation.
        verdict = "unexplained_symptom"
    elif any(_for_lack_of_facts(h) for h in checked) or (
        not state.focus and not layer.observed_healthy(explained)
    ):
        # "No fault found" about the whole run is a claim too: it needs the run's speed
        # observed and holding. A speed never observed, too few windows to tell, or a
        # drop too short to confirm leaves the evidence insufficient (the symptoms say
        # what would decide). Asked about named families only (--hypothesis), the answer
        # is about those families; the symptoms still say what the run did.
        verdict = "insufficient_evidence"
    else:
        verdict = "no_fault_found"
    offered = sorted(
        {
            name
            for name, playbook in doctor.playbooks.items()
            # A playbook names the kinds it answers; one of them verified is enough.
            if playbook.requires & {h.kind for h in checked if h.status == "verified"}
        }
    )
    offered_for = {
        kind: sorted(n for n, p in doctor.playbooks.items() if kind in p.requires)
        for kind in verified
    }
    return {
        "hypotheses": checked,
        "not_applicable": not_applicable,
        "verdict": verdict,
        "missing": probes_failed,
        "offered": offered,
        "offered_for": {k: v for k, v in offered_for.items() if v},
        "symptoms": explained,
    }


def route_after_verify(
    state: DiagnosisState, runtime: Runtime[Doctor]
) -> Literal["guide", "plan_fix", "report"]:
    if state.mode == "health":
        return "report"
    if state.interactive and state.mode in ("guided", "replay"):
        return "guide"
    if not state.offered or runtime.context.approver == "never":
        return "report"
    return "plan_fix"


def guide(state: DiagnosisState, runtime: Runtime[Doctor]) -> dict[str, Any]:
    """The guided menu: the engineer has seen the evidence and the ranked hypotheses and
    says what next. An interrupt, and nothing else here: on resume the node starts over."""
    answer = interrupt(
        {
            "question": "next",
            "hypotheses": [{"kind": h.kind, "status": h.status} for h in state.hypotheses],
            "offered": state.offered,
            "kinds": [rule.kind for rule in runtime.context.rules],
            "probes": list(PROBES),
            "focus": state.focus,
        }
    )
    try:
        choice = Choice.model_validate(answer)
    except ValueError:
        # An answer that is not a menu choice (a stray ``--approve``, say) ends the
        # session with the report, rather than guessing what was meant.
        choice = Choice(action="stop")
    if choice.action == "fix" and choice.playbook not in state.offered:
        choice = Choice(action="stop")
    return {"choices": [choice]}


def route_after_guide(state: DiagnosisState) -> Literal["probe_more", "plan_fix", "report"]:
    action = state.choice.action if state.choice else "stop"
    if action in ("test", "probe"):
        return "probe_more"
    return "plan_fix" if action == "fix" else "report"


def probe_more(state: DiagnosisState, runtime: Runtime[Doctor]) -> dict[str, Any]:
    """Fresh facts for what the engineer asked: the named family's probes, or the named
    probes; then a new round of proposals (only the families in focus)."""
    doctor = runtime.context
    assert state.choice is not None
    focus = state.focus
    wanted: set[str] = set(state.choice.probes)
    if state.choice.action == "test":
        focus = [state.choice.kind] if state.choice.kind else []
        for rule in doctor.rules:
            if not focus or rule.kind in focus:
                wanted |= rule.needs
    facts = doctor.gather(frozenset(wanted)) if wanted else []
    log.info("probed again", probes=sorted(wanted), facts=len(facts))
    return {
        "facts": [f.id for f in facts],
        "focus": focus,
        "proposed": None,
        "refused": None,
        "rounds": state.rounds + 1,
    }


def plan_fix(state: DiagnosisState, runtime: Runtime[Doctor]) -> dict[str, Any]:
    doctor = runtime.context
    chosen = state.choice.playbook if state.choice and state.choice.action == "fix" else None
    # Without a choice every offered fix is planned: the first that can be is the plan,
    # each that cannot apply to this trainer (no launch file, an option the trainer
    # lacks) is reported with its reason, not fatal: the diagnosis stands on its own.
    planned = []
    refused = []
    for name in [chosen] if chosen else state.offered:
        candidate = doctor.playbooks[name]
        try:
            planned.append((candidate, candidate.plan(_evidence(state, doctor))))
        except DoctorError as exc:
            refused.append(f"{candidate.name}: {exc}")
    if not planned:
        return {"plan_error": "; ".join(refused)}
    playbook, plan = planned[0]
    not_offered = "; ".join(refused) or None
    # The plan answers the verified hypothesis that unlocked it (the best-ranked one), and
    # says so: never a kind the facts did not verify.
    answered = next(
        (
            h.kind
            for h in state.hypotheses
            if h.status == "verified" and h.kind in playbook.requires
        ),
        None,
    )
    if answered is None:
        return {"plan_error": f"{playbook.name}: no verified hypothesis it answers"}
    plan = plan.model_copy(update={"hypothesis": answered})
    material = {"plan": plan.model_dump(exclude={"digest"}), "facts": sorted(state.facts)}
    digest = hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()
    return {"plan": plan.model_copy(update={"digest": digest}), "plan_error": not_offered}


def route_after_plan(state: DiagnosisState) -> Literal["approve", "report"]:
    return "report" if state.plan_only or state.plan is None else "approve"


def approve(state: DiagnosisState, runtime: Runtime[Doctor]) -> dict[str, Any]:
    assert state.plan is not None
    approver = runtime.context.approver
    if approver == "never":
        return {"approved": False, "approved_by": "policy: never"}
    if approver == "human":
        # Nothing above this line has a side effect: on resume the node starts over.
        answer = interrupt({"question": "apply this fix?", "plan": state.plan.model_dump()})
        ok = (
            isinstance(answer, dict)
            and answer.get("approve") is True
            and (answer.get("digest") == state.plan.digest)
        )
        return {"approved": ok, "approved_by": "human"}
    ok, who = approver(state.plan)
    return {"approved": ok, "approved_by": who}


def route_after_approve(state: DiagnosisState) -> Literal["apply", "report"]:
    return "apply" if state.approved else "report"


def apply(state: DiagnosisState, runtime: Runtime[Doctor]) -> dict[str, Any]:
    doctor = runtime.context
    assert state.plan is not None and state.approved
    playbook = doctor.playbooks[state.plan.playbook]
    outcome = playbook.apply(state.plan, _evidence(state, doctor))
    if not outcome.observations:
        return {"outcome": outcome}
    # What the transaction saw after the restart is evidence like any other: a fact, and
    # the verification as claims checked on it.
    fact = doctor.ledger.append(
        Fact(
            probe=f"verify:{outcome.playbook}",
            target=state.target,
            value=dict(outcome.observations),
        )
    )
    claims = verification_claims(fact)
    verdicts = [check(c, doctor.ledger) for c in claims]
    return {
        "outcome": outcome.model_copy(update={"facts": [fact.id]}),
        "facts": [fact.id],
        "verification": verdicts,
    }


def verification_claims(fact: Fact) -> list[Claim]:
    def ref(key: str, label: str) -> Ref:
        return Ref(fact=fact.id, path=(key,), label=label)

    value = fact.value if isinstance(fact.value, dict) else {}
    ratio = value.get("min_ratio")
    # Verifications recorded before the series was named were of the drafter's.
    who = value.get("series", "drafter ")
    who = who if isinstance(who, str) else ""
    claims = [
        Claim(
            predicate=AtLeast(
                a=ref("new_drafter_records", f"{who}train-log records after the fix"), value=1
            )
        ),
        Claim(predicate=AtMost(a=ref("new_fx_errors", "FX-trace errors after the fix"), value=0)),
    ]
    signature = value.get("signature")
    if signature not in (None, FX_TRACE.label) and "new_signature_lines" in value:
        # The error the playbook answers (a recompile-limit warning, say) when it is not
        # the FX-trace error already claimed above: the report shows it gone, cited.
        label = f"{signature} lines after the fix"
        claims.append(Claim(predicate=AtMost(a=ref("new_signature_lines", label), value=0)))
    if isinstance(ratio, int | float):
        claims.append(
            Claim(
                predicate=RatioAtLeast(
                    a=ref("drafter_tok_s", f"{who}tokens/s after the fix"),
                    b=ref("baseline_tok_s", f"baseline {who}tokens/s"),
                    ratio=float(ratio),
                )
            )
        )
    return claims


def confirm(state: DiagnosisState, runtime: Runtime[Doctor]) -> dict[str, Any]:
    """Fresh facts after a fix, so the report can compare them with before."""
    if state.outcome is None or state.outcome.status != "applied":
        return {}
    return {"facts": [f.id for f in runtime.context.gather(None)]}


def report(state: DiagnosisState) -> dict[str, Any]:
    # The report is rendered from the final state by agent.report.build; nothing to compute.
    return {}
