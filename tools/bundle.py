"""The one-round-trip sweep: every probe for a target in one command.

The doctor sends one self-contained Python program (the *bundle*: the probe modules'
own sources, stdlib only, Python >= 3.8) on stdin to ``<interpreter> -B -`` on the
target, through whatever transport and hops reach it; ``-B`` and the bundle's bootstrap
keep it from writing bytecode caches there (``tools.interpreter.PYTHON_FLAGS``). On the
target each probe runs in a forked child with its own time limit
(``tools.probes._runner``); the bundle prints one JSON document; this module turns it
into typed results. A probe that fails is a result that says why — it never loses the
others. A transport that fails raises (the ``TransportError`` family), as everywhere in
``tools``.

Public API::

    spec = SweepSpec.for_workspace("/workspace")          # or TargetProfile.sweep_spec()
    result = sweep(transport, spec, only=["gpus", "trainlog"], timeout=None)
    result["gpus"].value                                  # JSON value, see the probe's VALUE
    result.failed()                                       # the ProbeResults with an error

    plan = build_plan(spec, only=None)                    # what would run, with params
    script = render(plan)                                 # the bytes sent on stdin
    parse_output(command_result, plan)                    # CommandResult -> SweepResult

``SweepResult.results`` holds one ``ProbeResult`` per planned probe, in ``PROBES`` order.
A probe with nothing to look at (no train log in the spec, say) is still a result:
``ok=False``, error kind ``skipped``, and it never travels to the target. A probe sent
only the workspace that finds nothing there to read (no console log, say) is skipped
the same way, from the target, saying what it looked for.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import math
import threading
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError

from tools.errors import UsageError
from tools.interpreter import bundle_argv, discovery_argv, shown
from tools.log import get_logger
from tools.probes import ON_DEMAND, PROBES, module
from tools.probes._runner import FORMAT, SENTINEL
from tools.transport.base import CommandResult, Transport, digest

__all__ = [
    "PROBES",
    "Plan",
    "PlannedProbe",
    "ProbeError",
    "ProbeResult",
    "SweepResult",
    "SweepSpec",
    "build_plan",
    "parse_output",
    "render",
    "sweep",
]

log = get_logger(__name__)

PACKAGE = "_dflash_doctor_bundle"
_TOOLS = Path(__file__).resolve().parent
_SLACK = 30.0  # seconds the transport waits beyond the bundle's own worst case

INCIDENT_METADATA = ("metadata.json", "meta.json", "checkpoint_meta.json", "trainer_state.json")


class SweepSpec(BaseModel):
    """What to look at on one target. Paths are the target's; globs are expanded there."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    interpreter: str = Field("python3", description="the target's Python, e.g. a venv's")
    # Choose the trainer's Python on the target (tools.interpreter); ``interpreter`` is
    # then the fallback. Off: ``interpreter`` is used as given, for ``interpreter_reason``.
    discover_interpreter: bool = False
    interpreter_reason: str = "set in the sweep spec"
    launch: str | None = Field(None, description="the trainer's launch file or command")
    workspace: str | None = None
    checkpoints: str | None = None
    # A regex with named groups ``step``/``epoch`` for checkpoint names the built-in
    # forms (tools.probes._steps) do not know.
    checkpoint_pattern: str | None = None
    train_log: str | None = None
    stdout_log: str | None = None
    scripts: tuple[str, ...] = ()
    dataset: tuple[str, ...] = ()
    inductor_cache: str | None = None
    triton_cache: str | None = None
    extra_caches: tuple[str, ...] = ()
    process_match: tuple[str, ...] = ("train",)
    log_fields: dict[str, str | list[str]] = Field(default_factory=dict)
    throughput_unit: Literal["tok/s", "ktok/s", "mtok/s"] | None = None
    metadata_names: tuple[str, ...] = INCIDENT_METADATA
    # Canonical quantity -> the dotted key a trainer's checkpoint records it under
    # ({"torch": "env.pt_ver"}); tried before the built-in names (tools.probes._canonical).
    metadata_keys: dict[str, str] = Field(default_factory=dict)
    # Saved environment files (pip freeze, conda export, collect_env): what was installed
    # when the run worked, read as a baseline where checkpoints record no versions.
    env_files: tuple[str, ...] = ()
    deep_checkpoint_check: bool = False
    integrity_packages: tuple[str, ...] = ("torch", "triton")
    integrity_mode: Literal["py", "all"] = "py"
    extra_signatures: tuple[dict[str, str | list[str]], ...] = ()
    text_field: str | None = None
    # None: torch_runtime (which imports torch on the target) runs only when named.
    torch_import: bool | None = None
    cuda_init: bool = False
    max_scan_bytes: int = Field(512 << 20, gt=0)
    timeouts: dict[str, float] = Field(default_factory=dict)
    parallel: int = Field(4, ge=1, le=32)

    @classmethod
    def for_workspace(cls, workspace: str, **overrides: Any) -> SweepSpec:
        """A sweep of ``workspace`` whose layout is found on the target: the probes that
        read checkpoints, logs, scripts and prompts are given the workspace and look
        (``tools.probes.layout``) in the same round trip. Paths in ``overrides`` (a
        profile's, a CLI's) win; no compile cache is assumed."""
        ws = workspace.rstrip("/") or "/"
        fields: dict[str, Any] = {"workspace": ws}
        fields.update(overrides)
        return cls(**fields)


class PlannedProbe(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    params: dict[str, JsonValue] | None  # None: nothing configured to look at: skipped
    timeout: float
    reason: str = ""  # why it is skipped


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True)

    interpreter: str
    probes: tuple[PlannedProbe, ...]
    parallel: int
    # The discovery preamble's command (tools.interpreter), or None: ``interpreter -B -``.
    discovery: tuple[str, ...] | None = None

    @property
    def argv(self) -> tuple[str, ...]:
        return self.discovery or bundle_argv(self.interpreter)

    def runnable(self) -> list[PlannedProbe]:
        return [p for p in self.probes if p.params is not None]

    def budget(self) -> float:
        """Worst-case seconds the bundle can take: waves of ``parallel`` probes."""
        run = sorted((p.timeout for p in self.runnable()), reverse=True)
        if not run:
            return _SLACK
        waves = math.ceil(len(run) / self.parallel)
        return sum(run[i * self.parallel] for i in range(waves)) + _SLACK


class ProbeError(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: str
    message: str
    path: str | None = None

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


class ProbeResult(BaseModel):
    """One probe's outcome on one target: what the ledger turns into a Fact."""

    model_config = ConfigDict(frozen=True)

    probe: str
    target: str
    argv: tuple[str, ...]  # the command that carried it: the bundle's ``<python> -B -``
    rc: int | None  # the bundle's exit status (None: never sent)
    ok: bool
    value: JsonValue = None
    error: ProbeError | None = None
    duration: float = 0.0
    commands: tuple[tuple[str, ...], ...] = ()  # what the probe ran there (nvidia-smi …)
    params: dict[str, JsonValue] | None = None
    stdin_digest: str = ""
    stdout_digest: str = ""
    stderr_digest: str = ""

    @property
    def error_text(self) -> str | None:
        return None if self.error is None else str(self.error)


class SweepResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    target: str
    argv: tuple[str, ...]
    rc: int | None
    duration: float  # the round trip as the doctor saw it
    bundle_duration: float | None = None  # as the bundle measured itself
    python: dict[str, JsonValue] | None = None  # the target interpreter that ran it
    stdin_digest: str = ""
    stdout_digest: str = ""
    stderr_digest: str = ""
    stderr_tail: str = ""
    results: tuple[ProbeResult, ...]

    def __getitem__(self, name: str) -> ProbeResult:
        for r in self.results:
            if r.probe == name:
                return r
        raise KeyError(name)

    def get(self, name: str) -> ProbeResult | None:
        try:
            return self[name]
        except KeyError:
            return None

    @property
    def names(self) -> list[str]:
        return [r.probe for r in self.results]

    @property
    def ok(self) -> bool:
        return all(
            r.ok or (r.error is not None and r.error.kind == "skipped") for r in self.results
        )

    def failed(self) -> list[ProbeResult]:
        return [r for r in self.results if not r.ok]


# -- planning ---------------------------------------------------------------------------


def _params(name: str, spec: SweepSpec) -> tuple[dict[str, Any] | None, str]:
    """The parameters ``name`` gets from ``spec``, or None and why it has nothing to do."""
    scan = {"max_scan": spec.max_scan_bytes}
    match name:
        case "host":
            paths = [p for p in (spec.workspace, spec.checkpoints) if p]
            return {"paths": paths}, ""
        case "pyenv" | "gpus" | "torch_source":
            return {}, ""
        case "interpreter":
            if spec.discover_interpreter:
                return {}, ""
            return {"configured": spec.interpreter, "because": spec.interpreter_reason}, ""
        case "processes":
            return {"match": list(spec.process_match)}, ""
        case "layout" | "applies":
            if not spec.workspace:
                return None, "no workspace configured"
            return {"workspace": spec.workspace}, ""
        case "caches":
            # Where the trainer itself points its caches: its processes' environment and
            # its launch files (the profile's, the workspace's), besides the profile's.
            launch = [spec.launch] if spec.launch and _is_launch_file(spec.launch) else []
            return {
                "inductor": spec.inductor_cache,
                "triton": spec.triton_cache,
                "extra": list(spec.extra_caches),
                "workspace": spec.workspace,
                "match": list(_trainer_patterns(spec)),
                "launch_files": launch,
            }, ""
        case "checksums" | "script_patches":
            if not spec.scripts and not spec.workspace:
                return None, "no scripts or workspace configured"
            return _where("paths", list(spec.scripts), spec), ""
        case "checkpoints":
            if not spec.checkpoints and not spec.workspace:
                return None, "no checkpoint directory or workspace configured"
            return {
                **_where("path", spec.checkpoints, spec),
                "pattern": spec.checkpoint_pattern,
                "metadata_names": list(spec.metadata_names),
                "metadata_keys": dict(spec.metadata_keys),
                "env_files": list(spec.env_files),
                # Where the layout looks for saved environment files the profile omits.
                "workspace": spec.workspace,
                "deep": spec.deep_checkpoint_check,
            }, ""
        case "trainlog":
            # No log named: the probe takes the workspace's best candidate holding steps.
            where = {"path": spec.train_log} if spec.train_log else {"workspace": spec.workspace}
            if not spec.train_log and not spec.workspace:
                return None, "no train log or workspace configured"
            return {
                **where,
                "fields": dict(spec.log_fields),
                "throughput_unit": spec.throughput_unit,
                **scan,
            }, ""
        case "stdoutlog":
            if not spec.stdout_log and not spec.workspace:
                return None, "no stdout log or workspace configured"
            return {
                **_where("path", spec.stdout_log, spec),
                "extra_signatures": [dict(s) for s in spec.extra_signatures],
                **scan,
            }, ""
        case "dataset":
            if not spec.dataset and not spec.workspace:
                return None, "no dataset or workspace configured"
            return {**_where("paths", list(spec.dataset), spec), "text_field": spec.text_field}, ""
        case "torch_runtime":
            if spec.torch_import is False:
                return None, "torch_import is off in the profile"
            return {"cuda": spec.cuda_init}, ""
        case "integrity":
            return {"packages": list(spec.integrity_packages), "mode": spec.integrity_mode}, ""
    raise AssertionError(f"no parameters for probe {name}")  # PROBES and this table agree


def _where(key: str, given: str | list[str] | None, spec: SweepSpec) -> dict[str, Any]:
    """What a probe reads: the paths the spec names, else the workspace to look in (the
    probe asks ``tools.probes.layout`` there, in the same round trip)."""
    return {key: given} if given else {"workspace": spec.workspace}


def _is_launch_file(launch: str) -> bool:
    """A launch *file* (one path) rather than a command line."""
    return " " not in launch.strip() and launch.startswith("/")


def _trainer_patterns(spec: SweepSpec) -> tuple[str, ...]:
    """What picks the trainer's process: the profile's patterns, or the default ones when
    a workspace narrows them down; the default ``train`` alone would pick any process on
    the machine whose command line holds the word."""
    default = SweepSpec.model_fields["process_match"].default
    return spec.process_match if spec.workspace or spec.process_match != default else ()


def build_plan(spec: SweepSpec, only: Iterable[str] | None = None) -> Plan:
    """The probes to run and their parameters; ``only`` names a subset (UsageError for a
    name that is not a probe)."""
    wanted = list(PROBES)
    if only is not None:
        names = [n.strip() for n in only if n.strip()]
        unknown = [n for n in names if n not in PROBES]
        if unknown:
            raise UsageError(f"unknown probe(s) {', '.join(unknown)}; probes: {', '.join(PROBES)}")
        wanted = [n for n in PROBES if n in names]
    planned = []
    for name in wanted:
        params, reason = _params(name, spec)
        if name in ON_DEMAND and only is None and spec.torch_import is None and params:
            params, reason = (
                None,
                (
                    "imports torch on the target (seconds); runs when asked for by name "
                    "(--only torch_runtime, the menu's probe again) or with torch_import = true"
                ),
            )
        timeout = float(spec.timeouts.get(name, module(name).TIMEOUT))
        planned.append(PlannedProbe(name=name, params=params, timeout=timeout, reason=reason))
    return Plan(
        interpreter=spec.interpreter,
        probes=tuple(planned),
        parallel=spec.parallel,
        discovery=_discovery(spec),
    )


def _discovery(spec: SweepSpec) -> tuple[str, ...] | None:
    if not spec.discover_interpreter:
        return None
    patterns = _trainer_patterns(spec)
    return discovery_argv(
        spec.interpreter, workspace=spec.workspace, launch=spec.launch, patterns=patterns
    )


# -- the bundle's text ------------------------------------------------------------------


_PARSE_LOCK = threading.Lock()


_BLOCKS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


def _import_froms(tree: ast.Module) -> Iterable[ast.ImportFrom]:
    """The ``from … import`` statements of a module, at any depth of blocks, in
    ``ast.walk``'s order (the bundle's module order, so its bytes, follow from it). Only
    blocks of statements are walked: an import is a statement, and skipping every
    expression makes this several times cheaper than ``ast.walk``."""
    queue: deque[ast.AST] = deque([tree])
    while queue:
        node = queue.popleft()
        if isinstance(node, ast.ImportFrom):
            yield node
        for field in node._fields:
            block = getattr(node, field, None) if field in _BLOCKS else None
            if isinstance(block, list):
                queue.extend(block)


@functools.cache
def _relative_imports(name: str) -> tuple[str, ...]:
    """Bundle modules ``name`` (e.g. ``probes.trainlog``) imports relatively. Cached:
    a render asks for each module's imports once per probe that needs it, and the
    sources do not change while the process runs."""
    package = name.rsplit(".", 1)[0].split(".")
    found = []
    # CPython 3.11's ast.parse is not safe in two threads at once (gh-106905: "AST
    # constructor recursion depth mismatch"); health renders bundles from several threads.
    with _PARSE_LOCK:
        tree = ast.parse(_source(name))
    for node in _import_froms(tree):
        if node.level:
            base = package[: len(package) - (node.level - 1)]
            stem = [*base, *(node.module.split(".") if node.module else [])]
            for alias in node.names:
                candidate = ".".join([*stem, alias.name])
                if _TOOLS.joinpath(*candidate.split(".")).with_suffix(".py").is_file():
                    found.append(candidate)
                else:
                    found.append(".".join(stem))
    return tuple(found)


@functools.cache
def _source(name: str) -> str:
    return _TOOLS.joinpath(*name.split(".")).with_suffix(".py").read_text(encoding="utf-8")


def _modules(roots: Iterable[str]) -> list[str]:
    """``roots`` and everything they import, dependencies first."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in order or name in visiting:
            return
        visiting.add(name)
        for dep in _relative_imports(name):
            visit(dep)
        visiting.discard(name)
        order.append(name)

    for root in roots:
        visit(root)
    return order


_BOOTSTRAP = """\
# dflash-doctor probe bundle (format {format}). Read-only: it stats and reads files and
# /proc and runs read-only commands (nvidia-smi); it writes nothing. The probes'
# sources follow; each is run in a forked child with a time limit.
import os, sys
# The command line's -B kept the start-up from writing bytecode; these keep the rest of
# this run (a bundle sent without -B too) and any Python a probe starts from writing it.
sys.dont_write_bytecode = True
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
# The working directory must not shadow the stdlib (a json.py there, say).
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
if sys.version_info < (3, 8):
    sys.stdout.write("\\n{sentinel}" + '{{"format": {format}, "fatal": "python %d.%d is older '
                     'than 3.8"}}' % sys.version_info[:2] + "\\n")
    sys.exit(0)
import json, traceback, types
PACKAGE = {package!r}
SOURCES = json.loads({sources!r})
PLAN = json.loads({plan!r})
BROKEN = {{}}
root = types.ModuleType(PACKAGE)
root.__path__ = []
sys.modules[PACKAGE] = root
for name, source in SOURCES:
    parts = name.split(".")
    parent = PACKAGE
    for part in parts[:-1]:
        sub = parent + "." + part
        if sub not in sys.modules:
            pkg = types.ModuleType(sub)
            pkg.__path__ = []
            sys.modules[sub] = pkg
            setattr(sys.modules[parent], part, pkg)
        parent = sub
    mod = types.ModuleType(PACKAGE + "." + name)
    mod.__package__ = parent
    mod.__file__ = "<bundle>/" + name.replace(".", "/") + ".py"
    sys.modules[mod.__name__] = mod
    try:
        exec(compile(source, mod.__file__, "exec"), mod.__dict__)
    except BaseException:
        BROKEN[name] = traceback.format_exc(limit=-2)[-600:]
        continue
    setattr(sys.modules[parent], parts[-1], mod)
if "probes._runner" in BROKEN:
    sys.stdout.write("\\n{sentinel}" + json.dumps({{"format": {format},
                     "fatal": BROKEN["probes._runner"]}}) + "\\n")
    sys.exit(0)
sys.modules[PACKAGE + ".probes._runner"].main(PLAN, PACKAGE, BROKEN)
"""


def render(plan: Plan) -> bytes:
    """The program sent to ``<interpreter> -B -``: bootstrap, sources, plan."""
    runnable = plan.runnable()
    roots = ["probes._runner", *(f"probes.{p.name}" for p in runnable)]
    names = _modules(roots)
    entries = []
    for p in runnable:
        needs = _modules([f"probes.{p.name}"])
        entries.append(
            {
                "name": p.name,
                "module": f"probes.{p.name}",
                "params": p.params,
                "timeout": p.timeout,
                "needs": needs,
            }
        )
    sources = json.dumps([[n, _source(n)] for n in names])
    wire_plan = json.dumps({"probes": entries, "parallel": plan.parallel})
    text = _BOOTSTRAP.format(
        format=FORMAT, sentinel=SENTINEL, package=PACKAGE, sources=sources, plan=wire_plan
    )
    return text.encode()


# -- results --------------------------------------------------------------------------


@functools.cache
def _adapter(name: str) -> TypeAdapter[Any]:
    return TypeAdapter(module(name).VALUE)


def _problems(name: str, value: Any) -> str | None:
    try:
        _adapter(name).validate_python(value)
    except ValidationError as exc:
        errors = exc.errors()[:3]
        return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors)
    return None


def _document(stdout: bytes) -> dict[str, Any] | None:
    """The bundle's document: the last stdout line that starts with the sentinel."""
    marker = SENTINEL.encode()
    for line in reversed(stdout.splitlines()):
        if line.startswith(marker):
            try:
                doc = json.loads(line[len(marker) :])
            except ValueError:
                return None
            return doc if isinstance(doc, dict) else None
    return None


def _tail(data: bytes, n: int = 2000) -> str:
    return data[-n:].decode("utf-8", "replace")


def parse_output(result: CommandResult, plan: Plan) -> SweepResult:
    """Turn the bundle's CommandResult into a SweepResult (also used on replays)."""
    common: dict[str, Any] = {
        "target": result.target,
        "argv": shown(result.argv),
        "rc": result.rc,
        "stdin_digest": result.stdin_digest,
        "stdout_digest": digest(result.stdout),
        "stderr_digest": digest(result.stderr),
    }
    doc = _document(result.stdout)
    fatal: str | None = None
    if doc is None:
        if result.rc == 127 and plan.discovery is not None:
            fatal = (
                "no Python found on the target: no trainer process, workspace environment, "
                f"launch file or PATH entry offered one, and {plan.interpreter!r} is not "
                "there (exit 127)"
            )
        elif result.rc == 127:
            fatal = f"interpreter {plan.interpreter!r} not found on the target (exit 127)"
        else:
            why = _tail(result.stderr, 600).strip() or _tail(result.stdout, 600).strip()
            fatal = f"the bundle printed no result (exit {result.rc}): {why or 'no output'}"
    elif doc.get("format") != FORMAT:
        fatal = f"bundle answered in format {doc.get('format')!r}, expected {FORMAT}"
    elif "fatal" in doc:
        fatal = f"the bundle could not start: {doc['fatal']}"
    by_name: dict[str, Any] = {}
    if doc is not None and fatal is None:
        for r in doc.get("results", []):
            if isinstance(r, dict) and "probe" in r:
                by_name[r["probe"]] = r
    results = []
    for planned in plan.probes:
        base = {**common, "probe": planned.name, "params": planned.params}
        if planned.params is None:
            results.append(
                ProbeResult(
                    **{**base, "rc": None},
                    ok=False,
                    error=ProbeError(kind="skipped", message=planned.reason),
                )
            )
            continue
        if fatal is not None:
            results.append(
                ProbeResult(**base, ok=False, error=ProbeError(kind="bundle_failed", message=fatal))
            )
            continue
        results.append(_probe_result(base, planned.name, by_name.get(planned.name)))
    return SweepResult(
        **common,
        duration=result.duration,
        bundle_duration=doc.get("duration") if doc else None,
        python=doc.get("python") if doc else None,
        stderr_tail=_tail(result.stderr),
        results=tuple(results),
    )


def _probe_result(base: dict[str, Any], name: str, raw: Any) -> ProbeResult:
    if not isinstance(raw, dict):
        return ProbeResult(
            **base,
            ok=False,
            error=ProbeError(kind="malformed", message="no result in the bundle's answer"),
        )
    commands = tuple(
        tuple(str(a) for a in c.get("argv", ()))
        for c in raw.get("commands") or ()
        if isinstance(c, dict)
    )
    err = raw.get("error")
    error = None
    if isinstance(err, dict):
        error = ProbeError(
            kind=str(err.get("kind", "error")),
            message=str(err.get("message", "")),
            path=err.get("path"),
        )
    ok = bool(raw.get("ok")) and error is None
    value = raw.get("value")
    if ok:
        problem = _problems(name, value)
        if problem is not None:
            ok = False
            error = ProbeError(kind="malformed", message=f"value not as declared: {problem}")
    return ProbeResult(
        **base,
        ok=ok,
        value=value,
        error=error,
        duration=float(raw.get("duration") or 0.0),
        commands=commands,
    )


def sweep(
    transport: Transport,
    spec: SweepSpec,
    only: Iterable[str] | None = None,
    timeout: float | None = None,
) -> SweepResult:
    """Run the probes of ``spec`` (or the ``only`` subset) on ``transport`` in one
    round trip. ``timeout`` defaults to the plan's worst case; a transport failure
    (unreachable host, the whole command timed out) raises a ``TransportError``."""
    plan = build_plan(spec, only)
    bound = log.bind(target=getattr(transport, "name", "?"))
    if not plan.runnable():
        started = time.monotonic()
        empty = CommandResult(plan.argv, 0, b"", b"", 0.0, getattr(transport, "name", "?"))
        out = parse_output(empty, plan)
        bound.info("sweep_skipped", probes=len(plan.probes), duration=time.monotonic() - started)
        return out
    script = render(plan)
    bound.info("sweep_started", probes=[p.name for p in plan.runnable()], bytes=len(script))
    result = transport.run(plan.argv, stdin=script, timeout=timeout or plan.budget())
    out = parse_output(result, plan)
    bound.info(
        "sweep_finished",
        rc=result.rc,
        duration=round(result.duration, 3),
        failed=[r.probe for r in out.failed() if r.error is not None and r.error.kind != "skipped"],
    )
    return out


def spec_digest(spec: SweepSpec) -> str:
    """A short, stable id for a spec (for caches and transcripts)."""
    canonical = json.dumps(spec.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]
