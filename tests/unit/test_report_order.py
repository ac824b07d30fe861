"""The report a human reads first: symptoms, then what changed since it worked, then the
ranked hypotheses; what a hypothesis unlocks is what the playbooks' own ``requires``
offer."""

from __future__ import annotations

from datetime import UTC, datetime

from agent.analysis.baseline import Comparable, DiffEntry, Snapshot
from agent.graph.doctor import Doctor
from agent.graph.state import DiagnosisState
from agent.graph.wiring import build_graph
from agent.model.claims import AtLeast, Claim, Ref, check
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, verify
from agent.report.build import build_report
from agent.report.markdown import render_markdown


def test_symptoms_then_changes_then_hypotheses_and_unlocks_from_the_playbooks() -> None:
    """The report reads symptoms first, then what changed since it worked (with unchanged quantities
    counted), then the hypotheses with the playbooks they unlock; with a snapshot, the run's own
    record follows the snapshot's diff."""
    ledger = Ledger()
    log = ledger.append(Fact(probe="stdoutlog", target="local", value={"count": 2}))
    values: dict[str, dict[str, int | str]] = {
        "now": {"size": 384, "py": "3.11"},
        "then": {"size": 128, "py": "3.11"},
    }
    now = ledger.append(Fact(probe="dataset", target="local", value=values["now"]))
    then = ledger.append(Fact(probe="dataset", target="local", value=values["then"]))
    race = verify(
        Hypothesis(
            kind="fx_trace_race",
            claims=(Claim(predicate=AtLeast(a=Ref(fact=log.id, path=("count",)), value=1)),),
        ),
        ledger,
    )
    assert race.status == "verified"
    diff = [
        DiffEntry(
            key=key,
            label=label,
            baseline=Ref(fact=then.id, path=(key,)),
            current=Ref(fact=now.id, path=(key,)),
            baseline_value=values["then"][key],
            current_value=values["now"][key],
        )
        for key, label in (("size", "prompts"), ("py", "Python version"))
    ]
    state = DiagnosisState(
        target="local",
        facts=[log.id, now.id],
        diff=diff,
        hypotheses=[race],
        verdict="fault_found",
        offered=["lock-warmup"],
        offered_for={"fx_trace_race": ["lock-warmup"]},
    )
    report = build_report(state, ledger, "s1")
    titles = [s.title for s in report.sections]
    assert titles[:3] == [
        "symptoms",
        "since it worked (derived baseline): 1 changed",
        "FX-tracing race under per-device compilation",
    ], titles
    since = report.sections[1].lines
    assert since[0].text.startswith("prompts: 128 [") and "→ 384 [" in since[0].text
    assert since[1].text == "1 compared quantity unchanged: Python version"
    texts = [line.text for line in report.sections[2].lines]
    assert "unlocks playbooks: lock-warmup" in texts
    assert not any("wished" in t for t in texts)
    # No train log: the symptoms section says so rather than claiming a trend.
    assert [line.text for line in report.sections[0].lines] == [
        "no train-log fact: the run's behaviour over time is unknown"
    ]
    assert render_markdown(report).index("## symptoms") < render_markdown(report).index(
        "## FX-tracing race"
    )
    assert check(race.claims[0], ledger).outcome == "holds"
    # With a snapshot, the run's own record is shown as well, after the snapshot's diff.
    with_snapshot = state.model_copy(
        update={"baseline": "good", "diff": diff[1:], "derived_diff": diff}
    )
    titles = [s.title for s in build_report(with_snapshot, ledger, "s1").sections]
    assert titles[:3] == [
        "symptoms",
        "since it worked (baseline good): 0 changed",
        "since it worked (derived baseline): 1 changed",
    ], titles


def test_a_snapshot_diagnosis_also_diffs_the_runs_own_record() -> None:
    """The graph's diff node: with a snapshot, the derived diff is computed beside it."""

    ledger = Ledger()
    now = ledger.append(Fact(probe="dataset", target="local", value={"n": 144}))
    record = ledger.append(Fact(probe="checkpoints", target="local", value={"rec": {"n": 128}}))
    table = [Comparable("n", "prompts", "dataset", ("n",), derived=("checkpoints", ("rec", "n")))]

    class Snapshots:
        """A snapshot taken when the dataset already had 144 prompts."""

        def load(self, name: str) -> Snapshot:
            then = Fact(probe="dataset", target="local", value={"n": 144})
            return Snapshot(name=name, target="local", created_at=datetime.now(UTC), facts=[then])

    doctor = Doctor(
        ledger=ledger,
        gather=lambda only: [now, record] if only is None else [],
        rules=[],
        comparables=lambda _l, _i, _b: table,
        baselines=Snapshots(),
    )
    final = DiagnosisState.model_validate(
        build_graph([], fixes=False).invoke(
            DiagnosisState(target="local", baseline="good"), context=doctor
        )
    )
    assert [(d.baseline_value, d.current_value) for d in final.diff] == [(144, 144)]
    assert [(d.baseline_value, d.current_value) for d in final.derived_diff] == [(128, 144)]
    assert final.derived_diff[0].baseline.fact == record.id


def test_every_output_cites_a_fact_once() -> None:
    """The menu printed ``✔ FX-trace error lines = 2 [F-fc80] ≥ 1 [F-fc80]``: a cited line
    adds only the ids its sentence does not name, in every output."""
    import io

    from rich.console import Console

    from agent.model.shown import with_cites
    from agent.report.html import render_html
    from agent.report.model import ClaimDoc, HypothesisDoc, Line, Report, Section
    from agent.report.terminal import show

    text = "FX-trace error lines = 2 [F-fc80] ≥ 1"
    assert with_cites(text, ["F-fc80"]) == text
    assert with_cites(text, ["F-fc80", "F-1234", "F-1234"]) == f"{text} [F-1234]"
    report = Report(
        target="local",
        session="s1",
        verdict="fault found",
        hypotheses=[
            HypothesisDoc(
                kind="fx_trace_race",
                status="verified",
                source="rule",
                claims=[ClaimDoc(text=text, cites=["F-fc80"], status="holds")],
            )
        ],
        sections=[
            Section(
                title="t",
                status="verified",
                lines=[Line(text=text, cites=["F-fc80"], outcome="holds")],
                kind="hypothesis",
            )
        ],
        facts=[],
    )
    out = io.StringIO()
    show(Console(file=out, width=200), report)
    assert out.getvalue().count("F-fc80") == 1, out.getvalue()
    assert render_markdown(report).count("F-fc80") == 1
    # The first screen lists the cited fact once more, in its table (with no command).
    assert render_markdown(report, full=False).count("F-fc80") == 1
    assert render_html(report, DiagnosisState(target="local"), Ledger()).count(">F-fc80<") == 1


def test_the_shipped_schema_is_the_models_and_the_validator_refuses_a_bad_document() -> None:
    """The shipped report schema is the one the models generate (else it is stale), and it refuses a
    document whose fact lacks its value."""
    import json

    import jsonschema
    import pytest

    from agent.report.model import SCHEMA, report_schema

    shipped = json.loads(SCHEMA.read_text())
    assert shipped == json.loads(json.dumps(report_schema())), (
        "agent/report/schema.json is stale: write report_schema() to it"
    )
    good = {
        "target": "local",
        "session": "s1",
        "verdict": "no fault found",
        "hypotheses": [],
        "sections": [{"title": "symptoms", "status": "", "lines": [], "kind": "symptoms"}],
        "facts": [
            {
                "id": "F-1a2b",
                "baseline": False,
                "probe": "pyenv",
                "command": "python3 -",
                "rc": 0,
                "error": None,
                "value": {"key_packages": {"torch": None}},
            }
        ],
    }
    jsonschema.validate(good, shipped)
    del good["facts"][0]["value"]  # type: ignore[attr-defined]
    with pytest.raises(jsonschema.ValidationError, match="'value' is a required property"):
        jsonschema.validate(good, shipped)
