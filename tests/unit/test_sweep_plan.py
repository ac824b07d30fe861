"""tools.sweep.plan: what a sweep would run on a target. Each probe with the parameters the
spec gives it (or None and why it has nothing to look at), its time limit, the bundle's
worst-case duration, and the command that runs the bundle on the target's Python."""

from __future__ import annotations

from typing import Any

import pytest

from tools.errors import UsageError
from tools.interpreter import MARKER, PREAMBLE
from tools.probes import PROBES
from tools.sweep.plan import Plan, PlannedProbe, build_plan
from tools.sweep.spec import INCIDENT_METADATA, SweepSpec

ON_DEMAND_REASON = (
    "imports torch on the target (seconds); runs when asked for by name "
    "(--only torch_runtime, the menu's probe again) or with torch_import = true"
)


def _given(plan: Plan) -> dict[str, tuple[dict[str, Any] | None, str]]:
    """Each planned probe's parameters and the reason it is skipped."""
    return {p.name: (p.params, p.reason) for p in plan.probes}


def _probe(name: str, timeout: float, runs: bool = True) -> PlannedProbe:
    return PlannedProbe(
        name=name, params={} if runs else None, timeout=timeout, reason="" if runs else "no"
    )


# -- the plan's arithmetic ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("timeouts", "parallel", "budget"),
    [
        ([120.0, 60.0, 30.0, 10.0, 5.0], 2, 120 + 30 + 5 + 30.0),
        ([10.0, 120.0, 5.0, 60.0, 30.0], 2, 120 + 30 + 5 + 30.0),
        ([10.0, 20.0, 30.0], 1, 10 + 20 + 30 + 30.0),
        ([10.0, 20.0, 30.0], 4, 30 + 30.0),
        ([15.0, 15.0, 15.0, 15.0], 4, 15 + 30.0),
        ([15.0, 15.0, 15.0, 15.0, 1.0], 4, 15 + 1 + 30.0),
        ([], 4, 30.0),
    ],
    ids=[
        "two-at-a-time",
        "order-given-does-not-matter",
        "one-at-a-time",
        "all-in-one-wave",
        "exactly-one-wave",
        "one-left-over",
        "nothing-runs",
    ],
)
def test_budget_is_the_waves_worst_cases_plus_slack(
    timeouts: list[float], parallel: int, budget: float
) -> None:
    """The worst case: the longest limits run ``parallel`` at a time, each wave as long as
    its longest probe (the longest first), plus 30 s of transport slack."""
    plan = Plan(
        interpreter="python3",
        probes=tuple(_probe(f"p{i}", t) for i, t in enumerate(timeouts)),
        parallel=parallel,
    )
    assert plan.budget() == budget


def test_skipped_probes_cost_nothing_and_are_not_runnable() -> None:
    """A probe with nothing to look at is not run: it is left out of ``runnable`` (the
    others kept in order) and adds nothing to the budget."""
    plan = Plan(
        interpreter="python3",
        probes=(_probe("a", 10.0), _probe("b", 500.0, runs=False), _probe("c", 20.0)),
        parallel=1,
    )
    assert [p.name for p in plan.runnable()] == ["a", "c"]
    assert plan.budget() == 10.0 + 20.0 + 30.0


def test_argv_runs_the_bundle_from_stdin_or_the_discovery_command() -> None:
    """Without discovery the bundle runs as ``<python> -B -`` (no bytecode written);
    with it, the discovery command is the argv."""
    plain = Plan(interpreter="/venv/bin/python", probes=(), parallel=4)
    assert plain.argv == ("/venv/bin/python", "-B", "-")
    found = Plan(interpreter="python3", probes=(), parallel=4, discovery=("sh", "-c", "x"))
    assert found.argv == ("sh", "-c", "x")


# -- which probes, with which time limits ------------------------------------------------


def test_every_probe_is_planned_in_report_order_by_default() -> None:
    """Without ``only`` every probe is planned, in the order a sweep reports them, on the
    spec's interpreter and parallelism."""
    plan = build_plan(SweepSpec(interpreter="/opt/py/bin/python3", parallel=3))
    assert [p.name for p in plan.probes] == list(PROBES)
    assert (plan.interpreter, plan.parallel, plan.discovery) == ("/opt/py/bin/python3", 3, None)


def test_only_keeps_report_order_and_ignores_blank_names() -> None:
    """The probes asked for are planned in report order, not the order asked; names are
    stripped and empty ones ignored."""
    plan = build_plan(SweepSpec(), only=[" interpreter", "gpus ", "", "  ", "host"])
    assert [p.name for p in plan.probes] == ["host", "gpus", "interpreter"]


def test_only_with_unknown_names_lists_them_and_the_probes_there_are() -> None:
    """Every unknown name is listed, in the order given, and the message lists the probes
    that exist."""
    with pytest.raises(UsageError) as err:
        build_plan(SweepSpec(), only=["gpu", "host", "hots"])
    assert str(err.value) == f"unknown probe(s) gpu, hots; probes: {', '.join(PROBES)}"


def test_time_limits_are_the_probes_own_unless_the_spec_sets_one() -> None:
    """A probe's limit is its module's default (host 15 s, checkpoints 120 s) unless the
    spec's ``timeouts`` names it; the value is a float either way."""
    spec = SweepSpec(workspace="/ws", timeouts={"checkpoints": 7})
    limits = {p.name: p.timeout for p in build_plan(spec, ["host", "checkpoints"]).probes}
    assert limits == {"host": 15.0, "checkpoints": 7.0}
    assert all(isinstance(t, float) for t in limits.values())


# -- what each probe is given ------------------------------------------------------------


def test_a_spec_that_names_nothing() -> None:
    """With no workspace and no paths, the probes that only read named files are skipped,
    each saying what was missing; the others get what they need to look for themselves
    (no trainer pattern for ``live``: ``train`` alone would pick any process), and
    ``torch_runtime`` waits to be asked for."""
    assert _given(build_plan(SweepSpec())) == {
        "host": ({"paths": []}, ""),
        "pyenv": ({}, ""),
        "gpus": ({}, ""),
        "processes": ({"match": ["train"]}, ""),
        "live": ({"match": []}, ""),
        "applies": (None, "no workspace configured"),
        "layout": (None, "no workspace configured"),
        "caches": (
            {
                "inductor": None,
                "triton": None,
                "extra": [],
                "workspace": None,
                "match": [],
                "launch_files": [],
            },
            "",
        ),
        "checksums": (None, "no scripts or workspace configured"),
        "script_patches": (None, "no scripts or workspace configured"),
        "checkpoints": (None, "no checkpoint directory or workspace configured"),
        "trainlog": (None, "no train log or workspace configured"),
        "stdoutlog": (None, "no stdout log or workspace configured"),
        "flight_recorder": (None, "no Flight Recorder dumps or workspace configured"),
        "torch_trace": (None, "no TORCH_TRACE directory or workspace configured"),
        "dataset": (None, "no dataset or workspace configured"),
        "torch_source": ({}, ""),
        "torch_runtime": (None, ON_DEMAND_REASON),
        "integrity": ({"packages": ["torch", "triton"], "mode": "py"}, ""),
        "interpreter": ({"configured": "python3", "because": "set in the sweep spec"}, ""),
    }


def test_a_workspace_alone_is_where_every_file_reading_probe_looks() -> None:
    """Given only a workspace, each probe that reads files is sent there to find them, and
    the default trainer pattern is used, narrowed by it."""
    given = _given(
        build_plan(SweepSpec(workspace="/ws"), [n for n in PROBES if n != "torch_runtime"])
    )
    ws = {"workspace": "/ws"}
    assert given == {
        "host": ({"paths": ["/ws"]}, ""),
        "pyenv": ({}, ""),
        "gpus": ({}, ""),
        "processes": ({"match": ["train"], "workspace": "/ws"}, ""),
        "live": ({"match": ["train"], "workspace": "/ws"}, ""),
        "applies": (ws, ""),
        "layout": (ws, ""),
        "caches": (
            {
                "inductor": None,
                "triton": None,
                "extra": [],
                "workspace": "/ws",
                "match": ["train"],
                "launch_files": [],
            },
            "",
        ),
        "checksums": (ws, ""),
        "script_patches": (ws, ""),
        "checkpoints": (
            {
                "workspace": "/ws",
                "pattern": None,
                "metadata_names": list(INCIDENT_METADATA),
                "metadata_keys": {},
                "env_files": [],
                "deep": False,
            },
            "",
        ),
        "trainlog": (
            {"workspace": "/ws", "fields": {}, "throughput_unit": None, "max_scan": 512 << 20},
            "",
        ),
        "stdoutlog": ({"workspace": "/ws", "extra_signatures": [], "max_scan": 512 << 20}, ""),
        "flight_recorder": ({"paths": [], "workspace": "/ws"}, ""),
        "torch_trace": ({"paths": [], "workspace": "/ws"}, ""),
        "dataset": ({"workspace": "/ws", "text_field": None}, ""),
        "torch_source": ({}, ""),
        "integrity": ({"packages": ["torch", "triton"], "mode": "py"}, ""),
        "interpreter": ({"configured": "python3", "because": "set in the sweep spec"}, ""),
    }


def test_paths_the_spec_names_are_read_instead_of_looking_in_the_workspace() -> None:
    """A named checkpoint directory, log, script, dataset, dump or trace is what the probe
    reads; the workspace still goes where a probe also looks beside the named paths."""
    spec = SweepSpec(
        workspace="/ws",
        checkpoints="/ckpt",
        checkpoint_pattern=r"ck_(?P<step>\d+)",
        metadata_names=("meta.json",),
        metadata_keys={"torch": "env.pt_ver"},
        env_files=("/ws/freeze.txt",),
        deep_checkpoint_check=True,
        train_log="/ws/log.jsonl",
        log_fields={"loss": "train/loss"},
        throughput_unit="ktok/s",
        stdout_log="/ws/out.log",
        extra_signatures=({"name": "oom", "pattern": "CUDA out of memory"},),
        scripts=("/ws/train.py", "/ws/*.sh"),
        dataset=("/data/p.jsonl",),
        text_field="prompt",
        flight_recorder=("/tmp/fr_*",),
        torch_trace=("/tmp/trace",),
        max_scan_bytes=1000,
    )
    names = [
        "host",
        "checkpoints",
        "trainlog",
        "stdoutlog",
        "checksums",
        "script_patches",
        "dataset",
        "flight_recorder",
        "torch_trace",
    ]
    given = {name: params for name, (params, _) in _given(build_plan(spec, names)).items()}
    assert given == {
        "host": {"paths": ["/ws", "/ckpt"]},
        "checkpoints": {
            "path": "/ckpt",
            "pattern": r"ck_(?P<step>\d+)",
            "metadata_names": ["meta.json"],
            "metadata_keys": {"torch": "env.pt_ver"},
            "env_files": ["/ws/freeze.txt"],
            "workspace": "/ws",
            "deep": True,
        },
        "trainlog": {
            "path": "/ws/log.jsonl",
            "fields": {"loss": "train/loss"},
            "throughput_unit": "ktok/s",
            "max_scan": 1000,
        },
        "stdoutlog": {
            "path": "/ws/out.log",
            "extra_signatures": [{"name": "oom", "pattern": "CUDA out of memory"}],
            "max_scan": 1000,
        },
        "checksums": {"paths": ["/ws/train.py", "/ws/*.sh"]},
        "script_patches": {"paths": ["/ws/train.py", "/ws/*.sh"]},
        "dataset": {"paths": ["/data/p.jsonl"], "text_field": "prompt"},
        "flight_recorder": {"paths": ["/tmp/fr_*"], "workspace": "/ws"},
        "torch_trace": {"paths": ["/tmp/trace"], "workspace": "/ws"},
    }


def test_named_paths_without_a_workspace_are_enough() -> None:
    """A probe given its own paths runs without a workspace; only the probes that need one
    are skipped."""
    spec = SweepSpec(checkpoints="/ckpt", train_log="/log.jsonl", torch_trace=("/t",))
    given = _given(build_plan(spec, ["host", "layout", "checkpoints", "trainlog", "torch_trace"]))
    assert given["host"] == ({"paths": ["/ckpt"]}, "")
    assert given["layout"] == (None, "no workspace configured")
    assert given["checkpoints"][0] is not None and given["checkpoints"][0]["path"] == "/ckpt"
    assert given["trainlog"][0] is not None and given["trainlog"][0]["path"] == "/log.jsonl"
    assert given["torch_trace"] == ({"paths": ["/t"], "workspace": None}, "")


@pytest.mark.parametrize(
    ("workspace", "process_match", "live_match"),
    [
        (None, ("train",), []),
        ("/ws", ("train",), ["train"]),
        (None, ("torchrun", "deepspeed"), ["torchrun", "deepspeed"]),
        ("/ws", ("python -m trainer",), ["python -m trainer"]),
    ],
    ids=["default-alone", "default-with-workspace", "profile-patterns", "profile-and-workspace"],
)
def test_trainer_patterns(
    workspace: str | None, process_match: tuple[str, ...], live_match: list[str]
) -> None:
    """The trainer's process is picked by the profile's patterns, or by the default one
    only where a workspace narrows it; ``processes`` always gets the patterns as set."""
    spec = SweepSpec(workspace=workspace, process_match=process_match)
    given = _given(build_plan(spec, ["processes", "live", "caches"]))
    assert given["live"][0] is not None and given["live"][0]["match"] == live_match
    assert given["caches"][0] is not None and given["caches"][0]["match"] == live_match
    assert given["processes"][0] is not None
    assert given["processes"][0]["match"] == list(process_match)


def test_live_is_given_the_py_spy_to_use() -> None:
    """A configured py-spy goes to ``live``, and so does whether it was carried over."""
    spec = SweepSpec(workspace="/ws", py_spy="/tmp/dd/py-spy", py_spy_carried=True)
    assert _given(build_plan(spec, ["live"]))["live"] == (
        {
            "match": ["train"],
            "workspace": "/ws",
            "py_spy": "/tmp/dd/py-spy",
            "py_spy_carried": True,
        },
        "",
    )


@pytest.mark.parametrize(
    ("launch", "launch_files"),
    [
        ("/ws/run.sh", ["/ws/run.sh"]),
        ("torchrun --nproc 8 train.py", []),
        ("/ws/run.sh --fast", []),
        ("run.sh", []),
        (None, []),
        ("  /ws/run.sh", ["/ws/run.sh"]),
        ("/ws/run.sh  ", ["/ws/run.sh"]),
        ("/ws/run.sh\t--fast", []),
    ],
    ids=[
        "absolute-file",
        "command-line",
        "file-with-arguments",
        "relative",
        "none",
        "blanks-before",
        "blanks-after",
        "tab-then-arguments",
    ],
)
def test_caches_read_the_launch_file_only_when_launch_is_one(
    launch: str | None, launch_files: list[str]
) -> None:
    """The trainer's launch is read for cache variables only when it is one absolute path,
    not a command line."""
    caches = _given(build_plan(SweepSpec(launch=launch), ["caches"]))["caches"][0]
    assert caches is not None and caches["launch_files"] == launch_files


def test_caches_are_given_the_profiles_cache_directories() -> None:
    """The profile's inductor, triton and extra cache directories go to ``caches``."""
    spec = SweepSpec(inductor_cache="/c/ind", triton_cache="/c/tri", extra_caches=("/c/x",))
    caches = _given(build_plan(spec, ["caches"]))["caches"][0]
    assert caches is not None
    assert (caches["inductor"], caches["triton"], caches["extra"]) == ("/c/ind", "/c/tri", ["/c/x"])


@pytest.mark.parametrize(
    ("torch_import", "cuda_init", "only", "expected"),
    [
        (None, False, None, (None, ON_DEMAND_REASON)),
        (None, True, ["torch_runtime"], ({"cuda": True}, "")),
        (True, False, None, ({"cuda": False}, "")),
        (False, True, ["torch_runtime"], (None, "torch_import is off in the profile")),
    ],
    ids=["default-sweep", "asked-for-by-name", "profile-on", "profile-off-even-by-name"],
)
def test_torch_runtime_parameters(
    torch_import: bool | None,
    cuda_init: bool,
    only: list[str] | None,
    expected: tuple[dict[str, Any] | None, str],
) -> None:
    """torch_runtime is told whether to initialise CUDA when it runs; a profile that turns
    torch imports off wins even over asking for it by name."""
    spec = SweepSpec(torch_import=torch_import, cuda_init=cuda_init)
    assert _given(build_plan(spec, only))["torch_runtime"] == expected


def test_integrity_is_given_the_packages_and_mode() -> None:
    """The packages to verify and how deep go to ``integrity`` as the spec sets them."""
    spec = SweepSpec(integrity_packages=("torch",), integrity_mode="all")
    assert _given(build_plan(spec, ["integrity"]))["integrity"] == (
        {"packages": ["torch"], "mode": "all"},
        "",
    )


# -- choosing the target's Python ----------------------------------------------------------


def test_discovery_gives_the_preamble_command_and_an_unconfigured_interpreter_probe() -> None:
    """With discovery on, the argv is the shell preamble that picks the trainer's Python
    (the spec's interpreter as fallback, the workspace, the launch, the trainer patterns)
    and the interpreter probe is told nothing was configured."""
    spec = SweepSpec(
        interpreter="/usr/bin/python3",
        discover_interpreter=True,
        workspace="/ws",
        launch="/ws/run.sh",
    )
    plan = build_plan(spec, ["interpreter"])
    assert plan.argv == (
        "sh",
        "-c",
        PREAMBLE,
        MARKER,
        "/usr/bin/python3",
        "/ws",
        "/ws/run.sh",
        "train",
    )
    assert _given(plan)["interpreter"] == ({}, "")


def test_discovery_without_a_workspace_looks_for_no_process() -> None:
    """Without a workspace and with the default pattern, discovery is given empty places
    and no pattern: it looks for no process."""
    plan = build_plan(SweepSpec(discover_interpreter=True), ["host"])
    assert plan.discovery == ("sh", "-c", PREAMBLE, MARKER, "python3", "", "")


def test_interpreter_configured_says_why() -> None:
    """Without discovery, the interpreter probe is told which Python was configured and
    why."""
    spec = SweepSpec(interpreter="/venv/bin/python", interpreter_reason="the profile's venv")
    assert _given(build_plan(spec, ["interpreter"]))["interpreter"] == (
        {"configured": "/venv/bin/python", "because": "the profile's venv"},
        "",
    )
