"""An optional LLM proposer: any LangChain chat model may suggest hypotheses, in the same
typed form a rule uses, and the checker treats them exactly like a rule's.

What the model gets: the failure families, the predicate schema and the session's facts
(id, probe, value). What it may send back: a JSON list of ``{"kind", "claims"}``. Claims
are typed predicates citing fact ids; there is no field for prose and none for a command
or a probe: a proposer reasons over the facts the sweep gathered and never runs anything.
Anything else in its answer is rejected here with a reason, claim by claim, and what is
left is checked on the ledger like any rule's claim (``agent.model.hypotheses.verify``), so an
uncited claim, a claim citing a fact that does not exist and a claim whose predicate is
false all end up in the report as rejected or failing, with why. Never required: without
``--proposer`` no model is called.
"""

from __future__ import annotations

import importlib
import json
import re
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, ValidationError

from agent.model.claims import PREDICATES, Claim, ClaimVerdict
from agent.model.hypotheses import KINDS, Hypothesis
from agent.rules.base import Evidence
from tools.errors import UsageError

FACT_CHARS = 1500  # per fact in the prompt: enough for versions, counts and signatures

SYSTEM = """You propose diagnoses for a DFlash drafter training run from machine facts.
Answer with a JSON list only. Each item: {"kind": K, "claims": [C, ...]}.
K is one of: KINDS.
Each claim C is {"predicate": {"op": OP, ...}} where "a" and "b" are references to a value
inside a fact: {"fact": "F-xxxx", "path": ["key", 0, ...], "label": "what it is"}.
OPS
A claim must cite the facts it is about; it has no free text."""


@dataclass
class Proposed:
    """What one proposer said: its raw answer (recorded, so a replay can feed it back),
    the hypotheses formed from it, and why the rest of it was refused."""

    source: str
    answer: str | None
    hypotheses: list[Hypothesis]
    refused: list[str]


class Proposal(BaseModel):
    """One hypothesis as a proposer may send it; unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    claims: list[Any] = []


def _op_lines() -> str:
    lines = []
    for cls in PREDICATES:
        fields = [n for n in cls.model_fields if n != "op"]
        lines.append(f"  {cls.model_fields['op'].default}: {', '.join(fields)}")
    return "ops and their fields:\n" + "\n".join(lines)


def _one_line(exc: ValidationError, whole: str) -> str:
    """The first error, at its field; pydantic gives an error about the whole value (not
    an object at all) no location, so it is said of ``whole`` (a claim, a proposal)."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or whole
    return f"{where}: {err['msg']}"


def form_claim(raw: object, index: int) -> Claim | ClaimVerdict:
    """A claim as sent, or the reason it cannot be one (a rejected verdict)."""

    def rejected(reason: str) -> ClaimVerdict:
        return ClaimVerdict(outcome="rejected", sentence=f"claim {index + 1}: {reason}", cites=())

    if isinstance(raw, str):
        return rejected("free text is not a claim; only typed predicates citing facts are")
    if not isinstance(raw, dict) or not isinstance(raw.get("predicate"), dict):
        keys = sorted(raw) if isinstance(raw, dict) else type(raw).__name__
        return rejected(f"no typed predicate (got {keys})")
    predicate = raw["predicate"]
    if "a" not in predicate:
        return rejected("claim cites no fact (its predicate has no reference 'a')")
    try:
        return Claim.model_validate(raw)
    except ValidationError as exc:
        return rejected(f"not a valid predicate: {_one_line(exc, 'claim')}")


class LLMProposer:
    """Asks ``model`` for hypotheses on the evidence; returns them unchecked."""

    def __init__(self, model: BaseChatModel, name: str = "") -> None:
        self.model = model
        self.name = f"llm:{name or type(model).__name__}"

    def messages(self, evidence: Evidence) -> list[SystemMessage | HumanMessage]:
        facts = []
        for fact_id in evidence.fact_ids:
            fact = evidence.ledger.get(fact_id)
            value = json.dumps(fact.value, default=str, sort_keys=True)
            facts.append(
                {
                    "id": fact.id,
                    "probe": fact.probe,
                    "ok": fact.ok,
                    "value": value[:FACT_CHARS],
                }
            )
        diff = [d.model_dump(mode="json") for d in evidence.diff if d.differs]
        system = SYSTEM.replace("KINDS", ", ".join(KINDS)).replace("OPS", _op_lines())
        human = json.dumps({"facts": facts, "baseline_diff": diff}, indent=1)
        return [SystemMessage(system), HumanMessage(human)]

    def propose(self, evidence: Evidence) -> Proposed:
        try:
            reply = self.model.invoke(self.messages(evidence))
        except Exception as exc:  # a model is foreign code: its failure is a rejection
            return Proposed(self.name, None, [], [f"the model failed: {type(exc).__name__}: {exc}"])
        text = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
        return self.parse(text)

    def parse(self, text: str) -> Proposed:
        return parse_answer(text, self.name)


def parse_answer(text: str, source: str) -> Proposed:
    """An answer as hypotheses (each carrying its rejected claims), and the
    reasons for any part of it that could not be read as a hypothesis at all."""
    result = Proposed(source, text, [], [])
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    try:
        data = json.loads(fenced.group(1) if fenced else text)
    except ValueError as exc:
        result.refused.append(f"the answer is not JSON ({exc})")
        return result
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        result.refused.append(f"the answer is a JSON {type(data).__name__}, not a list")
        return result
    for i, item in enumerate(data):
        formed = _hypothesis(item, i, source)
        if isinstance(formed, Hypothesis):
            result.hypotheses.append(formed)
        else:
            result.refused.append(formed)
    return result


def _hypothesis(item: object, index: int, source: str) -> Hypothesis | str:
    try:
        proposal = Proposal.model_validate(item)
    except ValidationError as exc:
        return f"proposal {index + 1} refused: {_one_line(exc, 'proposal')}"
    if proposal.kind not in KINDS:
        return f"proposal {index + 1}: unknown kind {proposal.kind!r}"
    claims: list[Claim] = []
    rejected: list[ClaimVerdict] = []
    for i, raw in enumerate(proposal.claims):
        formed = form_claim(raw, i)
        if isinstance(formed, Claim):
            claims.append(formed)
        else:
            rejected.append(formed)
    return Hypothesis(
        kind=proposal.kind,  # checked against KINDS above, and by pydantic again
        claims=tuple(claims),
        source=source,
        rejected=tuple(rejected),
    )


def load_model(spec: str) -> BaseChatModel:
    """``module:factory`` → the chat model ``factory()`` returns (e.g. a function of yours
    that builds ``ChatOpenAI(...)``); any failure is a one-line usage error."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise UsageError(f"--proposer {spec!r}: expected MODULE:FACTORY")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
        model = factory()
    except Exception as exc:
        raise UsageError(f"--proposer {spec!r}: {type(exc).__name__}: {exc}") from exc
    if not isinstance(model, BaseChatModel):
        raise UsageError(
            f"--proposer {spec!r}: {attr}() returned {type(model).__name__}, not a chat model"
        )
    return model


__all__ = [
    "KINDS",
    "LLMProposer",
    "Proposal",
    "Proposed",
    "form_claim",
    "load_model",
    "parse_answer",
]
