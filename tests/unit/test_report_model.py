"""The report's document (``agent.report.model``): the words each verdict is shown by, and
models that refuse what they do not know, so that ``diagnose --json`` and its JSON Schema
say one thing. (That the shipped schema file equals the models' is held elsewhere.)"""

from __future__ import annotations

from typing import Any, get_args

import jsonschema
import pytest
from pydantic import BaseModel, ValidationError

from agent.graph.state import Verdict
from agent.report.model import (
    VERDICT_TEXT,
    ClaimDoc,
    FactDoc,
    HypothesisDoc,
    Line,
    Report,
    Section,
    report_schema,
)

LINE: dict[str, Any] = {"text": "t", "cites": ["F-1"]}
SECTION: dict[str, Any] = {"title": "symptoms", "lines": [LINE], "kind": "symptoms"}
CLAIM: dict[str, Any] = {"text": "t", "cites": [], "status": "holds"}
HYPOTHESIS: dict[str, Any] = {
    "kind": "fx_trace_race",
    "status": "verified",
    "source": "rule",
    "claims": [CLAIM],
}
FACT: dict[str, Any] = {
    "id": "F-1",
    "baseline": False,
    "probe": "host",
    "command": "uname -a",
    "rc": 0,
    "error": None,
    "value": {"hostname": "h"},
}
REPORT: dict[str, Any] = {
    "target": "local",
    "session": "s1",
    "verdict": "fault found",
    "hypotheses": [HYPOTHESIS],
    "sections": [SECTION],
    "facts": [FACT],
}


def test_every_verdict_has_the_words_a_report_shows() -> None:
    """Each verdict the graph can reach is shown in words, and only those."""
    assert set(VERDICT_TEXT) == set(get_args(Verdict))
    assert VERDICT_TEXT == {
        "fault_found": "fault found",
        "no_fault_found": "no fault found",
        "insufficient_evidence": "insufficient evidence",
        "unexplained_symptom": "symptom unexplained",
    }


def test_a_line_is_information_unless_it_says_otherwise() -> None:
    """A line with no outcome is plain information; a section with no status has ""."""
    assert Line.model_validate(LINE).outcome == "info"
    assert Section.model_validate(SECTION).status == ""
    assert Report.model_validate(REPORT).transcript is None


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (Line, LINE),
        (Section, SECTION),
        (ClaimDoc, CLAIM),
        (HypothesisDoc, HYPOTHESIS),
        (FactDoc, FACT),
        (Report, REPORT),
    ],
    ids=["line", "section", "claim", "hypothesis", "fact", "report"],
)
def test_a_field_the_document_does_not_have_is_refused(
    model: type[BaseModel], data: dict[str, Any]
) -> None:
    """Every part of the document refuses a field it does not define, naming it."""
    with pytest.raises(ValidationError, match=r"surplus\n  Extra inputs are not permitted"):
        model.model_validate({**data, "surplus": 1})


@pytest.mark.parametrize(
    ("model", "data", "field"),
    [
        (Line, {**LINE, "outcome": "maybe"}, "outcome"),
        (Section, {**SECTION, "kind": "appendix"}, "kind"),
    ],
    ids=["line-outcome", "section-kind"],
)
def test_an_outcome_or_kind_outside_the_list_is_refused(
    model: type[BaseModel], data: dict[str, Any], field: str
) -> None:
    """A line's outcome and a section's kind are one of a fixed list; another is refused,
    naming the field."""
    with pytest.raises(ValidationError, match=rf"{field}\n  Input should be "):
        model.model_validate(data)


def test_the_schema_names_its_draft_and_title_and_accepts_a_whole_report() -> None:
    """The schema says which JSON Schema draft it is and what document it describes; a
    report the models accept, dumped to JSON, is valid against it (a transcript line
    included)."""
    schema = report_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == "dflash-doctor diagnose --json"
    document = Report.model_validate({**REPORT, "transcript": "signed by this installation"})
    jsonschema.validate(document.model_dump(mode="json"), schema)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sections": [{**SECTION, "kind": "appendix"}]}, "'appendix' is not one of "),
        ({"sections": [{**SECTION, "lines": [{**LINE, "outcome": "maybe"}]}]}, "'maybe' is not"),
        ({"facts": [{**FACT, "rc": "0"}]}, "'0' is not valid under any of the given schemas"),
        ({"extra": True}, "Additional properties are not allowed \\('extra' was unexpected\\)"),
    ],
    ids=["section-kind", "line-outcome", "rc-as-text", "extra-field"],
)
def test_the_schema_refuses_what_the_models_refuse(change: dict[str, Any], message: str) -> None:
    """A script validating ``diagnose --json`` output is refused the same documents the
    models refuse, with a message naming the offending value."""
    with pytest.raises(jsonschema.ValidationError, match=message):
        jsonschema.validate({**REPORT, **change}, report_schema())
