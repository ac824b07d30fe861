"""The report's document: its sections and lines, the claims and facts it lists, and the
JSON Schema of ``diagnose --json`` (``schema.json`` beside this module)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, JsonValue

VERDICT_TEXT = {
    "fault_found": "fault found",
    "no_fault_found": "no fault found",
    "insufficient_evidence": "insufficient evidence",
    "unexplained_symptom": "symptom unexplained",
}


class Line(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    cites: list[str]
    outcome: Literal["holds", "fails", "unverifiable", "rejected", "info"] = "info"


SectionKind = Literal[
    "symptoms",
    "changes",
    "applies",
    "missing",
    "unexplained",
    "hypothesis",
    "refused",
    "not_applicable",
    "checked",
    "probed_with",
    "unobserved",
    "fix",
]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str
    status: str = ""
    lines: list[Line]
    kind: SectionKind
    """What the section is, so that a short rendering can choose (``--full`` shows all)."""


class ClaimDoc(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    cites: list[str]
    status: str


class HypothesisDoc(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: str
    status: str
    source: str
    claims: list[ClaimDoc]


class FactDoc(BaseModel):
    """A fact as the report lists it: the command that produced it and what it held."""

    model_config = ConfigDict(extra="forbid")

    id: str
    baseline: bool
    probe: str
    command: str
    rc: int | None
    error: str | None
    value: JsonValue


class Report(BaseModel):
    """The report; as JSON it is the document scripts read (``diagnose --json``):
    ``session``, ``verdict``, ``hypotheses`` (kind, status, claims with text, cites and
    status), ``facts`` (each with the command that produced it), and the sections."""

    model_config = ConfigDict(extra="forbid")

    target: str
    session: str
    verdict: str
    hypotheses: list[HypothesisDoc]
    sections: list[Section]
    facts: list[FactDoc]
    # ``report FILE``: how the transcript it was rendered from was checked (its seal's
    # words: signed by this installation, or by another, unchecked). None for a live run.
    transcript: str | None = None


SCHEMA = Path(__file__).with_name("schema.json")


def report_schema() -> dict[str, Any]:
    """The JSON Schema of ``diagnose --json`` (shipped as ``agent/report/schema.json``; a
    test keeps the file equal to the model and validates real documents against it)."""
    schema: dict[str, Any] = Report.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "dflash-doctor diagnose --json"
    return schema
