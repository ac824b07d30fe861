"""The one-round-trip sweep: plan, bundle, one command, typed results."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pydantic import JsonValue
from structlog.testing import capture_logs

from tests.lib.need import need
from tests.lib.probe_workspace import make_workspace
from tools.errors import CommandTimeout, UsageError
from tools.probes._runner import SENTINEL
from tools.sweep import (
    PROBES,
    SweepSpec,
    build_plan,
    parse_output,
    render,
    sweep,
)
from tools.sweep import bundle as bundle_module
from tools.transport.base import CommandResult
from tools.transport.local import LocalTransport

TOOLS = Path(__file__).resolve().parents[2] / "tools"
PLAYBOOKS = TOOLS.parent / "playbooks"
# Every module the bundle may carry, in subpackages too (parsers/_trainlog/), the helpers
# beside them it carries (figures.py), and the programs a fix sends to the target as they
# are (the operations, the start-up hook).
SHIPPED = sorted(
    [
        *(
            p
            for p in TOOLS.rglob("*.py")
            if p.relative_to(TOOLS).parts[0] in ("probes", "parsers") and p.name != "__init__.py"
        ),
        TOOLS / "figures.py",
        PLAYBOOKS / "_remote_ops.py",
        PLAYBOOKS / "_sitecustomize.py",
    ]
)


def at(value: JsonValue, *path: str | int) -> JsonValue:
    """The part of a probe's JSON value at ``path``; a value of another shape fails."""
    for part in path:
        if isinstance(part, int):
            assert isinstance(value, list), (path, value)
            value = value[part]
        else:
            assert isinstance(value, dict), (path, value)
            value = value[part]
    return value


class Counting:
    """A transport that counts round trips and can rewrite what comes back."""

    name = "counting"

    def __init__(self, inner: LocalTransport | None = None, prefix: bytes = b"") -> None:
        self.inner = inner or LocalTransport()
        self.calls: list[tuple[str, ...]] = []
        self.timeouts: list[float | None] = []
        self.prefix = prefix

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
    ) -> CommandResult:
        self.calls.append(tuple(argv))
        self.timeouts.append(timeout)
        r = self.inner.run(argv, stdin=stdin, timeout=timeout)
        return CommandResult(
            r.argv, r.rc, self.prefix + r.stdout, r.stderr, r.duration, self.name, r.stdin_digest
        )

    def close(self) -> None:
        pass


def test_incident_workspace_in_one_round_trip(tmp_path: Path) -> None:
    """Every probe for the incident's layout, one command, one result per probe."""
    need(
        importlib.util.find_spec("torch") is not None,
        "torch",
        "install the [torch] extra (make test does)",
    )
    ws = make_workspace(tmp_path)
    t = Counting()
    spec = SweepSpec.for_workspace(str(ws), interpreter=sys.executable, torch_import=True)
    result = sweep(t, spec)
    assert t.calls == [(sys.executable, "-B", "-")]
    assert result.names == list(PROBES)
    failed = {r.probe: r.error_text for r in result.failed()}
    assert failed == {}, failed
    assert at(result["checkpoints"].value, "step_numbers") == [600, 690]
    fx = at(result["stdoutlog"].value, "signatures", "fx_nested_trace")
    assert at(fx, "count") == 1 and at(fx, "first_line") == 6
    drafter = at(result["trainlog"].value, "groups", "role=drafter,device=cuda:2")
    assert at(drafter, "throughput", "median") == 4266.0
    patches = at(result["script_patches"].value, "files", 0, "patches")
    assert at(patches, 0, "target") == "st.is_fx_symbolic_tracing"
    runtime = result["torch_runtime"].value
    assert at(runtime, "is_fx_symbolic_tracing", "is_torch_own") is True
    assert at(result["gpus"].value, "available") is False
    assert all(r.rc == 0 and r.stdin_digest == result.stdin_digest for r in result.results)
    assert result.python is not None and result.python["executable"] == sys.executable


def test_torch_runtime_runs_only_when_asked_for(tmp_path: Path) -> None:
    """Importing torch on the target costs seconds and no rule reads it: a default sweep
    lists it as not looked at, with why; named (or with torch_import), it runs."""
    spec = SweepSpec(interpreter=sys.executable, workspace=str(tmp_path))
    default = build_plan(spec)
    runtime = next(p for p in default.probes if p.name == "torch_runtime")
    assert runtime.params is None and "imports torch on the target" in runtime.reason
    assert all(p.params is not None for p in default.probes if p.name == "torch_source")
    named = build_plan(spec, ["torch_runtime"])
    assert [p.name for p in named.probes] == ["torch_runtime"] and named.probes[0].params
    always = build_plan(spec.model_copy(update={"torch_import": True}))
    assert next(p for p in always.probes if p.name == "torch_runtime").params is not None
    never = build_plan(spec.model_copy(update={"torch_import": False}), ["torch_runtime"])
    assert never.probes[0].params is None and "off in the profile" in never.probes[0].reason


def test_probe_time_limit_is_per_probe(tmp_path: Path) -> None:
    """A probe past its limit is killed and reported; the others are not held up."""
    spec = SweepSpec(
        interpreter=sys.executable, timeouts={"torch_runtime": 0.3}, workspace=str(tmp_path)
    )
    result = sweep(LocalTransport(), spec, only=["torch_runtime", "host"])
    assert result["torch_runtime"].error is not None
    assert result["torch_runtime"].error.kind == "timeout"
    assert result["host"].ok


def test_unconfigured_probes_are_skipped_without_a_trip() -> None:
    """No paths in the spec: those probes are 'skipped' results and never travel."""
    t = Counting()
    result = sweep(t, SweepSpec(interpreter=sys.executable), only=["trainlog", "checkpoints"])
    assert t.calls == []
    assert [r.error.kind for r in result.results if r.error] == ["skipped", "skipped"]
    assert result.ok


def test_unknown_probe_is_a_usage_error() -> None:
    """A misspelt probe name among those asked for is refused as a usage error when the plan is
    built."""
    with pytest.raises(UsageError, match="unknown probe"):
        build_plan(SweepSpec(), only=["gpus", "gpu"])


def test_missing_interpreter_fails_every_probe_with_the_reason() -> None:
    """An interpreter that does not exist on the target fails every probe asked for as bundle_failed
    (exit 127), each saying it was not found."""
    result = sweep(
        LocalTransport(), SweepSpec(interpreter="/nonexistent/python3"), only=["host", "gpus"]
    )
    assert result.rc == 127
    assert {r.error.kind for r in result.results if r.error} == {"bundle_failed"}
    assert "not found" in result.results[0].error_text  # type: ignore[operator]


def test_banner_before_the_document_is_ignored(tmp_path: Path) -> None:
    """A login banner or a chatty hop in front of the document does no harm."""
    t = Counting(prefix=b"Welcome to gpu-host!\n" + SENTINEL.encode() + b"not json\n")
    result = sweep(t, SweepSpec(interpreter=sys.executable, workspace=str(tmp_path)), only=["host"])
    assert result["host"].ok


def test_transport_failure_raises() -> None:
    """An unreachable target is an exception, as everywhere in tools/."""

    class Down(Counting):
        def run(
            self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
        ) -> CommandResult:
            raise CommandTimeout("no answer", target="down")

    with pytest.raises(CommandTimeout):
        sweep(Down(), SweepSpec(), only=["host"])


def test_a_deadline_bounds_the_command_and_the_events_say_what_ran() -> None:
    """With a deadline the command's time limit is what is left of it when that is less
    than the plan's worst case; without one, the worst case. The events name the probes,
    the bundle's size, the exit status and the failed probes."""
    spec = SweepSpec(interpreter=sys.executable)
    budget = build_plan(spec, ["host"]).budget()
    t = Counting()
    with capture_logs() as logs:
        sweep(t, spec, only=["host"], deadline=time.monotonic() + 20)
        sweep(t, spec, only=["host"])
    assert t.timeouts[0] is not None and 15 < t.timeouts[0] <= 20 < budget
    assert t.timeouts[1] == budget
    started = [e for e in logs if e["event"] == "sweep_started"]
    finished = [e for e in logs if e["event"] == "sweep_finished"]
    assert [e["probes"] for e in started] == [["host"], ["host"]]
    assert all(e["target"] == "counting" and e["bytes"] > 0 for e in started)
    assert [(e["rc"], e["failed"]) for e in finished] == [(0, []), (0, [])]


def test_no_time_left_is_a_timeout_before_anything_is_sent() -> None:
    """Less than a second before the deadline: CommandTimeout, and no command ran."""
    t = Counting()
    with pytest.raises(CommandTimeout, match="no time left in the target's time limit"):
        sweep(t, SweepSpec(interpreter=sys.executable), only=["host"], deadline=time.monotonic())
    assert t.calls == []


def test_a_deadline_past_does_not_matter_when_nothing_is_sent() -> None:
    """A sweep with nothing to run (no paths configured) sends nothing, so has no time
    limit to miss: its skipped results come back."""
    t = Counting()
    result = sweep(t, SweepSpec(), only=["trainlog"], deadline=time.monotonic() - 5)
    assert t.calls == [] and result["trainlog"].error is not None
    assert result["trainlog"].error.kind == "skipped"


def test_bundles_render_in_threads_parsing_one_module_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CPython 3.11's ast.parse can fail when two threads parse at once (gh-106905), and
    rendering a bundle parses the probes' sources; health renders from one thread per
    target. From a cold cache, eight threads rendering at once parse one module at a
    time, each module once, and render the bytes one thread renders."""
    plan = build_plan(SweepSpec.for_workspace("/workspace"))
    expected = render(plan)
    lock = threading.Lock()
    inside, peak = 0, 0
    parsed: list[str] = []
    real = bundle_module._tree

    def counting(name: str) -> ast.Module:
        nonlocal inside, peak
        with lock:
            inside += 1
            peak = max(peak, inside)
            parsed.append(name)
        time.sleep(0.005)  # a parse slow enough for another thread to arrive meanwhile
        try:
            return real(name)
        finally:
            with lock:
                inside -= 1

    monkeypatch.setattr(bundle_module, "_IMPORTS", {})
    monkeypatch.setattr(bundle_module, "_tree", counting)
    with ThreadPoolExecutor(8) as pool:
        bundles = list(pool.map(lambda _: render(plan), range(8)))
    assert peak == 1
    assert len(parsed) > 1 and len(parsed) == len(set(parsed))
    assert set(bundles) == {expected}


def fake_result(doc: object, rc: int = 0) -> CommandResult:
    out = SENTINEL.encode() + json.dumps(doc).encode() + b"\n"
    return CommandResult(("python3", "-"), rc, out, b"", 0.1, "fake", "d" * 64)


def test_value_not_in_the_declared_shape_is_malformed() -> None:
    """A value that does not fit its probe's declared shape is a malformed result naming the
    offending field, not a fact."""
    plan = build_plan(SweepSpec(), only=["host"])
    doc = {
        "format": 1,
        "results": [
            {
                "probe": "host",
                "ok": True,
                "value": {"disks": "many"},
                "error": None,
                "duration": 0.0,
                "commands": [],
            }
        ],
    }
    r = parse_output(fake_result(doc), plan)["host"]
    assert not r.ok and r.error is not None and r.error.kind == "malformed"
    assert "disks" in r.error.message


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        ({"format": 1, "fatal": "python 3.6 is older than 3.8"}, "older than 3.8"),
        ({"format": 99, "results": []}, "format 99"),
        ({"format": 1, "results": []}, "no result"),
    ],
)
def test_bundle_level_failures(doc: dict[str, object], needle: str) -> None:
    """A failure of the whole bundle (a Python too old, an unknown output format, no result for the
    probe) becomes the probe's error, with the reason in its text."""
    plan = build_plan(SweepSpec(), only=["gpus"])
    r = parse_output(fake_result(doc), plan)["gpus"]
    assert not r.ok and needle in (r.error_text or "")


def test_bundle_is_deterministic_stdlib_and_python38() -> None:
    """Same plan, same bytes (stable stdin digests for transcripts); every shipped module
    parses as Python 3.8 and imports only the stdlib or its siblings."""
    plan = build_plan(SweepSpec.for_workspace("/workspace"))
    script = render(plan)
    assert script == render(plan)
    ast.parse(script, feature_version=(3, 8))
    stdlib = set(sys.stdlib_module_names)
    for path in SHIPPED:
        tree = ast.parse(path.read_text(), feature_version=(3, 8))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                # typing_extensions, torch and orjson are optional, guarded where imported.
                optional = ("__future__", "typing_extensions", "torch", "orjson")
                assert top in stdlib or top in optional, (
                    path.name,
                    name,
                )


# Annotations are strings in shipped modules (``from __future__ import annotations``), so
# ``X | None`` there is fine; these are runtime calls that 3.8 lacks.
NEWER_THAN_38 = (
    "removeprefix",
    "removesuffix",
    "zip(strict",
    "functools.cache(",
    "@functools.cache\n",
    "pairwise(",
    "math.lcm",
    "waitstatus_to_exitcode",
)


def test_no_post_38_library_calls_in_shipped_code() -> None:
    """A cheap guard for what ast.parse(feature_version) cannot see: library calls that
    only exist after 3.8 (the thorough check is `vermin -t=3.8-`, see BENCHMARKS.md)."""
    for path in SHIPPED:
        lines = path.read_text().splitlines()
        text = "\n".join(ln for ln in lines if not ln.lstrip().startswith("#"))
        for bad in NEWER_THAN_38:
            assert bad not in text, (path.name, bad)
