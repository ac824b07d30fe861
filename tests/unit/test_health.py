"""Health checks without the reference trainer: the exit-code rule, the fleet scheduler
(bounded concurrency, hard time limits), target and baseline resolution, and that a
health check is wired with no fix path and a read-only transport."""

from __future__ import annotations

import re
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import structlog

from agent.analysis.baseline import baseline_store
from agent.cli import main
from agent.graph.gather import SweepGatherer
from agent.graph.wiring import build_graph
from agent.health import check as health_check
from agent.health.check import Cancel, HealthTarget, check_target, not_checked, probe_bundles
from agent.health.fleet import run_fleet
from agent.health.model import TargetResult, exit_code
from agent.health.run import plan_targets, run_health
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, Kind
from agent.rules import default_rules
from agent.rules.base import Evidence
from agent.sessions import runner
from agent.sessions.config import SessionConfig
from agent.sessions.session import Session
from tools.errors import ConfigError, ReadOnlyViolation, UsageError
from tools.sweep import SweepSpec, build_plan, render
from tools.transcript import read_transcript
from tools.transport import LocalTransport, SSHOptions
from tools.transport.readonly import ReadOnlyCommand, ReadOnlyTransport

NOW = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)


def target(label: str = "a", baseline: str = "good") -> HealthTarget:
    return HealthTarget(label=label, uri="local", spec=SweepSpec(), baseline=baseline)


def result(label: str, status: str) -> TargetResult:
    return TargetResult.model_validate(
        {
            "target": label,
            "uri": "local",
            "baseline": "good",
            "status": status,
            "started_at": NOW,
            "duration_s": 1.0,
        }
    )


@pytest.mark.parametrize(
    ("statuses", "code"),
    [
        (["healthy", "healthy"], 0),
        (["healthy", "regressed"], 1),
        (["healthy", "could_not_check"], 2),
        (["regressed", "could_not_check"], 1),  # a regression outranks "could not check"
        ([], 2),
    ],
)
def test_exit_code_and_its_precedence(statuses: list[str], code: int) -> None:
    """Exit 0 when every target is healthy, 1 when any regressed, 2 when one could not be checked or
    there were none; a regression outranks 'could not check', and the reason says so."""
    got, why = exit_code([result(f"t{i}", s) for i, s in enumerate(statuses)])
    assert got == code
    if "could_not_check" in statuses:
        assert "could not check" in why


def test_fleet_keeps_order_and_bounds_concurrency() -> None:
    """Six targets, two at a time: never more than two checks run at once, and results
    come back in the order the targets were given."""
    lock = threading.Lock()
    running, peak = 0, 0

    def check(t: HealthTarget, deadline: float, cancel: Cancel) -> TargetResult:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.05 * (6 - int(t.label)))  # finish out of order
        with lock:
            running -= 1
        return result(t.label, "healthy")

    results = run_fleet([target(str(i)) for i in range(6)], check, jobs=2, limit=10)
    assert [r.target for r in results] == [str(i) for i in range(6)]
    assert peak == 2


def test_a_hung_target_is_could_not_check_at_its_limit_and_the_rest_go_on() -> None:
    """A check that never returns is declared not checked when its limit is up, its
    transport is closed (cancel), its slot goes to the next target, and what it returns
    late is ignored."""
    release = threading.Event()
    cancelled = threading.Event()

    def check(t: HealthTarget, deadline: float, cancel: Cancel) -> TargetResult:
        if t.label == "hung":

            class Closer:
                name = "stub"

                def close(self) -> None:
                    cancelled.set()

            cancel.attach(Closer())  # type: ignore[arg-type]
            release.wait(20)
            return result(t.label, "healthy")  # too late: must be ignored
        return result(t.label, "healthy")

    started = time.monotonic()
    results = run_fleet([target("hung"), target("b"), target("c")], check, jobs=1, limit=0.5)
    elapsed = time.monotonic() - started
    release.set()
    assert elapsed < 3, elapsed
    assert cancelled.is_set()
    assert [r.status for r in results] == ["could_not_check", "healthy", "healthy"]
    assert results[0].reason == "time limit of 0.5s per target exceeded"
    assert {c.status for c in results[0].checks[1:]} == {"skipped"}


def test_not_checked_has_one_case_per_family() -> None:
    """A target that could not be reached still reports one case per check (sweep, throughput,
    symptoms, applies, each family), the sweep's carrying the error."""
    r = not_checked(target(), NOW, 1.0, "ConnectError: refused")
    assert [c.name for c in r.checks] == [
        "sweep",
        "throughput",
        "symptoms",
        "applies",
        *(rule.kind for rule in default_rules()),
    ]
    assert r.checks[0].status == "error" and r.checks[0].message == "ConnectError: refused"


def write_profile(path: Path) -> Path:
    path.write_text(
        '[targets.gpu-a]\nuri = "local"\nworkspace = "/w/a"\n'
        '[targets.gpu-b]\nuri = "ssh://root@gpu-b/pct:200"\nworkspace = "/w/b"\n'
    )
    return path


def test_all_targets_with_one_baseline_and_an_override(tmp_path: Path) -> None:
    """Every target of the profile file is planned with the default baseline, except one given its
    own; the profile's workspace and the interpreter asked for are kept."""
    config = str(write_profile(tmp_path / "doctor.toml"))
    planned = plan_targets(
        all_targets=True, baselines=["good", "gpu-b=good-b"], config=config, interpreter="py3"
    )
    assert [(t.label, t.uri, t.baseline) for t in planned] == [
        ("gpu-a", "local", "good"),
        ("gpu-b", "ssh://root@gpu-b/pct:200", "good-b"),
    ]
    assert planned[1].spec.workspace == "/w/b" and planned[1].spec.interpreter == "py3"


def test_uri_targets_take_workspace_and_are_labelled_by_uri() -> None:
    """Targets given as URIs are labelled by their URI and searched in the given workspace, with no
    train log assumed."""
    planned = plan_targets(
        ["local", "ssh://root@h:2222/pct:200"], baselines=["good"], workspace="/ws"
    )
    assert [t.label for t in planned] == ["local", "ssh://root@h:2222/pct:200"]
    # No layout assumed: the probes look in the workspace on the target.
    assert all((t.spec.workspace, t.spec.train_log) == ("/ws", None) for t in planned)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"targets": ["local"], "all_targets": True, "baselines": ["g"]}, "not both"),
        ({"targets": ["local", "local"], "baselines": ["g"]}, "more than once"),
        ({"targets": ["local"], "baselines": ["other=g"]}, "unknown target(s): other"),
        ({"targets": ["local"], "baselines": ["local=g"]}, None),
        ({"targets": ["local"], "baselines": ["a", "b"]}, "two default baselines"),
    ],
)
def test_target_and_baseline_mistakes_stop_the_run(
    kwargs: dict[str, Any], message: str | None
) -> None:
    """Naming targets and --all, a target twice, a baseline for an unknown target, or two default
    baselines stops the run as a usage error; a per-target baseline is accepted."""
    if message is None:
        assert plan_targets(**kwargs)[0].baseline == "g"
        return
    with pytest.raises(UsageError, match=re.escape(message)):
        plan_targets(**kwargs)


def test_unknown_profile_name_stops_the_run(tmp_path: Path) -> None:
    """A target name the profile file does not define stops the run with a config error naming
    it."""
    config = str(write_profile(tmp_path / "doctor.toml"))
    with pytest.raises(ConfigError, match="no target 'gpu-z'"):
        plan_targets(["gpu-z"], baselines=["good"], config=config)


def test_health_graph_has_no_fix_path() -> None:
    """The health check's graph gathers, diffs against the baseline, verifies and reports, and has
    no node that could plan or apply a fix."""
    nodes = set(build_graph(default_rules(), fixes=False).get_graph().nodes)
    assert not nodes & {"plan_fix", "approve", "apply", "confirm"}
    assert {"gather", "diff_baseline", "verify", "report"} <= nodes


def test_a_health_check_holds_only_a_read_only_transport_and_no_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What check_target hands the graph: fixes=False, no playbooks, an approver that says
    no, and a gatherer whose transport is the read-only guard with one command allowed."""
    spec = SweepSpec(interpreter=sys.executable, torch_import=False)
    baseline_store().save("quick", "local", gather_local_spec(spec))
    seen: dict[str, Any] = {}
    real = runner.run_session

    def spy(session: Any, doctor: Any, **kwargs: Any) -> Any:
        seen.update(doctor=doctor, **kwargs)
        return real(session, doctor, **kwargs)

    monkeypatch.setattr(health_check, "run_session", spy)
    t = HealthTarget(label="local", uri="local", spec=spec, baseline="quick")
    r = check_target(t, ssh=SSHOptions(), deadline=time.monotonic() + 120)
    assert seen["fixes"] is False
    doctor = seen["doctor"]
    assert doctor.playbooks == {} and doctor.approver == "never"
    guard = doctor.gather.transport
    assert isinstance(guard, ReadOnlyTransport)
    assert [c.argv for c in guard.allowed] == [(sys.executable, "-B", "-")]
    assert r.status != "regressed", r
    assert r.session is not None and r.checks[0].status == "passed"


class NeedsRuntime:
    """A family whose facts include ``torch_runtime`` (no shipped one's do)."""

    kind: Kind = "fx_trace_race"
    needs = frozenset({"pyenv", "torch_runtime"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        return []


def rendered(spec: SweepSpec, only: list[str] | None = None) -> tuple[tuple[str, ...], str]:
    """The (argv, stdin digest) ``sweep(…, spec, only)`` sends."""
    plan = build_plan(spec, only)
    return ReadOnlyCommand.of(plan.argv, render(plan), "").key


def test_a_health_check_registers_the_sweep_and_what_its_families_may_ask_for() -> None:
    """The shipped families need nothing a full sweep leaves out: its bundle alone is
    registered. A family that needs torch_runtime (run only when named) adds that
    probe's own bundle, unless the profile runs it in every sweep or turns it off."""
    spec = SweepSpec(interpreter=sys.executable, workspace="/w")
    (sweep,) = probe_bundles(spec, default_rules())
    assert sweep.key == rendered(spec)
    assert sweep.why == (
        "probe bundle (host,pyenv,gpus,processes,live,applies,layout,caches,checksums,"
        "script_patches,checkpoints,trainlog,stdoutlog,flight_recorder,torch_trace,dataset,"
        "torch_source,integrity,"
        "interpreter)"
    )
    rules = [*default_rules(), NeedsRuntime()]
    full, runtime = probe_bundles(spec, rules)
    assert (full.key, runtime.key) == (rendered(spec), rendered(spec, ["torch_runtime"]))
    assert runtime.why == "probe bundle (torch_runtime)"
    for torch_import in (True, False):
        fixed = spec.model_copy(update={"torch_import": torch_import})
        assert [c.key for c in probe_bundles(fixed, rules)] == [rendered(fixed)]


def gather_local_spec(spec: SweepSpec) -> list[Fact]:
    return SweepGatherer(LocalTransport(), spec, Ledger())(None)


def test_missing_baseline_is_could_not_check_for_that_target_only() -> None:
    """A target whose baseline was never taken is not checked (exit 2), and says why."""
    run = run_health([target("a", baseline="never-taken")], ssh=SSHOptions(), limit=30)
    assert run.exit_code == 2
    assert run.targets[0].status == "could_not_check"
    assert "no baseline named 'never-taken'" in run.targets[0].reason


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "json", "--format", "md"], "2 formats need --out DIR"),
        (["--format", "xml"], "unknown --format 'xml'"),
        (["-b", "=g"], "bad --baseline '=g': expected NAME or TARGET=NAME"),
        (["-b", "g", "--jobs", "0"], "--jobs must be at least 1"),
    ],
)
def test_cli_usage_errors_exit_2_on_one_line(
    args: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """In-process through the console script's entry point (``main``), which maps errors
    to exit codes: nothing runs, one line on stderr, exit 2."""
    monkeypatch.setattr(sys, "argv", ["dflash-doctor", "health", "--target", "local", *args])
    saved = structlog.get_config()  # main() configures logging onto capsys's stderr
    try:
        with pytest.raises(SystemExit) as info:
            main()
    finally:
        structlog.configure(**saved)
    assert info.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("dflash-doctor: error: "), lines
    assert message in lines[0]


def test_a_refused_command_is_written_to_the_transcript(tmp_path: Path) -> None:
    """The guard a health check holds refuses an `rm` and the session's transcript keeps
    the attempt (argv and stdin digest), so a bug that tried is on record."""
    victim = tmp_path / "keep"
    victim.write_text("x")
    t = HealthTarget(label="local", uri="local", spec=SweepSpec(), baseline="good")
    session = Session.create(SessionConfig(command="health", target="local", mode="health"))
    guard = health_check.guarded(session, t, default_rules())
    with pytest.raises(ReadOnlyViolation):
        guard.run(["rm", "-f", str(victim)])
    session.close()
    assert victim.exists()
    _header, events = read_transcript(session.transcript_path)
    refused = [e for e in events if e["type"] == "refused"]
    assert refused == [
        {**refused[0], "type": "refused", "argv": ["rm", "-f", str(victim)], "stdin_digest": ""}
    ]
    assert not [e for e in events if e["type"] == "command"]


def test_a_target_whose_interpreter_is_missing_is_could_not_check(tmp_path: Path) -> None:
    """The connection works but the bundle cannot start: no probe answered, so the target
    is not checked, and the reason says what the sweep met."""
    baseline_store().save("empty", "local", [])
    spec = SweepSpec(interpreter=str(tmp_path / "no-such-python"), torch_import=False)
    t = HealthTarget(label="local", uri="local", spec=spec, baseline="empty")
    r = check_target(t, ssh=SSHOptions(), deadline=time.monotonic() + 60)
    assert r.status == "could_not_check"
    assert r.reason.startswith("probe sweep: no probe answered: bundle_failed: interpreter")
    assert "not found on the target (exit 127)" in r.reason
    assert r.checks[0].status == "error"


def test_a_check_that_raises_is_reported_not_waited_for() -> None:
    """A check that raises makes its target 'could not check' with the error as the reason, at once;
    the other targets are still checked."""

    def check(t: HealthTarget, deadline: float, cancel: Cancel) -> TargetResult:
        if t.label == "bad":
            raise RuntimeError("boom")
        return result(t.label, "healthy")

    started = time.monotonic()
    results = run_fleet([target("bad"), target("ok")], check, jobs=1, limit=30)
    assert time.monotonic() - started < 5
    assert results[0].status == "could_not_check"
    assert results[0].reason == "internal error: RuntimeError: boom"
    assert results[1].status == "healthy"
