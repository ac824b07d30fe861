"""The health run as JUnit XML, for CI dashboards: one ``<testsuite>`` per target, one
``<testcase>`` per target and check.

A regression (a verified family) is a ``<failure>``; a check that could not be decided,
or a target that could not be reached (its ``sweep`` case), is an ``<error>``; families
never tried on an unreachable target are ``<skipped>``. The suite's ``<properties>``
carry the status and the metrics, so a dashboard can chart tokens/s without parsing
text. The subset of the common (Jenkins / Ant) JUnit schema this follows is shipped as
``agent/health/output/junit.xsd`` and the tests validate against it.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

from agent.health.model import Check, HealthRun, TargetResult, exact
from agent.model.shown import with_cites

XSD = "junit.xsd"

# Characters XML 1.0 cannot carry at all, escaped or not (a probe's stderr may hold them).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _stamp(at: datetime) -> str:
    # Ant's schema wants a timezone-less ISO 8601 time; ours are UTC.
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _counts(checks: list[Check]) -> dict[str, str]:
    return {
        "tests": str(len(checks)),
        "failures": str(sum(c.status == "failed" for c in checks)),
        "errors": str(sum(c.status == "error" for c in checks)),
        "skipped": str(sum(c.status == "skipped" for c in checks)),
    }


def _detail(check: Check) -> str:
    lines = [check.message, *(with_cites(ln.text, ln.cites) for ln in check.lines)]
    return _xml_text("\n".join(line for line in lines if line))


def _suite(t: TargetResult, parent: ET.Element, rule: str) -> None:
    suite = ET.SubElement(
        parent,
        "testsuite",
        {
            "name": _xml_text(t.target),
            **_counts(t.checks),
            "time": f"{t.duration_s:.3f}",
            "timestamp": _stamp(t.started_at),
            "hostname": _xml_text(t.uri),
        },
    )
    props = ET.SubElement(suite, "properties")
    values = {
        "status": t.status,
        "baseline": t.baseline if t.baseline is not None else "derived",
        "session": t.session or "",
        "regression_rule": rule,
    }
    if t.baseline_used is not None:
        values["baseline_used"] = with_cites(t.baseline_used.text, t.baseline_used.cites)
    if t.since is not None:
        values["since"] = t.since.isoformat()
    for key, metric in t.metrics.items():
        values[key] = exact(metric.value)
    if t.judged is not None:
        values["regressed_below_tokens_per_s"] = exact(t.judged.threshold)
    for name, value in values.items():
        ET.SubElement(props, "property", {"name": name, "value": _xml_text(value)})
    for check in t.checks:
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "name": check.name,
                "classname": _xml_text(f"dflash-doctor.health.{t.target}"),
                "time": "0",
            },
        )
        if check.status == "failed":
            failure = ET.SubElement(
                case,
                "failure",
                {"message": _xml_text(f"{check.title}: {check.message}"), "type": "regression"},
            )
            failure.text = _detail(check)
        elif check.status == "error":
            error = ET.SubElement(
                case,
                "error",
                {"message": _xml_text(f"{check.title}: {check.message}"), "type": "not_checked"},
            )
            error.text = _detail(check)
        elif check.status == "skipped":
            ET.SubElement(case, "skipped", {"message": _xml_text(check.message)})
        elif check.lines:
            out = ET.SubElement(case, "system-out")
            out.text = _detail(check)


def render(run: HealthRun) -> str:
    checks = [c for t in run.targets for c in t.checks]
    duration = (run.finished_at - run.started_at).total_seconds()
    root = ET.Element(
        "testsuites",
        {"name": f"dflash-doctor health {run.run}", **_counts(checks), "time": f"{duration:.3f}"},
    )
    for t in run.targets:
        _suite(t, root, run.rule)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"
