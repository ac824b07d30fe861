"""The report's sections on what the run did (``agent.report.run_sections``): its symptoms
and what the train log says of its course, the baseline diff with what "when it worked"
was, an unfinished apply, and the evidence missing for lack of torch. Expected sentences
are written out by hand from the facts each test builds."""

from __future__ import annotations

from typing import Any

import pytest

from agent.analysis.baseline import DiffEntry
from agent.analysis.symptoms import Symptom
from agent.graph.state import DiagnosisState
from agent.model.claims import AtLeast, Claim, ClaimVerdict, Ref
from agent.model.facts import Fact, Ledger
from agent.report.model import Line, Section
from agent.report.run_sections import (
    interrupted_section,
    missing_evidence,
    since_it_worked,
    symptoms_section,
)

NO_LOG = Line(text="no train-log fact: the run's behaviour over time is unknown", cites=[])


def verdict(outcome: Any, sentence: str, *cites: str) -> ClaimVerdict:
    return ClaimVerdict(outcome=outcome, sentence=sentence, cites=cites)


def symptom(**fields: Any) -> Symptom:
    base: dict[str, Any] = {
        "kind": "throughput_drop",
        "series": "drafter tokens/s",
        "subject": True,
        "claims": (Claim(predicate=AtLeast(a=Ref(fact="F-b"), value=1)),),
        "verdicts": (
            verdict("holds", "after/before = 0.33 [F-b]", "F-b"),
            verdict("holds", "windows = 8 [F-a]", "F-a", "F-b"),
        ),
        "status": "verified",
        "step": 410,
        "ratio": 0.33,
    }
    return Symptom.model_validate({**base, **fields})


def entry(
    label: str, before: object, now: object, ids: tuple[str, str] = ("F-b", "F-c")
) -> DiffEntry:
    return DiffEntry.model_validate(
        {
            "key": label,
            "label": label,
            "baseline": {"fact": ids[0], "path": ["x"]},
            "current": {"fact": ids[1]},
            "baseline_value": before,
            "current_value": now,
        }
    )


# -- symptoms -----------------------------------------------------------------------


def test_a_verified_drop_lists_its_claims_and_what_explains_it() -> None:
    """A verified symptom is headed "(verified)" citing its verdicts' facts once, then each
    claim; once there is a verdict, a verified drop of the judged throughput says which
    families explain it, by title."""
    state = DiagnosisState(
        target="local",
        verdict="fault_found",
        symptoms=[symptom(explained_by=("fx_trace_race", "script_changed"))],
    )
    assert symptoms_section(state, Ledger()) == Section(
        title="symptoms",
        kind="symptoms",
        lines=[
            Line(
                text="drafter tokens/s fell to 0.33× at step 410 (verified)",
                cites=["F-a", "F-b"],
                outcome="holds",
            ),
            Line(text="after/before = 0.33 [F-b]", cites=["F-b"], outcome="holds"),
            Line(text="windows = 8 [F-a]", cites=["F-a", "F-b"], outcome="holds"),
            Line(
                text="explained by: FX-tracing race under per-device compilation, "
                "training script or config changed since the known good state",
                cites=[],
            ),
            NO_LOG,
        ],
    )


@pytest.mark.parametrize(
    ("verdict_", "explained"),
    [(None, []), ("unexplained_symptom", ["no verified family explains it"])],
    ids=["before-a-verdict", "explained-by-nothing"],
)
def test_a_drop_explained_by_nothing_says_so_once_there_is_a_verdict(
    verdict_: Any, explained: list[str]
) -> None:
    """A drop no family explains says so, but only once the families have been weighed."""
    state = DiagnosisState(target="local", verdict=verdict_, symptoms=[symptom()])
    texts = [line.text for line in symptoms_section(state, Ledger()).lines]
    assert texts[3:-1] == explained


@pytest.mark.parametrize(
    ("fields", "head"),
    [
        ({"status": "unverifiable"}, "drafter tokens/s fell to 0.33× at step 410: unverifiable"),
        (
            {"subject": False, "status": "refuted"},
            "drafter tokens/s fell to 0.33× at step 410: refuted",
        ),
        (
            {
                "kind": "throughput_steady",
                "status": "refuted",
                "verdicts": (verdict("fails", "q [F-b]", "F-b"), verdict("holds", "r", "F-b")),
            },
            "drafter tokens/s slowed in its last quarter, with no change point sustained "
            "enough to place",
        ),
        (
            {"kind": "throughput_steady", "status": "refuted", "verdicts": ()},
            "drafter tokens/s was not steady in its last quarter, with no change point "
            "sustained enough to place",
        ),
    ],
    ids=["unverifiable-drop", "refuted-drop", "refuted-steady", "refuted-steady-no-claims"],
)
def test_an_unverified_symptom_is_headed_with_its_status(fields: dict[str, Any], head: str) -> None:
    """A symptom not verified carries its status after the headline, except a refuted
    steady claim, whose headline already says which way the speed went; neither is
    marked as holding nor says what explains it."""
    state = DiagnosisState(target="local", verdict="no_fault_found", symptoms=[symptom(**fields)])
    first, *rest = symptoms_section(state, Ledger()).lines
    assert (first.text, first.outcome) == (head, "info")
    assert not any(line.text.startswith("explained by") for line in rest)


# -- what the train log says --------------------------------------------------------


def section_of(ledger: Ledger, *facts: Fact) -> list[Line]:
    state = DiagnosisState(target="local", facts=[f.id for f in facts])
    return symptoms_section(state, ledger).lines


@pytest.mark.parametrize(
    ("error", "why"),
    [("permission denied", "permission denied"), ("", "probe failed")],
    ids=["stated-error", "empty-error"],
)
def test_an_unreadable_train_log_says_why_the_course_is_unknown(error: str, why: str) -> None:
    """A failed train-log fact is one unverifiable line giving its error (or "probe
    failed" when it gave none), citing the fact."""
    ledger = Ledger()
    log = ledger.append(Fact(probe="trainlog", target="local", error=error))
    assert section_of(ledger, log) == [
        Line(
            text=f"the train log could not be read ({why}): the run's behaviour over time "
            "is unknown",
            cites=[log.id],
            outcome="unverifiable",
        )
    ]


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        ({"why": {"throughput": "no tokens/s field"}}, " (no tokens/s field)"),
        ({"why": {}}, ""),
        (None, ""),
    ],
    ids=["with-reason", "no-reason", "no-schema"],
)
def test_a_log_without_throughput_says_the_speed_is_unknown_and_why(
    schema: object, said: str
) -> None:
    """A read train log with no speed to judge gives its last step, then says it holds no
    throughput, with the parser's reason where it gave one."""
    ledger = Ledger()
    log = ledger.append(
        Fact(probe="trainlog", target="local", value={"steps": {"max": 1200}, "schema": schema})
    )
    assert section_of(ledger, log) == [
        Line(text="last step logged: 1200", cites=[log.id]),
        Line(
            text=f"the train log [{log.id}] holds no throughput{said}: the run's speed over "
            "time is unknown",
            cites=[log.id],
        ),
    ]


def test_a_log_with_a_speed_but_no_symptom_says_too_few_windows() -> None:
    """A train log that states a speed but gave no symptom says how many windows it had:
    too few to read a trend. A log with no step maximum names no last step."""
    ledger = Ledger()
    value = {"speed": {"recent": {"value": 100.0}}, "windows": [{}, {}], "steps": {}}
    log = ledger.append(Fact(probe="trainlog", target="local", value=value))
    assert section_of(ledger, log) == [
        Line(
            text="no trend read: 2 train-log window(s), too few for a change point or a "
            "steady claim",
            cites=[log.id],
        )
    ]


def test_with_symptoms_the_log_adds_only_its_last_step() -> None:
    """Where symptoms were found, the train log adds its last step and nothing on why no
    trend was read; the newest train-log fact is the one read."""
    ledger = Ledger()
    old = ledger.append(Fact(probe="trainlog", target="local", value={"steps": {"max": 10}}))
    new = ledger.append(Fact(probe="trainlog", target="local", value={"steps": {"max": 20}}))
    state = DiagnosisState(target="local", facts=[old.id, new.id], symptoms=[symptom()])
    assert symptoms_section(state, ledger).lines[-1] == Line(
        text="last step logged: 20", cites=[new.id]
    )


# -- since it worked ----------------------------------------------------------------


def test_no_diff_is_no_section() -> None:
    """Nothing compared, no "since it worked" section."""
    assert since_it_worked(DiagnosisState(target="local"), Ledger(), [], None) is None


@pytest.mark.parametrize(
    ("before", "now", "text"),
    [
        (4298.210052107709, 4300.5, "4,298 [F-b] → 4,300 [F-c]"),
        (12.3456, -1234.4, "12.35 [F-b] → -1,234 [F-c]"),
        (float("nan"), 99.99, "nan [F-b] → 99.99 [F-c]"),
        (12800, 4300, "12800 [F-b] → 4300 [F-c]"),
        ("2.4.1", None, "'2.4.1' [F-b] → None [F-c]"),
    ],
    ids=["large-floats", "small-and-negative", "not-finite", "ints", "text-and-null"],
)
def test_a_changed_value_is_shown_as_a_person_reads_it(
    before: object, now: object, text: str
) -> None:
    """A float of 100 or more is shown whole and grouped, a smaller one to four
    significant digits; anything else (an int, text, null, NaN) as its repr; each side
    cites its fact."""
    section = since_it_worked(
        DiagnosisState(target="local"), Ledger(), [entry("speed", before, now)], None
    )
    assert section is not None
    assert section.lines == [Line(text=f"speed: {text}", cites=["F-b", "F-c"])]


def test_what_differs_comes_first_and_the_unchanged_are_counted() -> None:
    """Changed quantities come first, one line each; the unchanged ones are folded into
    one line counting them ("quantities" for more than one) and citing their facts once;
    the title names the snapshot and how many changed."""
    entries = [
        entry("Python version", "3.11", "3.11", ("F-p", "F-c")),
        entry("prompts", 128, 384, ("F-b", "F-c")),
        entry("torch", "2.5", "2.5", ("F-a", "F-c")),
    ]
    section = since_it_worked(DiagnosisState(target="local"), Ledger(), entries, "good")
    assert section == Section(
        title="since it worked (baseline good): 1 changed",
        kind="changes",
        lines=[
            Line(text="prompts: 128 [F-b] → 384 [F-c]", cites=["F-b", "F-c"]),
            Line(
                text="2 compared quantities unchanged: Python version, torch",
                cites=["F-a", "F-c", "F-p"],
            ),
        ],
    )


def test_the_derived_baseline_says_which_checkpoints_it_read_against_the_drop() -> None:
    """Without a snapshot, the section opens with each checkpoint the baseline was read
    from, the last read first: written at or before the step the drop began at, after
    it, or at a step not known."""
    ledger = Ledger()
    steps = [{"name": "ckpt-1000", "step": 1000}, {"name": "ckpt-1500", "step": 1500}]
    ckpt = ledger.append(Fact(probe="checkpoints", target="local", value={"steps": steps}))
    other = ledger.append(Fact(probe="dataset", target="local", value={"n": 1}))

    def read(name: str, label: str) -> DiffEntry:
        return DiffEntry(
            key=label,
            label=label,
            baseline=Ref(fact=ckpt.id, path=("steps", f"@name={name}", "n")),
            current=Ref(fact=other.id),
            baseline_value=1,
            current_value=1,
        )

    entries = [
        read("ckpt-1000", "a"),
        read("ckpt-1500", "b"),
        read("ckpt-1000", "c"),  # read twice: listed once
        read("ckpt-old", "d"),
    ]
    began = symptom(began=Ref(fact="F-log", path=("windows", 3)), began_step=1200.0)
    state = DiagnosisState(target="local", symptoms=[began])
    section = since_it_worked(state, ledger, entries, None)
    assert section is not None
    assert section.title == "since it worked (derived baseline): 0 changed"
    change = "the change at step 1,200 [F-log]"
    cites = sorted({ckpt.id, "F-log"})
    assert section.lines[:3] == [
        Line(
            text=f"derived baseline: checkpoint ckpt-old [{ckpt.id}], whose step is not "
            f"known, against {change}",
            cites=cites,
        ),
        Line(
            text=f"derived baseline: checkpoint ckpt-1500, written at step 1,500 [{ckpt.id}], "
            f"after {change}",
            cites=cites,
        ),
        Line(
            text=f"derived baseline: checkpoint ckpt-1000, written at step 1,000 [{ckpt.id}], "
            f"at or before {change}",
            cites=cites,
        ),
    ]
    assert len(section.lines) == 4


# -- an interrupted apply, missing evidence ------------------------------------------


def test_an_interrupted_apply_is_its_own_section() -> None:
    """An unfinished apply the ``applies`` fact shows is a section of its lines, citing
    that fact; without one there is no section."""
    ledger = Ledger()
    assert interrupted_section(DiagnosisState(target="local"), ledger) is None
    value = {"journal": {"interrupted": True, "path": "/w/.journal", "error": "is unreadable"}}
    applies = ledger.append(Fact(probe="applies", target="local", value=value))
    section = interrupted_section(DiagnosisState(target="local", facts=[applies.id]), ledger)
    assert section == Section(
        title="an interrupted apply",
        kind="applies",
        lines=[
            Line(
                text="the apply journal /w/.journal is unreadable: an earlier apply may have "
                "left files changed; compare them with the backups beside it",
                cites=[applies.id],
            )
        ],
    )


@pytest.mark.parametrize(
    ("python", "shown"),
    [
        ({"executable": "/usr/bin/python3"}, "/usr/bin/python3"),
        ({}, "(unnamed)"),
        (None, "(unnamed)"),
    ],
    ids=["named", "no-executable", "no-python"],
)
def test_a_probed_python_without_torch_names_the_remedy(python: object, shown: str) -> None:
    """The probed Python having no torch is said once, unverifiable, with the options that
    name the trainer's Python."""
    ledger = Ledger()
    value = {"python": python, "key_packages": {"torch": None, "triton": "3.1"}}
    pyenv = ledger.append(Fact(probe="pyenv", target="local", value=value))
    section = missing_evidence(DiagnosisState(target="local", facts=[pyenv.id]), ledger)
    assert section == Section(
        title="missing evidence",
        kind="missing",
        lines=[
            Line(
                text=f"the probed Python {shown} has no torch installed (key_packages.torch "
                f"is null) [{pyenv.id}]: the torch facts are missing; name the trainer's "
                'Python with --interpreter PATH or the profile\'s interpreter = "PATH"',
                cites=[pyenv.id],
                outcome="unverifiable",
            )
        ],
    )


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ({"key_packages": {"torch": "2.5.1"}}, None),
        ({"key_packages": {"triton": None}}, None),
        ({"key_packages": None}, None),
        (None, "timed out"),
    ],
    ids=["torch-installed", "torch-not-listed", "no-packages", "probe-failed"],
)
def test_no_missing_evidence_unless_the_pyenv_fact_says_torch_is_null(
    value: Any, error: str | None
) -> None:
    """Only a read pyenv fact whose ``key_packages.torch`` is null makes this section."""
    ledger = Ledger()
    pyenv = ledger.append(Fact(probe="pyenv", target="local", value=value, error=error))
    assert missing_evidence(DiagnosisState(target="local", facts=[pyenv.id]), ledger) is None
    assert missing_evidence(DiagnosisState(target="local"), ledger) is None
