"""`dflash-doctor health` on the reference trainer's own workspace (a real run,
tests/lib/workspaces.py) with no ``--baseline``: judged against what its newest checkpoint
recorded, the baseline ``diagnose`` derives, and every output says so and prints the same
two figures. The trainer's tokens/s on a shared machine is whatever it was: the test holds
the verdict to the rule on the figures printed, never to a number of its own."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from agent.health.output.formats import trend_name
from agent.health.output.names import FILES
from tests.lib import oracle
from tests.lib.cli import cli
from tests.lib.workspaces import clone


def recorded(ws: Path) -> dict[str, float]:
    """Each finished checkpoint's name and the tokens/s its metadata recorded, as the
    trainer wrote them."""
    out = {}
    for meta in sorted(ws.glob("checkpoints/*/metadata.json")):
        value = json.loads(meta.read_text()).get("tokens_per_s")
        if isinstance(value, int | float):
            out[meta.parent.name] = float(value)
    return out


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_real_run_is_judged_against_its_derived_baseline_in_every_output(
    good_workspace: Path, tmp_path: Path
) -> None:
    """With no ``--baseline``, health judges a real run against what its newest checkpoint
    recorded; every output (JSON, JUnit, Prometheus, Markdown, trend chart) prints the same
    two figures and names that baseline."""
    from prometheus_client.parser import text_string_to_metric_families

    ws = clone(good_workspace, tmp_path / "ws")
    out = tmp_path / "out"
    where = ["--target", "local", "-w", str(ws), "--interpreter", sys.executable]
    done = cli("health", "-q", *where, "--out", str(out))
    doc = json.loads((out / FILES["json"]).read_text())
    assert done.returncode == doc["exit_code"], done.stderr
    # Every output's figures, recomputed from the raw train log (the checkpoint's record
    # is checked against the trainer's metadata below).
    assert oracle.check_health_dir(out, FILES) == []
    (target,) = doc["targets"]
    assert target["baseline"] is None
    judged = target["judged"]
    assert judged is not None, target["checks"]

    # Derived from what a checkpoint recorded: the trainer's own figure, named and cited.
    used = target["baseline_used"]
    assert used["text"].startswith("derived"), used
    names = recorded(ws)
    (name,) = [n for n in names if f"what checkpoint {n} recorded" in used["text"]]
    assert judged["baseline"] == names[name]
    assert judged["baseline_fact"] in used["cites"]

    # The verdict follows from the two figures, by the stated rule.
    regressed = judged["value"] < judged["baseline"] * judged["ratio"]
    throughput = next(c for c in target["checks"] if c["name"] == "throughput")
    assert throughput["status"] == ("failed" if regressed else "passed"), throughput
    statuses = {c["status"] for c in target["checks"]}
    expected = 1 if "failed" in statuses else 2 if "error" in statuses else 0
    assert (doc["exit_code"], target["status"] == "regressed") == (expected, expected == 1)

    # Every output prints those figures and says which baseline it was.
    metrics = target["metrics"]
    assert (metrics["tokens_per_s"]["value"], metrics["baseline_tokens_per_s"]["value"]) == (
        judged["value"],
        judged["baseline"],
    )
    suite = ET.fromstring((out / FILES["junit"]).read_text()).find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert float(props["tokens_per_s"] or "nan") == judged["value"]
    assert float(props["baseline_tokens_per_s"] or "nan") == judged["baseline"]
    assert props["baseline"] == "derived"
    gauges = {
        s.name: s.value
        for f in text_string_to_metric_families((out / FILES["prom"]).read_text())
        for s in f.samples
        if s.labels.get("target") == "local"
    }
    assert gauges["dflash_doctor_tokens_per_second"] == judged["value"]
    assert gauges["dflash_doctor_baseline_tokens_per_second"] == judged["baseline"]
    assert gauges["dflash_doctor_health_throughput_regression"] == int(regressed)
    markdown = (out / FILES["md"]).read_text()
    assert f"what checkpoint {name} recorded" in markdown
    chart = (out / trend_name("local")).read_text()
    assert f"baseline: {judged['baseline']:,.0f} tok/s (derived" in chart
