"""A finished session rebuilt from its transcript alone (``agent.sessions.recorded``): the
state and the ledger from the recorded events, for ``report FILE``, and a one-line refusal
for a transcript that is not whole or not a diagnosis as this app records one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agent.graph.applicability import NotApplicable
from agent.graph.state import Answer, Choice, DiagnosisState, FixOutcome, FixPlan, Refusal
from agent.model.claims import AtMost, Claim, ClaimVerdict, Ref
from agent.model.facts import Fact, Ledger
from agent.report.build import build_report
from agent.report.model import Report
from agent.sessions.config import SessionConfig
from agent.sessions.recorded import flat_event, ill_shaped, load_recorded
from agent.sessions.runner import record_outcome
from agent.sessions.session import Session
from tools.errors import TranscriptError
from tools.signing import installation_key
from tools.transcript import TranscriptWriter

SHIPPED = Path(__file__).resolve().parents[2] / "transcripts"


def transcript(path: Path, events: list[dict[str, Any]], target: str = "local") -> Path:
    """A whole transcript of ``events``, sealed by this installation."""
    writer = TranscriptWriter(path, {"command": "diagnose", "target": target})
    for event in events:
        writer.write(event)
    writer.close()
    return path


def fact_event(fact: Fact, baseline: bool = False) -> dict[str, Any]:
    return {"type": "fact", "baseline": baseline, "fact": fact.model_dump(mode="json")}


VERDICT: dict[str, Any] = {"type": "verdict", "verdict": "no_fault_found"}


def test_the_state_is_rebuilt_from_the_events(tmp_path: Path) -> None:
    """Facts are filed in the order recorded, a baseline fact apart from the others; the
    diff, symptoms, hypotheses, plan, approval, outcome, refusals, answers and choices
    come back as recorded, and the verdict event gives the verdict and its context."""
    ledger = Ledger()
    now = ledger.append(Fact(probe="dataset", target="local", value={"n": 384}))
    then = ledger.append(Fact(probe="dataset", target="local", value={"n": 128}))
    entry = {
        "key": "n",
        "label": "prompts",
        "baseline": {"fact": then.id, "path": ["n"], "label": ""},
        "current": {"fact": now.id, "path": ["n"], "label": ""},
        "baseline_value": 128,
        "current_value": 384,
    }
    hypothesis = {"kind": "dataset_shape_churn", "claims": [], "status": "verified"}
    plan = {"playbook": "pad-shapes", "hypothesis": "dataset_shape_churn", "digest": "d"}
    events = [
        fact_event(now),
        fact_event(then, baseline=True),
        {"type": "diff", "entry": entry},
        {"type": "derived_diff", "entry": entry},
        {"type": "answer", "source": "llm:Fake", "text": "[]"},
        {"type": "refused", "source": "llm:Fake", "reason": "the answer is not JSON"},
        {"type": "choice", "choice": {"action": "test", "kind": "dataset_shape_churn"}},
        {"type": "symptoms", "symptoms": []},
        {"type": "hypothesis", "hypothesis": hypothesis},
        {"type": "plan", "plan": plan},
        {"type": "approval", "approved": True, "by": "human"},
        {"type": "apply", "outcome": {"playbook": "pad-shapes", "status": "applied"}},
        {
            "type": "verdict",
            "verdict": "fault_found",
            "missing": ["gpus"],
            "baseline": "good",
            "mode": "demo",
            "focus": ["dataset_shape_churn"],
            "examined": {"dataset_shape_churn": [now.id]},
            "offered_for": {"dataset_shape_churn": ["pad-shapes"]},
        },
    ]
    recorded = load_recorded(transcript(tmp_path / "t.jsonl", events))
    state = recorded.state
    assert [recorded.ledger.get(i).value for i in state.facts] == [{"n": 384}]
    assert [recorded.ledger.get(i).value for i in state.baseline_facts] == [{"n": 128}]
    assert (state.facts, state.baseline_facts) == ([now.id], [then.id])
    assert [(d.label, d.baseline_value, d.current_value) for d in state.diff] == [
        ("prompts", 128, 384)
    ]
    assert state.derived_diff == state.diff
    assert [(h.kind, h.status) for h in state.hypotheses] == [("dataset_shape_churn", "verified")]
    assert state.plan is not None and (state.plan.playbook, state.plan.digest) == (
        "pad-shapes",
        "d",
    )
    assert (state.approved, state.approved_by) == (True, "human")
    assert state.outcome is not None and state.outcome.status == "applied"
    assert state.answers == [Answer(source="llm:Fake", text="[]")]
    assert state.refused == [Refusal(source="llm:Fake", reason="the answer is not JSON")]
    assert state.choices == [Choice(action="test", kind="dataset_shape_churn")]
    assert (state.target, state.verdict, state.mode, state.baseline) == (
        "local",
        "fault_found",
        "demo",
        "good",
    )
    assert (state.missing, state.focus) == (["gpus"], ["dataset_shape_churn"])
    assert state.examined == {"dataset_shape_churn": [now.id]}
    assert state.offered_for == {"dataset_shape_churn": ["pad-shapes"]}
    assert recorded.header["command"] == "diagnose"
    assert recorded.seal.signed_by == "this installation"


def test_a_verdict_event_alone_gives_the_defaults(tmp_path: Path) -> None:
    """A verdict that records nothing else is a guided session with no baseline, focus or
    plan: nothing approved, by nobody."""
    state = load_recorded(transcript(tmp_path / "t.jsonl", [VERDICT])).state
    assert (state.mode, state.baseline, state.focus, state.missing) == ("guided", None, [], [])
    assert (state.plan, state.approved, state.approved_by, state.outcome) == (None, None, "", None)
    assert (state.facts, state.hypotheses, state.examined) == ([], [], {})


def test_a_session_that_did_not_finish_is_refused(tmp_path: Path) -> None:
    """A transcript without a verdict is a session that did not finish: no report is
    rendered from it."""
    path = transcript(tmp_path / "t.jsonl", [{"type": "symptoms", "symptoms": []}])
    with pytest.raises(TranscriptError) as caught:
        load_recorded(path)
    assert str(caught.value) == f"{path}: no verdict recorded (the session did not finish)"


def test_a_fact_whose_id_does_not_match_its_content_is_refused(tmp_path: Path) -> None:
    """A fact recorded under an id its content does not give (edited before the seal) is
    refused, naming the event and the id."""
    fact = Ledger().append(Fact(probe="host", target="local", value={"cpus": 16}))
    event = fact_event(fact)
    event["fact"]["value"] = {"cpus": 64}
    path = transcript(tmp_path / "t.jsonl", [event, VERDICT])
    with pytest.raises(TranscriptError) as caught:
        load_recorded(path)
    assert str(caught.value) == f"{path}: event 1: fact {fact.id} does not match its content"


@pytest.mark.parametrize(
    ("event", "why"),
    [
        ({"type": "verdict"}, "an event lacks 'verdict'"),
        (
            {"type": "refused", "source": "x", "reason": "y", "extra": 1},
            "1 validation error for Refusal",
        ),
        (
            {"type": "hypothesis", "hypothesis": {"kind": "gremlins", "claims": []}},
            "1 validation error for Hypothesis",
        ),
        ({"type": "fact", "fact": {"probe": "host", "target": "local"}}, "an event lacks 'id'"),
        ({"type": "diff"}, "an event lacks 'entry'"),
    ],
    ids=["verdict-without-verdict", "refusal-extra-field", "unknown-kind", "fact-no-id", "diff"],
)
def test_a_whole_transcript_of_another_shape_is_one_line(
    tmp_path: Path, event: dict[str, Any], why: str
) -> None:
    """A whole transcript whose events are not what this app records is refused in one
    line naming the file and what is wrong, never a traceback."""
    path = transcript(tmp_path / "t.jsonl", [event, VERDICT])
    with pytest.raises(TranscriptError) as caught:
        load_recorded(path)
    assert str(caught.value) == f"{path}: not a diagnosis as this app records one: {why}"


def test_a_transcript_cut_short_is_refused_before_its_events_are_read(tmp_path: Path) -> None:
    """A transcript without its seal (cut, or its writer killed) renders no report."""
    path = transcript(tmp_path / "t.jsonl", [VERDICT])
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))
    with pytest.raises(TranscriptError, match=r":2: not sealed: the file ends without its seal"):
        load_recorded(path)


@pytest.mark.parametrize(
    ("own_key", "said"),
    [
        (False, "sealed; signature not checked: this installation has no transcript key"),
        (True, "sealed; signature not checked: signed by another installation"),
    ],
    ids=["no-key-here", "another-installation"],
)
def test_a_shipped_transcript_loads_but_says_its_signature_was_not_checked(
    own_key: bool, said: str
) -> None:
    """A transcript signed elsewhere still renders and says its signature was not
    checked (this installation has no key, or another one); where a signature by this
    installation is required it is refused, naming the file."""
    if own_key:
        installation_key()
    path = SHIPPED / "healthy.jsonl"
    recorded = load_recorded(path)
    assert recorded.state.verdict == "no_fault_found"
    assert not recorded.seal.checked and recorded.seal.sentence.startswith(said)
    with pytest.raises(TranscriptError) as caught:
        load_recorded(path, require_signature=True)
    assert str(caught.value) == (
        f"{path}: {recorded.seal.sentence}; a signature by this installation is required"
    )


@pytest.mark.parametrize(
    ("model", "event", "expected"),
    [
        (
            Refusal,
            {"type": "refused", "seq": 3, "prev": "ab", "source": "s", "reason": "r"},
            Refusal(source="s", reason="r"),
        ),
        (
            Answer,
            {"type": "answer", "seq": 4, "prev": "cd", "source": "s", "text": None},
            Answer(source="s", text=None),
        ),
    ],
    ids=["refusal", "answer"],
)
def test_a_flat_event_is_the_event_without_its_envelope(
    model: type[BaseModel], event: dict[str, Any], expected: BaseModel
) -> None:
    """A model recorded flat in its event is read from the event less the writer's
    envelope (type, seq, prev)."""
    assert flat_event(model, event) == expected


@pytest.mark.parametrize(
    ("exc", "said"),
    [
        (KeyError("verdict"), "an event lacks 'verdict'"),
        (ValueError("first line\nsecond line"), "first line"),
        (TypeError(), "TypeError"),
    ],
    ids=["missing-key", "multi-line", "no-message"],
)
def test_an_ill_shaped_transcript_is_said_in_one_line(exc: Exception, said: str) -> None:
    """What is wrong is one line: a missing key by its name, an error by its first line,
    or by its type when it has no message."""
    error = ill_shaped(Path("/x/t.jsonl"), exc)
    assert str(error) == f"/x/t.jsonl: not a diagnosis as this app records one: {said}"


def recorded_and_live(state: DiagnosisState, session: Session) -> tuple[Report, Report]:
    """``state`` recorded by ``record_outcome`` and loaded back: the report built from the
    transcript, and the one built live from ``state``."""
    record_outcome(session, state)
    session.close()
    recorded = load_recorded(session.transcript_path)
    return (
        build_report(recorded.state, recorded.ledger, session.id),
        build_report(state, session.ledger, session.id),
    )


def test_families_set_aside_and_a_fix_not_planned_come_back_from_the_transcript(
    tmp_path: Path,
) -> None:
    """The families set aside as not applicable (with the verdicts why), the playbooks
    offered and why none could be planned are recorded: the report rendered from the
    transcript is the live one, and "what was checked" says the family was not
    applicable, not that no hypothesis was formed from its facts."""
    session = Session.create(SessionConfig(command="diagnose", target="local"), root=tmp_path)
    scripts = session.ledger.append(
        Fact(probe="script_patches", target="local", value={"compile_sites": 0})
    )
    held = ClaimVerdict(
        outcome="holds", sentence=f"torch.compile sites = 0 [{scripts.id}]", cites=(scripts.id,)
    )
    aside = NotApplicable(
        kinds=("compile_cache_cold",),
        claims=(Claim(predicate=AtMost(a=Ref(fact=scripts.id, path=("compile_sites",)), value=0)),),
        verdicts=(held,),
    )
    state = DiagnosisState(
        target="local",
        facts=[scripts.id],
        verdict="no_fault_found",
        not_applicable=aside,
        examined={"compile_cache_cold": [scripts.id]},
        offered=["lock-warmup"],
        plan_error="lock-warmup: no launch file",
    )
    from_transcript, live = recorded_and_live(state, session)
    assert [s.title for s in from_transcript.sections] == [
        "symptoms",
        "not applicable: the run does not compile",
        "what was checked",
        "fix not offered",
    ]
    by_title = {s.title: [line.text for line in s.lines] for s in from_transcript.sections}
    assert by_title["not applicable: the run does not compile"] == [
        "compile cache cold or wiped",
        f"torch.compile sites = 0 [{scripts.id}]",
    ]
    assert by_title["what was checked"] == [
        "compile_cache_cold: not applicable (the run does not compile)"
    ]
    assert by_title["fix not offered"] == ["lock-warmup: no launch file"]
    assert from_transcript == live
    state_back = load_recorded(session.transcript_path).state
    assert (state_back.not_applicable, state_back.offered) == (aside, ["lock-warmup"])


def test_a_fixs_verification_comes_back_from_the_transcript(tmp_path: Path) -> None:
    """The claims that verified an applied fix are recorded: the fix section rendered from
    the transcript ends with them, as the live one does."""
    session = Session.create(SessionConfig(command="diagnose", target="local"), root=tmp_path)
    after = session.ledger.append(
        Fact(probe="verify:lock-warmup", target="local", value={"fx_errors": 0})
    )
    gone = ClaimVerdict(
        outcome="holds", sentence=f"FX-trace error lines = 0 [{after.id}]", cites=(after.id,)
    )
    state = DiagnosisState(
        target="local",
        facts=[after.id],
        verdict="fault_found",
        offered=["lock-warmup"],
        plan=FixPlan(playbook="lock-warmup", hypothesis="fx_trace_race", steps=["restart"]),
        approved=True,
        approved_by="human",
        outcome=FixOutcome(
            playbook="lock-warmup", status="applied", detail="restarted", facts=[after.id]
        ),
        verification=[gone],
    )
    from_transcript, live = recorded_and_live(state, session)
    (fix,) = [s for s in from_transcript.sections if s.title == "fix: lock-warmup"]
    assert [(line.text, line.outcome) for line in fix.lines] == [
        ("step: restart", "info"),
        ("approved by human", "info"),
        ("applied: restarted", "info"),
        (f"FX-trace error lines = 0 [{after.id}]", "holds"),
    ]
    assert from_transcript == live


def test_a_plan_only_session_comes_back_as_one_that_wrote_nothing(tmp_path: Path) -> None:
    """A session that stopped after the plan (``--plan-only``) says so from its transcript
    as live: "plan only: nothing was written", not "not approved by nobody"."""
    session = Session.create(SessionConfig(command="diagnose", target="local"), root=tmp_path)
    state = DiagnosisState(
        target="local",
        verdict="fault_found",
        offered=["lock-warmup"],
        plan=FixPlan(playbook="lock-warmup", hypothesis="fx_trace_race", steps=["restart"]),
        plan_only=True,
    )
    from_transcript, live = recorded_and_live(state, session)
    (fix,) = [s for s in from_transcript.sections if s.title == "fix: lock-warmup"]
    assert [line.text for line in fix.lines] == [
        "step: restart",
        "plan only: nothing was written",
    ]
    assert from_transcript == live


def test_a_transcript_recorded_before_these_fields_loads_without_them(tmp_path: Path) -> None:
    """A verdict and a fix recorded before the set-aside families, the offer, the plan's
    error, plan-only and the verification were (the shipped transcripts) load with none
    of them: nothing set aside, nothing offered, no error, no verification."""
    plan = {"playbook": "pad-shapes", "hypothesis": "dataset_shape_churn"}
    events: list[dict[str, Any]] = [
        {"type": "plan", "plan": plan},
        {"type": "approval", "approved": True, "by": "human"},
        {"type": "apply", "outcome": {"playbook": "pad-shapes", "status": "applied"}},
        {"type": "verdict", "verdict": "fault_found", "offered_for": {}},
    ]
    state = load_recorded(transcript(tmp_path / "t.jsonl", events)).state
    assert (state.not_applicable, state.offered, state.plan_error) == (None, [], None)
    assert (state.plan_only, state.verification) == (False, [])
    assert state.outcome is not None and state.outcome.status == "applied"
