"""What would run: the probes a spec gives something to look at, each with its parameters
and time limit, and the argv that runs the bundle with the target's Python."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, JsonValue

from tools.errors import UsageError
from tools.interpreter import bundle_argv, discovery_argv
from tools.probes import ON_DEMAND, PROBES, module
from tools.sweep.spec import SweepSpec

_SLACK = 30.0  # seconds the transport waits beyond the bundle's own worst case


class PlannedProbe(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    params: dict[str, JsonValue] | None  # None: nothing configured to look at: skipped
    timeout: float
    reason: str = ""  # why it is skipped


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

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


# What a probe is given: its parameters, or None and why it has nothing to do.
_Params = tuple[dict[str, Any] | None, str]


def _params(name: str, spec: SweepSpec) -> _Params:
    """The parameters ``name`` gets from ``spec``, or None and why it has nothing to do."""
    params_of = _PARAMS.get(name)
    if params_of is None:
        raise AssertionError(f"no parameters for probe {name}")  # PROBES and _PARAMS agree
    return params_of(spec)


def _no_params(spec: SweepSpec) -> _Params:
    return {}, ""


def _host(spec: SweepSpec) -> _Params:
    paths = [p for p in (spec.workspace, spec.checkpoints) if p]
    return {"paths": paths}, ""


def _interpreter(spec: SweepSpec) -> _Params:
    if spec.discover_interpreter:
        return {}, ""
    return {"configured": spec.interpreter, "because": spec.interpreter_reason}, ""


def _processes(spec: SweepSpec) -> _Params:
    found: dict[str, Any] = {"match": list(spec.process_match)}
    if spec.workspace:
        found["workspace"] = spec.workspace
    return found, ""


def _live(spec: SweepSpec) -> _Params:
    live: dict[str, Any] = {"match": list(_trainer_patterns(spec))}
    if spec.workspace:
        live["workspace"] = spec.workspace
    if spec.py_spy:
        live["py_spy"] = spec.py_spy
    if spec.py_spy_carried:
        live["py_spy_carried"] = True
    return live, ""


def _workspace_only(spec: SweepSpec) -> _Params:
    if not spec.workspace:
        return None, "no workspace configured"
    return {"workspace": spec.workspace}, ""


def _caches(spec: SweepSpec) -> _Params:
    # Where the trainer itself points its caches: its processes' environment and its
    # launch files (the profile's, the workspace's), besides the profile's.
    launch = [file] if (file := _launch_file(spec.launch)) else []
    return {
        "inductor": spec.inductor_cache,
        "triton": spec.triton_cache,
        "extra": list(spec.extra_caches),
        "workspace": spec.workspace,
        "match": list(_trainer_patterns(spec)),
        "launch_files": launch,
    }, ""


def _scripts(spec: SweepSpec) -> _Params:
    if not spec.scripts and not spec.workspace:
        return None, "no scripts or workspace configured"
    return _where("paths", list(spec.scripts), spec), ""


def _checkpoints(spec: SweepSpec) -> _Params:
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


def _trainlog(spec: SweepSpec) -> _Params:
    # No log named: the probe takes the workspace's best candidate holding steps.
    where = {"path": spec.train_log} if spec.train_log else {"workspace": spec.workspace}
    if not spec.train_log and not spec.workspace:
        return None, "no train log or workspace configured"
    return {
        **where,
        "fields": dict(spec.log_fields),
        "throughput_unit": spec.throughput_unit,
        "max_scan": spec.max_scan_bytes,
    }, ""


def _stdoutlog(spec: SweepSpec) -> _Params:
    if not spec.stdout_log and not spec.workspace:
        return None, "no stdout log or workspace configured"
    return {
        **_where("path", spec.stdout_log, spec),
        "extra_signatures": [dict(s) for s in spec.extra_signatures],
        "max_scan": spec.max_scan_bytes,
    }, ""


def _flight_recorder(spec: SweepSpec) -> _Params:
    if not spec.flight_recorder and not spec.workspace:
        return None, "no Flight Recorder dumps or workspace configured"
    return {"paths": list(spec.flight_recorder), "workspace": spec.workspace}, ""


def _torch_trace(spec: SweepSpec) -> _Params:
    if not spec.torch_trace and not spec.workspace:
        return None, "no TORCH_TRACE directory or workspace configured"
    return {"paths": list(spec.torch_trace), "workspace": spec.workspace}, ""


def _dataset(spec: SweepSpec) -> _Params:
    if not spec.dataset and not spec.workspace:
        return None, "no dataset or workspace configured"
    return {**_where("paths", list(spec.dataset), spec), "text_field": spec.text_field}, ""


def _torch_runtime(spec: SweepSpec) -> _Params:
    if spec.torch_import is False:
        return None, "torch_import is off in the profile"
    return {"cuda": spec.cuda_init}, ""


def _integrity(spec: SweepSpec) -> _Params:
    return {"packages": list(spec.integrity_packages), "mode": spec.integrity_mode}, ""


_PARAMS: dict[str, Callable[[SweepSpec], _Params]] = {
    "host": _host,
    "pyenv": _no_params,
    "gpus": _no_params,
    "processes": _processes,
    "live": _live,
    "applies": _workspace_only,
    "layout": _workspace_only,
    "caches": _caches,
    "checksums": _scripts,
    "script_patches": _scripts,
    "checkpoints": _checkpoints,
    "trainlog": _trainlog,
    "stdoutlog": _stdoutlog,
    "flight_recorder": _flight_recorder,
    "torch_trace": _torch_trace,
    "dataset": _dataset,
    "torch_source": _no_params,
    "torch_runtime": _torch_runtime,
    "integrity": _integrity,
    "interpreter": _interpreter,
}


def _where(key: str, given: str | list[str] | None, spec: SweepSpec) -> dict[str, Any]:
    """What a probe reads: the paths the spec names, else the workspace to look in (the
    probe asks ``tools.probes.layout`` there, in the same round trip)."""
    return {key: given} if given else {"workspace": spec.workspace}


def _launch_file(launch: str | None) -> str | None:
    """The launch *file* (one absolute path, blanks around it dropped), or None where the
    launch is a command line or not given."""
    path = (launch or "").strip()
    return path if path.startswith("/") and not any(c.isspace() for c in path) else None


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
