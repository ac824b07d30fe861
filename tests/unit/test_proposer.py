"""The optional LLM proposer (``agent.graph.proposer``): what a chat model is shown (the
families, the predicate schema, the facts), and how its answer becomes typed hypotheses,
each part it cannot read refused or rejected with the reason, claim by claim. Chat models
here are LangChain's own fakes, scripted."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage

from agent.analysis.baseline import DiffEntry
from agent.graph.proposer import (
    FACT_CHARS,
    LLMProposer,
    Proposed,
    form_claim,
    load_model,
    parse_answer,
)
from agent.model.claims import Claim, ClaimVerdict, Exists, Ref
from agent.model.facts import Fact, Ledger
from agent.rules.base import Evidence
from tools.errors import UsageError

RACE = {"kind": "fx_trace_race", "claims": []}
EXISTS = {"predicate": {"op": "exists", "a": {"fact": "F-1", "path": ["x"]}}}


class Failing(FakeListChatModel):
    """A chat model whose call fails, as a real one does on a quota or a timeout."""

    def _call(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> str:
        raise RuntimeError("quota exceeded")


# -- one claim ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "sentence"),
    [
        (
            "torch is broken",
            "claim 3: free text is not a claim; only typed predicates citing facts are",
        ),
        (7, "claim 3: no typed predicate (got int)"),
        (
            {"predicate": "x", "because": 1},
            "claim 3: no typed predicate (got ['because', 'predicate'])",
        ),
        (
            {"predicate": {"op": "exists"}},
            "claim 3: claim cites no fact (its predicate has no reference 'a')",
        ),
        (
            {"predicate": {"op": "at_least", "a": {"fact": "F-1"}}},
            "claim 3: not a valid predicate: predicate.at_least.value: Field required",
        ),
    ],
    ids=["free-text", "a-number", "predicate-not-a-mapping", "no-reference", "missing-field"],
)
def test_a_claim_that_cannot_be_formed_is_rejected_with_its_number_and_why(
    raw: object, sentence: str
) -> None:
    """A claim that cannot be formed is a rejected verdict citing nothing, its sentence
    numbering the claim from one and saying what is wrong with it."""
    assert form_claim(raw, 2) == ClaimVerdict(outcome="rejected", sentence=sentence, cites=())


def test_a_typed_predicate_citing_a_fact_is_a_claim() -> None:
    """A typed predicate with a reference is formed into the claim it describes."""
    formed = form_claim(EXISTS, 0)
    assert formed == Claim(predicate=Exists(a=Ref(fact="F-1", path=("x",))))


# -- an answer ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        json.dumps([RACE]),
        json.dumps(RACE),
        f"Here it is:\n```json\n{json.dumps([RACE])}\n```\nHope that helps.",
        f"```\n{json.dumps(RACE)}\n```",
    ],
    ids=["list", "one-object", "fenced-json", "fenced-bare"],
)
def test_an_answer_may_be_a_list_one_object_or_fenced(text: str) -> None:
    """The JSON may come bare or inside a Markdown code fence, and one object stands for a
    list of one; the raw answer is kept as sent."""
    said = parse_answer(text, "llm:test")
    assert [(h.kind, h.source, h.claims) for h in said.hypotheses] == [
        ("fx_trace_race", "llm:test", ())
    ]
    assert (said.source, said.answer, said.refused) == ("llm:test", text, [])


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ("42", ["the answer is a JSON int, not a list"]),
        ('"it is the drivers"', ["the answer is a JSON str, not a list"]),
        (json.dumps([{"claims": []}]), ["proposal 1 refused: kind: Field required"]),
        (
            json.dumps([RACE, {"kind": "fx_trace_race", "claims": "all"}]),
            ["proposal 2 refused: claims: Input should be a valid list"],
        ),
    ],
    ids=["a-number", "a-string", "no-kind", "claims-not-a-list"],
)
def test_an_answer_or_proposal_of_the_wrong_shape_is_refused_with_why(
    text: str, refused: list[str]
) -> None:
    """An answer that is JSON but not a list of proposals is refused as a whole; a
    proposal without a kind or with claims that are not a list is refused by its number
    and the field."""
    said = parse_answer(text, "llm:test")
    assert said.refused == refused


def test_claims_that_cannot_be_formed_stay_with_their_hypothesis_as_rejected() -> None:
    """A proposal's readable claims are kept in order; the others go with it as rejected
    verdicts, numbered as sent, so the report shows why each failed."""
    other = {"predicate": {"op": "exists", "a": {"fact": "F-2"}}}
    said = parse_answer(json.dumps([{**RACE, "claims": [EXISTS, "trust me", other]}]), "llm:x")
    (hyp,) = said.hypotheses
    assert [c.cites for c in hyp.claims] == [["F-1"], ["F-2"]]
    assert hyp.rejected == (
        ClaimVerdict(
            outcome="rejected",
            sentence="claim 2: free text is not a claim; only typed predicates citing facts are",
            cites=(),
        ),
    )
    assert (hyp.status, hyp.source) == ("untested", "llm:x")


# -- the model ----------------------------------------------------------------------


def evidence() -> tuple[Evidence, Fact, Fact]:
    ledger = Ledger()
    big = ledger.append(Fact(probe="pyenv", target="local", value={"z": 1, "a": "x" * 2000}))
    failed = ledger.append(Fact(probe="gpus", target="local", error="nvidia-smi: not found"))
    diff = [
        DiffEntry(
            key=key,
            label=key,
            baseline=Ref(fact=big.id),
            current=Ref(fact=big.id),
            baseline_value=before,
            current_value=now,
        )
        for key, before, now in (("torch", "2.4", "2.5"), ("python", "3.11", "3.11"))
    ]
    return Evidence(ledger, [big.id, failed.id], diff), big, failed


def test_the_model_is_shown_the_families_the_predicates_and_the_facts() -> None:
    """The system message names every family and each predicate's fields; the human
    message lists each fact (id, probe, ok, its value as sorted JSON cut to
    ``FACT_CHARS``) and only the baseline entries that differ."""
    ev, big, failed = evidence()
    system, human = LLMProposer(FakeListChatModel(responses=["[]"])).messages(ev)
    prompt = str(system.content)
    assert (
        "K is one of: environment_drift, script_changed, compile_cache_cold, fx_trace_race, "
        "silent_eager_fallback, ineffective_monkeypatch, dataset_shape_churn, "
        "checkpoint_integrity, crash_stated, own_code_time, threads_blocked, input_bound, "
        "host_contention, limit_not_applied.\n"
    ) in prompt
    for line in ("  at_least: a, value", "  ratio_below: a, b, ratio", "  exists: a"):
        assert f"\n{line}\n" in prompt
    assert "KINDS" not in prompt and "\nOPS\n" not in prompt
    shown = json.loads(str(human.content))
    first, second = shown["facts"]
    assert (first["id"], first["probe"], first["ok"]) == (big.id, "pyenv", True)
    assert first["value"] == ('{"a": "' + "x" * 2000)[:FACT_CHARS] and FACT_CHARS == 1500
    assert second == {"id": failed.id, "probe": "gpus", "ok": False, "value": "null"}
    assert [d["key"] for d in shown["baseline_diff"]] == ["torch"]


def test_a_models_answer_is_parsed_under_its_name() -> None:
    """The proposer is named after the model (or the name given) and parses what the
    model answered."""
    model = FakeListChatModel(responses=[json.dumps([RACE])])
    assert LLMProposer(model).name == "llm:FakeListChatModel"
    proposer = LLMProposer(model, "gpt-test")
    said = proposer.propose(evidence()[0])
    assert (said.source, [h.kind for h in said.hypotheses]) == ("llm:gpt-test", ["fx_trace_race"])


def test_a_model_that_fails_is_a_refusal_not_a_crash() -> None:
    """A model is foreign code: its failure becomes one refusal naming the error, with no
    answer and no hypothesis."""
    said = LLMProposer(Failing(responses=[])).propose(evidence()[0])
    assert said == Proposed(
        "llm:Failing", None, [], ["the model failed: RuntimeError: quota exceeded"]
    )


# -- loading a model ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nocolon", "--proposer 'nocolon': expected MODULE:FACTORY"),
        (":make", "--proposer ':make': expected MODULE:FACTORY"),
        ("module:", "--proposer 'module:': expected MODULE:FACTORY"),
        (
            "no_such_module_here:make",
            "--proposer 'no_such_module_here:make': ModuleNotFoundError: "
            "No module named 'no_such_module_here'",
        ),
        (
            "tests.lib.fake_models:nothing",
            "--proposer 'tests.lib.fake_models:nothing': AttributeError: module "
            "'tests.lib.fake_models' has no attribute 'nothing'",
        ),
        (
            "tests.lib.fake_models:not_a_model",
            "--proposer 'tests.lib.fake_models:not_a_model': not_a_model() returned str, "
            "not a chat model",
        ),
    ],
    ids=["no-colon", "no-module", "no-factory", "module-missing", "factory-missing", "not-a-model"],
)
def test_a_proposer_spec_that_gives_no_chat_model_is_a_one_line_usage_error(
    spec: str, message: str
) -> None:
    """``--proposer MODULE:FACTORY`` is refused in one line saying what was wrong with
    the spec: its form, the import or attribute that failed, or what the factory
    returned."""
    with pytest.raises(UsageError) as caught:
        load_model(spec)
    assert str(caught.value) == message


def test_a_factory_that_builds_a_chat_model_is_loaded() -> None:
    """A factory returning a chat model gives that model."""
    assert isinstance(load_model("tests.lib.fake_models:not_json"), FakeListChatModel)


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        (
            '["fx_trace_race"]',
            "proposal 1 refused: proposal: Input should be a valid dictionary or instance "
            "of Proposal",
        ),
        (
            "[[1]]",
            "proposal 1 refused: proposal: Input should be a valid dictionary or instance "
            "of Proposal",
        ),
    ],
    ids=["a-string", "a-list"],
)
def test_a_proposal_that_is_not_an_object_is_refused_as_a_proposal(text: str, refused: str) -> None:
    """A proposal that is not a JSON object fails as a whole, so pydantic names no field:
    the refusal names the proposal, not a claim."""
    assert parse_answer(text, "x").refused == [refused]
