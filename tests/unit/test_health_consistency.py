"""Health agrees with itself: a target is regressed on throughput only when the figure it
was judged on is below its baseline's by the stated ratio, and every output shows those
two figures and the rule; the history of one target name is kept per workspace and
profile; without ``--baseline`` the baseline is derived as ``diagnose`` derives it, and
every output says which baseline was used; the global options are accepted after the
command name.

The targets are workspaces on this machine checked for real (the probe bundle through a
local transport, the graph, the rule base); their train logs are written here, one
drafter series at chosen tokens/s, so that the figures a verdict must follow from are
known to the test.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import structlog

from agent.analysis.baseline import baseline_store
from agent.cli import main
from agent.cli.application import COMMANDS
from agent.graph.gather import SweepGatherer
from agent.health.check import HealthTarget, check_target, not_checked
from agent.health.history import HealthHistory
from agent.health.model import HealthRun, TargetResult
from agent.health.output.formats import trend_name, write
from agent.health.output.names import FILES, FORMATS
from agent.health.run import plan_targets, run_health
from agent.model.facts import Ledger
from tests.lib import oracle
from tests.lib.cli import cli
from tests.lib.probe_workspace import write_pt
from tools.sweep import SweepSpec
from tools.transport import LocalTransport, SSHOptions

# The run now: 3,000 tokens/s, then a sustained fall to 2,000 inside its own log. The
# judged figure is the recent median, 2,000; the log's early window, 3,000.
NOW = [3000.0] * 250 + [2000.0] * 150
SLOWER, FASTER = 1500.0, 4000.0  # the snapshots' steady tokens/s


def workspace(root: Path, speeds: Sequence[float], *, series: bool = True) -> Path:
    """A workspace as a trainer leaves it: a finished checkpoint that records no tokens/s
    (so a derived baseline is the log's early window), the train log (one drafter series,
    or with ``series=False`` records naming none, one record a step at ``speeds``) and a
    console log."""
    step = root / "checkpoints" / f"step_{len(speeds)}"
    step.mkdir(parents=True)
    write_pt(step / "drafter.pt")
    (step / "metadata.json").write_text(json.dumps({"step": len(speeds)}))
    records = [
        {"step": i + 1, "time": 1.7e9 + i, "role": "drafter", "device": "cpu:0", "loss": 2.0,
         "tokens_per_s": tok}
        for i, tok in enumerate(speeds)
    ]  # fmt: skip
    if not series:
        records = [{k: v for k, v in r.items() if k not in ("role", "device")} for r in records]
    log = "".join(json.dumps(r) + "\n" for r in records)
    (root / "checkpoints" / "train_log.jsonl").write_text(log)
    (root / "checkpoints" / "train_stdout.log").write_text(f"step {len(speeds)}\n")
    return root


def spec(ws: Path) -> SweepSpec:
    return SweepSpec.for_workspace(str(ws), interpreter=sys.executable, torch_import=False)


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This machine as the targets see it: an inductor cache of its own, warm and the same
    for every snapshot and check (the machine's shared one is whatever other runs left)."""
    cache = tmp_path / "inductor"
    cache.mkdir()
    (cache / "kernel.py").write_text("# compiled\n")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    return tmp_path


@pytest.fixture
def now_ws(machine: Path) -> Path:
    ws = workspace(machine / "now", NOW)
    for name, tok in (("slower", SLOWER), ("faster", FASTER)):
        then = workspace(machine / name, [tok] * 400)
        baseline_store().save(
            name, "local", SweepGatherer(LocalTransport(), spec(then), Ledger())(None)
        )
    return ws


def checked(ws: Path, baseline: str | None) -> TargetResult:
    target = HealthTarget(label="local", uri="local", spec=spec(ws), baseline=baseline)
    return agrees(check_target(target, ssh=SSHOptions(), deadline=time.monotonic() + 120))


def agrees(result: TargetResult) -> TargetResult:
    """``result``, once the oracle has recomputed its figures from the raw logs."""
    assert oracle.check_health_target(json.loads(result.model_dump_json())) == []
    return result


def named(result: TargetResult | dict[str, Any], name: str) -> Any:
    """The check ``name`` of a result, or of a result in a JSON document."""
    if isinstance(result, TargetResult):
        return next(c for c in result.checks if c.name == name)
    return next(c for c in result["checks"] if c["name"] == name)


# -- 1. regressed only when the judged figure is below its baseline by the ratio --------


def test_a_run_above_its_baseline_is_not_regressed_by_a_drop_inside_its_log(now_ws: Path) -> None:
    """The reported night: the log fell from 3,000 to 2,000 tokens/s inside the run, and
    the judged figure (2,000) is above the snapshot's (1,500). Not a regression: with no
    family verified the target is healthy. The drop inside the log is still told."""
    result = checked(now_ws, "slower")
    assert result.metrics["tokens_per_s"].value == 2000.0
    assert result.metrics["baseline_tokens_per_s"].value == SLOWER
    assert result.status == "healthy", (result.reason, [(c.name, c.status) for c in result.checks])
    throughput = named(result, "throughput")
    assert throughput.status == "passed"
    assert "2,000" in throughput.message and "1,500" in throughput.message
    symptoms = named(result, "symptoms")
    assert symptoms.status == "passed" and "fell to 0.67×" in symptoms.message


@pytest.mark.parametrize(
    ("baseline", "base", "regressed", "which"),
    [
        ("slower", SLOWER, False, "snapshot 'slower'"),
        ("faster", FASTER, True, "snapshot 'faster'"),
        (None, 3000.0, True, "derived"),
    ],
)
def test_every_output_shows_the_figures_the_verdict_was_judged_on(
    now_ws: Path,
    tmp_path: Path,
    baseline: str | None,
    base: float,
    regressed: bool,
    which: str,
) -> None:
    """JSON, JUnit, the Prometheus textfile, Markdown and the SVG trend each carry the
    judged tokens/s, the baseline's, the ratio and which baseline it was; the throughput
    verdict in each is "regressed" exactly when judged < baseline × ratio."""
    from prometheus_client.parser import text_string_to_metric_families

    targets = plan_targets(
        ["local"],
        baselines=[baseline] if baseline else [],
        workspace=str(now_ws),
        interpreter=sys.executable,
    )
    targets = [dataclasses.replace(t, spec=spec(now_ws)) for t in targets]
    run = run_health(targets, ssh=SSHOptions(), history=HealthHistory(tmp_path / "history"))
    out = tmp_path / "out"
    write(run, FORMATS, out)
    assert oracle.check_health_dir(out, FILES) == []

    doc = json.loads((out / FILES["json"]).read_text())
    (target,) = doc["targets"]
    judged = target["judged"]
    ratio = judged["ratio"]
    assert (judged["value"], judged["baseline"]) == (2000.0, base)
    assert target["metrics"]["tokens_per_s"]["value"] == judged["value"]
    assert target["metrics"]["baseline_tokens_per_s"]["value"] == judged["baseline"]
    assert (judged["value"] < judged["baseline"] * ratio) is regressed
    assert named(target, "throughput")["status"] == ("failed" if regressed else "passed")
    assert (target["status"] == "regressed") is regressed
    assert doc["exit_code"] == (1 if regressed else 0)
    assert f"{ratio:g}×" in doc["rule"]
    assert target["baseline"] == baseline
    assert target["baseline_used"]["text"].startswith(which)

    suite = ET.fromstring((out / FILES["junit"]).read_text()).find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert float(props["tokens_per_s"] or "nan") == 2000.0
    assert float(props["baseline_tokens_per_s"] or "nan") == base
    assert props["baseline"] == (baseline or "derived")
    assert (props["baseline_used"] or "").startswith(which)
    assert f"{ratio:g}×" in (props["regression_rule"] or "")
    case = suite.find("testcase[@name='throughput']")
    assert case is not None and (case.find("failure") is not None) is regressed

    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families((out / FILES["prom"]).read_text())
        for s in f.samples
    }
    label = (("target", "local"),)
    assert samples[("dflash_doctor_tokens_per_second", label)] == 2000.0
    assert samples[("dflash_doctor_baseline_tokens_per_second", label)] == base
    assert samples[("dflash_doctor_health_regression_ratio", ())] == ratio
    assert samples[("dflash_doctor_health_throughput_regression", label)] == int(regressed)
    assert samples[("dflash_doctor_health_regression", label)] == int(regressed)
    kind = "derived" if baseline is None else "snapshot"
    info = [k for k in samples if k[0] == "dflash_doctor_health_baseline_info"]
    assert info == [
        ("dflash_doctor_health_baseline_info",
         (("baseline", baseline or ""), ("kind", kind), ("target", "local")))
    ]  # fmt: skip

    md = (out / FILES["md"]).read_text()
    row = next(line for line in md.splitlines() if line.startswith("| `local`"))
    assert re.search(r"\b2,000 \[F-", row) and re.search(rf"\b{base:,.0f} \[F-", row), row
    assert ("✘ regressed" in row) is regressed
    assert f"{ratio:g}×" in md and which in md

    ns = "{http://www.w3.org/2000/svg}"
    chart = ET.fromstring((out / trend_name("local")).read_text())
    titles = [t.text or "" for t in chart.iter(f"{ns}title")]
    assert "2,000 tok/s" in titles[0] and f"baseline {base:,.0f}" in titles[0], titles[0]
    assert f"baseline: {base:,.0f} tok/s ({which}" in " ".join(titles)
    assert f"regressed below: {base * ratio:,.0f} tok/s" in " ".join(titles)


def test_a_workspace_with_nothing_for_some_probes_is_still_checked(machine: Path) -> None:
    """A train log and nothing else: the sweep's checkpoints and console-log probes find
    nothing and leave no fact; the families that need them get none, rather than a
    second bundle the read-only guard refuses (which made the target "could not check")."""
    ws = machine / "bare"
    ws.mkdir()
    (ws / "train_log.jsonl").write_text(
        (workspace(machine / "src", NOW) / "checkpoints" / "train_log.jsonl").read_text()
    )
    result = checked(ws, None)
    assert result.status != "could_not_check", result.reason
    assert "ReadOnlyViolation" not in result.reason
    probes = {f.probe for f in result.facts}
    assert "trainlog" in probes and "checkpoints" not in probes
    assert named(result, "throughput").status == "failed"  # 2,000 against 3,000


def test_a_log_of_one_unnamed_series_is_judged_on_its_stated_speed(machine: Path) -> None:
    """No role or device in the log: the judged figure is the log's speed over its recent
    records (2,000) and the derived baseline its early windows' (3,000), each as the
    oracle recomputes it from the records (``checked``)."""
    result = checked(workspace(machine / "plain", NOW, series=False), None)
    assert result.judged is not None
    assert (result.judged.value, result.judged.baseline) == (2000.0, 3000.0)
    assert "median of the last 50 records" in result.judged.label
    assert named(result, "throughput").status == "failed"


# -- 2. history is kept per target, workspace and profile --------------------------------


def test_the_trend_of_a_target_holds_only_its_own_workspaces_runs(
    now_ws: Path, machine: Path
) -> None:
    """Two workspaces checked as the same target name (``local``): each one's trend and
    "since" come from its own runs only."""
    other = workspace(machine / "other", [SLOWER] * 400)
    history = HealthHistory(machine / "history")

    def night(ws: Path) -> TargetResult:
        (t,) = plan_targets(["local"], baselines=["slower"], workspace=str(ws))
        t = dataclasses.replace(t, spec=spec(ws))
        (result,) = run_health([t], ssh=SSHOptions(), history=history).targets
        return agrees(result)

    night(now_ws)
    night(other)
    tonight = night(now_ws)
    assert [p.tokens_per_s for p in tonight.trend] == [2000.0, 2000.0]
    assert tonight.since_runs == 2
    assert tonight.workspace == str(now_ws)
    assert [p.tokens_per_s for p in night(other).trend] == [SLOWER, SLOWER]


# What a run recorded before the history knew workspaces: no workspace key at all.
LEGACY = {
    "run": "20261101-020000-0001",
    "at": "2026-11-01T02:00:00Z",
    "target": "local",
    "uri": "local",
    "baseline": "slower",
    "status": "regressed",
    "tokens_per_s": 9999.0,
    "last_step_age_s": 12.0,
    "regressions": ["symptoms"],
}


def test_a_line_without_a_workspace_is_read_but_kept_out_of_every_workspaces_trend(
    now_ws: Path, machine: Path
) -> None:
    """A history line written before entries recorded their workspace is still read, but it joins no
    workspace's trend or 'since' count."""
    history = HealthHistory(machine / "history")
    history.root.mkdir(parents=True)
    history.history_path.write_text(json.dumps(LEGACY) + "\n")
    (t,) = plan_targets(["local"], baselines=["slower"], workspace=str(now_ws))
    t = dataclasses.replace(t, spec=spec(now_ws))
    (result,) = run_health([t], ssh=SSHOptions(), history=history).targets
    agrees(result)
    assert [p.tokens_per_s for p in result.trend] == [2000.0]
    assert (result.since_runs, result.since) == (1, result.started_at)
    # Still readable: it is history, of a key no run has now.
    assert [e.tokens_per_s for e in history.entries("local")] == [9999.0, 2000.0]


def test_one_target_name_in_two_profiles_has_two_histories(tmp_path: Path) -> None:
    """The same name and workspace in two doctor.toml files are two targets: each result
    names its profile, and neither's history is the other's."""
    configs = []
    for name in ("a", "b"):
        path = tmp_path / name / "doctor.toml"
        path.parent.mkdir()
        path.write_text('[targets.gpu]\nuri = "local"\nworkspace = "/w"\n')
        configs.append(path)
    first, second = (plan_targets(["gpu"], config=str(c))[0] for c in configs)
    assert (first.profile, second.profile) == tuple(str(c.resolve()) for c in configs)
    history = HealthHistory(tmp_path / "history")
    mine = not_checked(first, datetime.now(UTC), 1.0, "ConnectError: refused")
    history.record(run_of(history.annotate(mine, "run0")))
    theirs = history.annotate(not_checked(second, datetime.now(UTC), 1.0, "refused"), "run1")
    assert (theirs.workspace, theirs.profile) == ("/w", str(configs[1].resolve()))
    assert theirs.since_runs == 1 and len(theirs.trend) == 1
    again = history.annotate(not_checked(first, datetime.now(UTC), 1.0, "refused"), "run2")
    assert again.since_runs == 2 and len(again.trend) == 2


def run_of(result: TargetResult) -> HealthRun:
    return HealthRun(
        run=f"run-{result.started_at.timestamp()}",
        started_at=result.started_at,
        finished_at=result.started_at,
        exit_code=2,
        exit_reason="",
        jobs=1,
        target_timeout_s=60,
        targets=[result],
    )


# -- 3. without --baseline, derived as diagnose derives it -------------------------------


def run_cli(
    args: Sequence[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[object, str, str]:
    """The console script's entry point, in-process: its exit code, stdout and stderr."""
    monkeypatch.setattr(sys, "argv", ["dflash-doctor", *args])
    saved = structlog.get_config()  # main() configures logging onto capsys's stderr
    try:
        with pytest.raises(SystemExit) as info:
            main()
    finally:
        structlog.configure(**saved)
    said = capsys.readouterr()
    return info.value.code, said.out, said.err


def test_health_without_a_baseline_derives_the_one_diagnose_derives(
    now_ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --baseline: the run is judged against its own early window (3,000), the baseline
    diagnose's "since it worked (derived baseline)" shows for the same workspace, and the
    result says it was derived and from what."""
    where = ["-t", "local", "-w", str(now_ws), "--interpreter", sys.executable]
    code, out, err = run_cli(["-q", "health", "--format", "json", *where], monkeypatch, capsys)
    assert code == 1, err
    assert oracle.check_health(json.loads(out)) == []
    (target,) = json.loads(out)["targets"]
    assert target["baseline"] is None
    used = target["baseline_used"]
    assert used["text"].startswith("derived"), used
    assert "early window" in used["text"]
    base = target["metrics"]["baseline_tokens_per_s"]
    assert base["value"] == 3000.0
    assert base["cites"][0] in used["cites"]

    code, out, err = run_cli(
        ["-q", "diagnose", "--format", "json", "--non-interactive", "--plan-only", *where],
        monkeypatch,
        capsys,
    )
    report = json.loads(out)
    assert oracle.check_report(report) == []
    since = next(s for s in report["sections"] if s["title"].startswith("since it worked"))
    assert "(derived baseline)" in since["title"]
    label = target["metrics"]["baseline_tokens_per_s"]["label"].removeprefix("baseline ")
    line = next(ln["text"] for ln in since["lines"] if ln["text"].startswith(label))
    assert line.startswith(f"{label} (the early windows' median → median of the last "), line
    assert f" records): {base['value']:,.0f} [" in line, line
    assert f"→ {target['metrics']['tokens_per_s']['value']:,.0f} [" in line


def test_a_target_without_a_baseline_of_its_own_is_derived(tmp_path: Path) -> None:
    """``--baseline TARGET=NAME`` for one target: the others are derived, not refused."""
    planned = plan_targets(["local", "ssh://h"], baselines=["local=g"], workspace=str(tmp_path))
    assert [(t.label, t.baseline) for t in planned] == [("local", "g"), ("ssh://h", None)]


# -- 4. the global options after the command name -----------------------------------------


@pytest.mark.parametrize("option", ["-q", "--quiet", "-v", "--verbose", "--log-json"])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_global_option_is_accepted_after_any_command_name(
    name: str, option: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Quiet, verbose and JSON-logging options are accepted after any command's name, and each
    command's help lists them."""
    code, out, err = run_cli([name, option, "--help"], monkeypatch, capsys)
    assert (code, err) == (0, "")
    assert re.search(rf"(^|[\s,]){re.escape(option)}\b", out), out


def test_global_options_after_the_command_name_take_effect(tmp_path: Path) -> None:
    """Through the console script: ``facts -q`` is as quiet as ``-q facts``, ``--log-json``
    after the name logs JSON lines; a command's own arguments after ``--`` stay its own."""
    sweep = ["--json", "-w", str(tmp_path), "--only", "host"]
    loud = cli("facts", *sweep)
    before = cli("-q", "facts", *sweep)
    after = cli("facts", "-q", *sweep)
    assert {loud.returncode, before.returncode, after.returncode} == {0}, after.stderr
    assert b"sweep_started" in loud.stderr
    assert b"sweep_started" not in after.stderr
    assert after.stderr == before.stderr
    logged = cli("facts", "--log-json", *sweep)
    # The settings line is the command's own text; the log's events are JSON lines.
    lines = logged.stderr.decode().splitlines()
    events = [json.loads(line) for line in lines if line.startswith("{")]
    assert "sweep_started" in {e["event"] for e in events}, lines
    assert not [line for line in loud.stderr.decode().splitlines() if line.startswith("{")]
    echoed = cli("exec", "--", "echo", "-q", "-v")
    assert (echoed.returncode, echoed.stdout) == (0, b"-q -v\n")


# -- 5. the oracle catches a figure that an output or the log does not give ----------------


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Two nights of the target without a snapshot (judged 2,000 against its early
    window's 3,000: regressed), every format written: the texts, by format ("svg": the
    target's trend), untouched; each test alters a copy."""
    root = tmp_path_factory.mktemp("oracle")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_STATE_HOME", str(root / "state"))
        mp.setenv("TORCHINDUCTOR_CACHE_DIR", str(root / "inductor"))
        ws = workspace(root / "now", NOW)
        history = HealthHistory(root / "history")
        for _ in range(2):
            (t,) = plan_targets(["local"], workspace=str(ws), interpreter=sys.executable)
            t = dataclasses.replace(t, spec=spec(ws))
            run = run_health([t], ssh=SSHOptions(), history=history)
        write(run, FORMATS, root / "out")
    texts: dict[str, str] = {fmt: (root / "out" / FILES[fmt]).read_text() for fmt in FORMATS}
    texts["svg"] = (root / "out" / trend_name("local")).read_text()
    return texts


def mismatches(texts: dict[str, str]) -> list[oracle.Mismatch]:
    return oracle.check_health(
        json.loads(texts["json"]),
        junit=texts["junit"],
        prom=texts["prom"],
        md=texts["md"],
        svgs={"local": texts["svg"]},
    )


def off(number: str, by: float = 1.1) -> str:
    """A printed figure made 10% larger, printed alike ("2,000" -> "2,200")."""
    value = float(number.replace(",", "")) * by
    return f"{value:,.0f}" if "," in number else f"{value:g}"


# (format, pattern whose first group is altered, how, the figure the oracle must name)
ALTERED: list[tuple[str, str, Callable[[str], str], str]] = [
    ("json", r'"judged": \{[^}]*?"value": ([\d.]+)', off, "json:judged.value"),
    ("json", r'"judged": \{[^}]*?"baseline": ([\d.]+)', off, "json:judged.baseline"),
    ("json", r'"last_step": \{\s*"value": ([\d.]+)', lambda v: "401.0", "json:metrics.last_step"),
    ("json", r'"name": "throughput",[^}]*?"status": "(failed)"', lambda v: "passed",
     "json:checks.throughput.status"),
    ("json", r'"judged": \{\s*"label": "[^"]*the last (\d+) records', lambda v: "40",
     "json:judged.label: records"),
    ("junit", r'name="last_step" value="([\d.]+)"', lambda v: "401", "junit:last_step"),
    ("junit", r'name="status" value="(regressed)"', lambda v: "healthy", "junit:status"),
    ("junit", r'name="tokens_per_s" value="([\d.]+)"', off, "junit:tokens_per_s"),
    ("junit", r'name="regressed_below_tokens_per_s" value="([\d.]+)"', off,
     "junit:regressed_below_tokens_per_s"),
    ("junit", r'name="throughput"[^>]*>\s*(<failure .*?</failure>)', lambda v: "",
     "junit:failed testcases"),
    ("prom", r'^dflash_doctor_tokens_per_second\{target="local"\} ([\d.]+)$', off,
     "prom:dflash_doctor_tokens_per_second"),
    ("prom", r'^dflash_doctor_baseline_tokens_per_second\{target="local"\} ([\d.]+)$', off,
     "prom:dflash_doctor_baseline_tokens_per_second"),
    ("prom", r'^dflash_doctor_health_throughput_regression\{target="local"\} (1)$',
     lambda v: "0", "prom:dflash_doctor_health_throughput_regression"),
    ("md", r"^\| `local` \|[^|]*\|[^|]*\| ([\d,]+) \[", off, "md:table tokens/s"),
    ("md", r"^- regressed below ([\d,]+) tokens/s", off, "md:regressed below"),
    ("md", r"^- drafter tokens/s = ([\d,]+) \[", off, "md:drafter tokens/s"),
    ("md", r"^- drafter last step = ([\d,]+) \[", lambda v: "401", "md:drafter last step"),
    ("md", r"^\| `local` \|.*?\| ([\d.]+) d \[", off, "md:table last step age"),
    ("md", r"^\| tokens/s against the baseline \|.* is ([\d.]+)× the baseline's", off,
     "md:throughput message: × the baseline's"),
    ("svg", r"<circle [^>]*><title>[^<]*: ([\d,]+) tok/s", off, "svg:point 0 tok/s"),
    ("svg", r'<circle cx="[\d.]+" cy="([\d.]+)"', lambda v: f"{float(v) + 1:.1f}",
     "svg:point 0 height"),
    ("svg", r"<title>[^<]*, baseline ([\d,]+),", off, "svg:caption baseline"),
    ("svg", r"<title>baseline: ([\d,]+) tok/s", off, "svg:baseline line"),
    ("svg", r"<title>regressed below: ([\d,]+) tok/s", off, "svg:regressed below line"),
    ("svg", r'<line [^>]*y1="([\d.]+)"[^>]*><title>regressed below', lambda v: "50.0",
     "svg:regressed below line height"),
    ("prom", r'^dflash_doctor_last_step\{target="local"\} ([\d.]+)$', lambda v: "401",
     "prom:dflash_doctor_last_step"),
]  # fmt: skip


def test_the_oracle_finds_nothing_in_outputs_that_agree(outputs: dict[str, str]) -> None:
    """Outputs written by one health run agree with each other: the oracle reports no mismatch, so
    its findings on altered copies are real."""
    assert mismatches(outputs) == []


@pytest.mark.parametrize(("fmt", "pattern", "how", "figure"), ALTERED, ids=[a[3] for a in ALTERED])
def test_the_oracle_names_the_output_and_figure_altered(
    outputs: dict[str, str], fmt: str, pattern: str, how: Callable[[str], str], figure: str
) -> None:
    """One figure in one output off (by 10%, or a verdict flipped): the oracle reports a
    mismatch naming that output and figure, for that target."""
    found = re.search(pattern, outputs[fmt], re.M | re.S)
    assert found, (fmt, pattern)
    text = outputs[fmt]
    altered = text[: found.start(1)] + how(found[1]) + text[found.end(1) :]
    bad = mismatches({**outputs, fmt: altered})
    assert any(m.figure == figure and m.where in ("target 'local'", "run") for m in bad), bad


def test_the_oracle_holds_every_output_to_the_raw_log(now_ws: Path, tmp_path: Path) -> None:
    """The log's recent records rewritten after the check (2,000 -> 2,200 tokens/s): the
    figure each output printed is no longer the log's, and the oracle says so in each."""
    (t,) = plan_targets(["local"], workspace=str(now_ws), interpreter=sys.executable)
    run = run_health([dataclasses.replace(t, spec=spec(now_ws))], ssh=SSHOptions())
    write(run, FORMATS, tmp_path / "out")
    assert oracle.check_health_dir(tmp_path / "out", FILES) == []
    log = now_ws / "checkpoints" / "train_log.jsonl"
    log.write_text(log.read_text().replace('"tokens_per_s": 2000.0', '"tokens_per_s": 2200.0'))
    figures = {m.figure for m in oracle.check_health_dir(tmp_path / "out", FILES)}
    assert {
        "json:judged.value",
        "json:metrics.tokens_per_s",
        "junit:tokens_per_s",
        "prom:dflash_doctor_tokens_per_second",
        "md:table tokens/s",
        "svg:point 0 tok/s",
        "svg:caption tok/s",
    } <= figures, figures
