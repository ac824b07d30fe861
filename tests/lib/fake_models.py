"""Stand-ins for a real LLM (none can run here): LangChain's own ``FakeListChatModel``,
scripted. The scripts cannot know fact ids in advance (they are content hashes of what a
sweep observed), so a script names a fact as ``<fact:PROBE>`` and the model fills in the
id of that probe's newest fact from the prompt it was given — nothing else is computed.

Used by ``--proposer tests.lib.fake_models:adversarial`` (with the repository on PYTHONPATH).
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage


class ScriptedChatModel(FakeListChatModel):
    """FakeListChatModel whose scripted answers may name facts by probe."""

    def _call(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> str:
        text = super()._call(messages, stop, run_manager, **kwargs)
        facts = json.loads(str(messages[-1].content))["facts"]
        newest = {f["probe"]: f["id"] for f in facts}
        return re.sub(r"<fact:(\w+)>", lambda m: newest.get(m.group(1), "F-none"), text)


def _claim(op: str, probe: str, *path: str | int, **fields: Any) -> dict[str, Any]:
    return {"predicate": {"op": op, "a": {"fact": f"<fact:{probe}>", "path": list(path)}, **fields}}


ADVERSARIAL = [
    # Free text where a claim should be.
    {"kind": "fx_trace_race", "claims": ["torch 2.13 is broken, trust me"]},
    # A predicate that cites nothing.
    {"kind": "environment_drift", "claims": [{"predicate": {"op": "exists"}}]},
    # A citation to a fact that does not exist.
    {
        "kind": "compile_cache_cold",
        "claims": [{"predicate": {"op": "exists", "a": {"fact": "F-deadbeef", "path": ["x"]}}}],
    },
    # A well-formed claim whose predicate is false on its fact.
    {
        "kind": "environment_drift",
        "claims": [_claim("equal", "pyenv", "torch", "version", value="9.9.9")],
    },
    # A command string: there is no field for one.
    {"kind": "script_changed", "claims": [], "command": "rm -rf /"},
    # Not a failure family.
    {"kind": "cosmic_rays", "claims": []},
]

# A claim that holds: the FX-trace error lines the stdout log really has. Checked like a
# rule's, it verifies; the report says who proposed it.
HONEST = [
    {
        "kind": "fx_trace_race",
        "claims": [
            _claim("at_least", "stdoutlog", "signatures", "fx_nested_trace", "count", value=1)
        ],
    }
]


def adversarial() -> ScriptedChatModel:
    return ScriptedChatModel(responses=[json.dumps(ADVERSARIAL + HONEST)] * 8)


def not_json() -> ScriptedChatModel:
    return ScriptedChatModel(responses=["I think it is the drivers."] * 8)


def not_a_model() -> object:
    return "a string"
