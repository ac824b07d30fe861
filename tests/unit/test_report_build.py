"""``agent.report.build``: a report built only from the final state and the ledger. Its
verdict in words, each hypothesis as its checked claims, the Python the facts came from,
the probes that could not observe, and every fact with the command that produced it."""

from __future__ import annotations

from typing import Any

import pytest

from agent.graph.state import DiagnosisState
from agent.model.claims import ClaimVerdict
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis
from agent.report.build import build_report
from agent.report.model import ClaimDoc, FactDoc, HypothesisDoc, Line, Report, Section


def store(ledger: Ledger, probe: str, **fields: Any) -> Fact:
    return ledger.append(Fact(probe=probe, target="local", **fields))


def section(report: Report, kind: str) -> Section | None:
    """The report's section of ``kind``, or None when it was left out."""
    found = [s for s in report.sections if s.kind == kind]
    assert len(found) <= 1
    return found[0] if found else None


@pytest.mark.parametrize(
    ("verdict", "text"),
    [
        ("fault_found", "fault found"),
        ("no_fault_found", "no fault found"),
        ("insufficient_evidence", "insufficient evidence"),
        ("unexplained_symptom", "symptom unexplained"),
        (None, "not yet decided"),
    ],
    ids=["fault", "no-fault", "insufficient", "unexplained", "undecided"],
)
def test_the_verdict_is_said_in_words_and_the_report_names_its_session(
    verdict: Any, text: str
) -> None:
    """Each verdict is written as words; a state with none yet is "not yet decided"; the
    report names the target and the session it was built for."""
    report = build_report(DiagnosisState(target="ssh://h/pct:1", verdict=verdict), Ledger(), "s-9")
    assert (report.target, report.session, report.verdict) == ("ssh://h/pct:1", "s-9", text)


def test_a_hypothesis_is_listed_as_its_checked_claims() -> None:
    """A hypothesis shows its kind, status and source, and each verdict's sentence with
    its cites and outcome; a failed claim adds what it claimed."""
    held = ClaimVerdict(outcome="holds", sentence="count = 2 [F-1]", cites=("F-1",))
    failed = ClaimVerdict(
        outcome="fails", sentence="size = 0 [F-2]", cites=("F-2",), claimed="size ≥ 1"
    )
    h = Hypothesis(
        kind="fx_trace_race", claims=(), status="refuted", verdicts=(held, failed), source="llm:m"
    )
    report = build_report(DiagnosisState(target="local", hypotheses=[h]), Ledger(), "s")
    assert report.hypotheses == [
        HypothesisDoc(
            kind="fx_trace_race",
            status="refuted",
            source="llm:m",
            claims=[
                ClaimDoc(text="count = 2 [F-1]", cites=["F-1"], status="holds"),
                ClaimDoc(
                    text="size = 0 [F-2] (the claim: size ≥ 1)", cites=["F-2"], status="fails"
                ),
            ],
        )
    ]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (
            {
                "path": "/venv/bin/python",
                "chosen_because": "it imports torch",
                "candidates": ["a", "b", "c"],
            },
            "the target's Python /venv/bin/python: it imports torch (3 candidate(s) looked at)",
        ),
        (
            {
                "path": "/usr/bin/python3",
                "chosen_because": "given by --interpreter",
                "candidates": [],
            },
            "the target's Python /usr/bin/python3: given by --interpreter",
        ),
        (
            {"path": "/usr/bin/python3", "chosen_because": "the profile's", "candidates": "many"},
            "the target's Python /usr/bin/python3: the profile's",
        ),
    ],
    ids=["discovered", "given", "candidates-not-a-list"],
)
def test_the_python_the_facts_came_from_is_said_with_why(value: dict[str, Any], text: str) -> None:
    """The interpreter fact gives a "probed with" section: the path, why it was chosen,
    and how many candidates were looked at when there were any."""
    ledger = Ledger()
    python = store(ledger, "interpreter", value=value)
    report = build_report(DiagnosisState(target="local", facts=[python.id]), ledger, "s")
    assert section(report, "probed_with") == Section(
        title="probed with", kind="probed_with", lines=[Line(text=text, cites=[python.id])]
    )


def test_no_probed_with_section_without_an_observed_interpreter() -> None:
    """A failed interpreter probe, or a value that is not a mapping, gives no "probed
    with" section (the failure is listed as unobserved instead)."""
    ledger = Ledger()
    failed = store(ledger, "interpreter", error="no python3 on PATH")
    odd = store(ledger, "interpreter", value=["python3"])
    for facts in ([failed.id], [odd.id]):
        report = build_report(DiagnosisState(target="local", facts=facts), ledger, "s")
        assert section(report, "probed_with") is None


def test_each_probe_that_could_not_observe_is_listed_with_its_error() -> None:
    """Every failed fact of the run, in gathering order, is a line "probe: error" citing
    it; a run with none has no such section."""
    ledger = Ledger()
    ok = store(ledger, "host", value={"cpus": 8})
    gpus = store(ledger, "gpus", error="nvidia-smi: not found")
    dataset = store(ledger, "dataset", error="permission denied: /data")
    report = build_report(
        DiagnosisState(target="local", facts=[ok.id, gpus.id, dataset.id]), ledger, "s"
    )
    assert section(report, "unobserved") == Section(
        title="could not observe",
        kind="unobserved",
        lines=[
            Line(text="gpus: nvidia-smi: not found", cites=[gpus.id]),
            Line(text="dataset: permission denied: /data", cites=[dataset.id]),
        ],
    )
    clean = build_report(DiagnosisState(target="local", facts=[ok.id]), ledger, "s")
    assert section(clean, "unobserved") is None


def test_every_fact_is_listed_with_its_command_run_facts_first() -> None:
    """The facts are the run's then the baseline's; the argv is one shell-quoted command;
    a fact with no argv says which probe observed it (the part after ``:``); a baseline
    fact is marked in its probe and as baseline-only."""
    ledger = Ledger()
    run = store(ledger, "checksums", argv=("md5sum", "/w/my train.py"), rc=0, value={"a": 1})
    host = store(ledger, "host", value={"cpus": 8})
    live = store(ledger, "live:py-spy", value=None, error="py-spy missing")
    old = store(ledger, "dataset", argv=("python3", "-"), rc=1, value={"n": 128})
    state = DiagnosisState(
        target="local", facts=[run.id, host.id, live.id], baseline_facts=[old.id]
    )
    assert build_report(state, ledger, "s").facts == [
        FactDoc(
            id=run.id,
            baseline=False,
            probe="checksums",
            command="md5sum '/w/my train.py'",
            rc=0,
            error=None,
            value={"a": 1},
        ),
        FactDoc(
            id=host.id,
            baseline=False,
            probe="host",
            command="(observed by host; its commands are in the transcript)",
            rc=None,
            error=None,
            value={"cpus": 8},
        ),
        FactDoc(
            id=live.id,
            baseline=False,
            probe="live:py-spy",
            command="(observed by py-spy; its commands are in the transcript)",
            rc=None,
            error="py-spy missing",
            value=None,
        ),
        FactDoc(
            id=old.id,
            baseline=True,
            probe="dataset (baseline)",
            command="python3 -",
            rc=1,
            error=None,
            value={"n": 128},
        ),
    ]


def test_a_fact_the_baseline_and_the_run_share_is_listed_once_as_the_runs() -> None:
    """Fact ids come from their content, so a baseline fact equal to one the run gathered
    has its id: one row, the run's, not marked baseline (it was listed twice, each row
    saying "(baseline)" and baseline-only false)."""
    ledger = Ledger()
    host = store(ledger, "host", value={"cpus": 8})
    old = store(ledger, "dataset", value={"n": 128})
    state = DiagnosisState(target="local", facts=[host.id], baseline_facts=[host.id, old.id])
    rows = [(f.id, f.probe, f.baseline) for f in build_report(state, ledger, "s").facts]
    assert rows == [(host.id, "host", False), (old.id, "dataset (baseline)", True)]
