"""The health run as JUnit XML (``agent.health.output.junit``): a suite per target with its
counts, times and properties, a case per check whose outcome element follows the check's
status, and the texts made safe for XML 1.0."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta, timezone

from agent.health.model import (
    Check,
    CheckStatus,
    Cited,
    HealthRun,
    Judged,
    Metric,
    TargetResult,
)
from agent.health.output.junit import render

T0 = datetime(2026, 11, 1, 2, 0, tzinfo=UTC)


def check(
    name: str, status: CheckStatus, message: str = "", lines: list[Cited] | None = None
) -> Check:
    return Check(name=name, title=f"the {name}", status=status, message=message, lines=lines or [])


def result(label: str = "gpu", **extra: object) -> TargetResult:
    fields: dict[str, object] = {
        "target": label,
        "uri": "ssh://root@gpu/pct:200",
        "status": "regressed",
        "started_at": T0,
        "duration_s": 6.5,
    }
    return TargetResult.model_validate({**fields, **extra})


def root_of(*targets: TargetResult, seconds: float = 12.25) -> ET.Element:
    run = HealthRun(
        run="20261101-020000-0001",
        started_at=T0,
        finished_at=T0 + timedelta(seconds=seconds),
        exit_code=1,
        exit_reason="",
        rule="the rule",
        jobs=1,
        target_timeout_s=60,
        targets=list(targets),
    )
    return ET.fromstring(render(run))


CHECKS = [
    check("sweep", "passed", "3 of 3 probes answered"),
    check(
        "throughput",
        "failed",
        "2,000 is 0.67×",
        [Cited(text="tps = 2000 [F-1]", cites=["F-1", "F-2"])],
    ),
    check("symptoms", "error", "undecided", [Cited(text="loss missing", cites=["F-3"])]),
    check("script_changed", "skipped", "not checked"),
    check("crash_stated", "passed", "refuted", [Cited(text="no traceback", cites=["F-4"])]),
]


def test_the_root_counts_every_check_and_times_the_run() -> None:
    """The root names the run and counts the cases of all suites by outcome; its time is
    the run's, in seconds to the millisecond."""
    root = root_of(result(checks=CHECKS), result("b", checks=CHECKS[:2]), seconds=12.25)
    assert root.tag == "testsuites"
    assert dict(root.attrib) == {
        "name": "dflash-doctor health 20261101-020000-0001",
        "tests": "7",
        "failures": "2",
        "errors": "1",
        "skipped": "1",
        "time": "12.250",
    }


def test_a_suite_is_a_target_with_its_counts_time_and_host() -> None:
    """A target's suite carries its own counts, its check time, its start as a UTC time
    without zone (converted when given in another zone) and its URI as host name."""
    at = datetime(2026, 11, 1, 4, 30, tzinfo=timezone(timedelta(hours=2)))
    (suite,) = root_of(result(checks=CHECKS, started_at=at)).findall("testsuite")
    assert dict(suite.attrib) == {
        "name": "gpu",
        "tests": "5",
        "failures": "1",
        "errors": "1",
        "skipped": "1",
        "time": "6.500",
        "timestamp": "2026-11-01T02:30:00",
        "hostname": "ssh://root@gpu/pct:200",
    }


def test_each_check_is_a_case_whose_element_follows_its_status() -> None:
    """A failed check is a failure of type regression, an error one an error of type
    not_checked (each with title and message, the lines with their cites below), a skipped
    one a skip with its message; a passed one with lines shows them as output, without
    lines nothing."""
    (suite,) = root_of(result(checks=CHECKS)).findall("testsuite")
    cases = suite.findall("testcase")
    assert [(c.get("name"), c.get("classname"), c.get("time")) for c in cases] == [
        (name, "dflash-doctor.health.gpu", "0")
        for name in ("sweep", "throughput", "symptoms", "script_changed", "crash_stated")
    ]
    shown = [[(child.tag, dict(child.attrib), child.text) for child in case] for case in cases]
    assert shown == [
        [],
        [
            (
                "failure",
                {"message": "the throughput: 2,000 is 0.67×", "type": "regression"},
                "2,000 is 0.67×\ntps = 2000 [F-1] [F-2]",
            )
        ],
        [
            (
                "error",
                {"message": "the symptoms: undecided", "type": "not_checked"},
                "undecided\nloss missing [F-3]",
            )
        ],
        [("skipped", {"message": "not checked"}, None)],
        [("system-out", {}, "refuted\nno traceback [F-4]")],
    ]


def test_the_properties_carry_status_baseline_rule_and_figures() -> None:
    """The suite's properties, in order: status, the baseline (``derived`` without a
    snapshot), the session (empty when none), the rule, since, each metric exactly, and
    the figure below which it regressed."""
    since = datetime(2026, 10, 30, 2, 0, tzinfo=UTC)
    t = result(
        since=since,
        metrics={"tokens_per_s": Metric(value=2000.0, cites=["F-1"], label="t")},
        judged=Judged(
            label="t", value=2000.0, value_fact="F-1", baseline=2500.0, baseline_fact="F-2"
        ),
    )
    (suite,) = root_of(t).findall("testsuite")
    props = [(p.get("name"), p.get("value")) for p in suite.iter("property")]
    assert props == [
        ("status", "regressed"),
        ("baseline", "derived"),
        ("session", ""),
        ("regression_rule", "the rule"),
        ("since", "2026-10-30T02:00:00+00:00"),
        ("tokens_per_s", "2000"),
        ("regressed_below_tokens_per_s", "2000"),
    ]


def test_a_snapshot_baseline_and_what_was_used_are_properties() -> None:
    """With a snapshot and a stated baseline, the properties name the snapshot and say what
    was used, with the facts it cites."""
    used = Cited(text="snapshot 'good' of local", cites=["F-9"])
    t = result(baseline="good", baseline_used=used, session="s1")
    (suite,) = root_of(t).findall("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert (props["baseline"], props["session"], props["baseline_used"]) == (
        "good",
        "s1",
        "snapshot 'good' of local [F-9]",
    )


def test_characters_xml_cannot_carry_are_replaced() -> None:
    """Control characters in a name, a message or a line (a probe's stderr) become U+FFFD;
    tab and newline are kept; the document still parses."""
    bad = check("sweep", "error", "refused\x00\x1b[31m\tend", [Cited(text="a\x07b")])
    (suite,) = root_of(result("gpu\x01", checks=[bad])).findall("testsuite")
    assert suite.get("name") == "gpu\ufffd"
    error = suite.find("testcase/error")
    assert error is not None
    assert error.get("message") == "the sweep: refused\ufffd\ufffd[31m\tend"
    assert error.text == "refused\ufffd\ufffd[31m\tend\na\ufffdb"
