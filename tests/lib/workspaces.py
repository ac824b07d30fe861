"""Real reference-trainer workspaces for the diagnosis tests (a pytest plugin).

Each is made by running ``python -m examples.dflash_trainer`` for real, once per test
session, and copied per test (``clone``) before a test damages it. No workspace here is
written by hand: every file in it came from the trainer or its own ``break`` command.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

from agent.graph.gather import SweepGatherer
from agent.model.facts import Fact, Ledger
from tests.lib.need import need
from tests.lib.torch_error_texts import FX_ERROR
from tools.sweep import SweepSpec
from tools.transport import LocalTransport

REPO = Path(__file__).resolve().parents[2]
SMALL = ["--batch-size", "8", "--log-every", "5", "--intra-op-threads", "2"]
SUBMODULE_ERROR = "module is not installed as a submodule"


def trainer(*args: str | Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "examples.dflash_trainer", *map(str, args)]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout)


def train(ws: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return trainer("train", "--workspace", ws, *SMALL, *flags)


def clone(src: Path, dest: Path) -> Path:
    """A copy of a workspace, its compile cache included (mtimes kept). Its launcher is
    written anew: `init` bakes the workspace's path into it, and a copy must not train
    the original."""
    shutil.copytree(src, dest, symlinks=True)
    if (dest / "train_dflash.py").exists():
        assert trainer("init", "--workspace", dest).returncode == 0
    return dest


def _need_torch() -> None:
    need(importlib.util.find_spec("torch") is not None, "torch", "install the [torch] extra")


@pytest.fixture(scope="session")
def good_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The good state: 128 prompts of length 64, the launcher, 40 steps, two checkpoints.

    A healthy run is what the tests need: one whose own drafter tokens/s show its last
    records slowed (the suite's other worker took the cores: met by a clean-clone run,
    rightly judged "insufficient evidence") is trained again, at most twice."""
    _need_torch()
    return built_once(tmp_path_factory, "good_workspace", lambda: _good(tmp_path_factory))


def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[], Path]
) -> Path:
    """What ``build`` makes, made by one xdist worker and read by the others: their base
    temporary directories share a parent, where a lock and the built path are kept. A
    session fixture is otherwise built once per worker (a 40-step training each time)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return build()
    shared = tmp_path_factory.getbasetemp().parent
    with FileLock(str(shared / f"{name}.lock")):
        done = shared / f"{name}.path"
        if done.exists():
            return Path(done.read_text())
        built = build()
        done.write_text(str(built))
        return built


def _good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for _ in range(3):
        ws = tmp_path_factory.mktemp("good") / "ws"
        for args in (
            ("dataset", "--workspace", ws, "--size", "128", "--lengths", "64"),
            ("init", "--workspace", ws),
        ):
            assert trainer(*args).returncode == 0
        run = train(ws, "--steps", "40", "--save-every", "20")
        assert run.returncode == 0, run.stdout + run.stderr
        ratio = held_drafter_rate(ws / "checkpoints" / "train_log.jsonl")
        if ratio >= HELD:
            return ws
    raise AssertionError(f"three good runs slowed on this machine (last: {ratio:.2f}x)")


HELD = 0.85  # the last records' median drafter rate against the earlier ones' (first left out)


def held_drafter_rate(log: Path) -> float:
    """The drafter's own tokens/s in the train log: the last quarter's median (at least
    three records) over the earlier records' (the first, warm-up, left out), read with
    ``json`` apart from any parser."""
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    rates = [float(r["tokens_per_s"]) for r in rows if r.get("role") == "drafter"]
    quarter = max(3, len(rates) // 4)
    return statistics.median(rates[-quarter:]) / statistics.median(rates[1:-quarter])


def race_seed(ws: Path, new_length: int = 80) -> str:
    """A --seed whose batch order first shows ``new_length`` at batch 12 to 17: by then
    the drafter is making compiled calls while a target compiles the new length cold (see
    tests/e2e/test_trainer_runs.py's ``expanded`` for why this makes the race deterministic)."""
    from examples.dflash_trainer import dataset

    prompts = dataset.load(ws / "data" / "prompts.jsonl")
    for seed in range(100):
        plan = dataset.batch_plan(prompts, 8, seed)
        first = next(i for i, b in enumerate(plan) if prompts[b[0]].length == new_length)
        if 12 <= first <= 17:
            return str(seed)
    raise AssertionError(f"no seed < 100 puts the first length-{new_length} batch at 12..17")


@dataclass(frozen=True)
class Scenario:
    """A broken workspace and the facts of its good state, gathered before it broke."""

    ws: Path
    good_facts: list[Fact]

    def install_baseline(self, name: str) -> None:
        """Store the good state as baseline ``name`` in this test's state directory."""
        from agent.analysis.baseline import baseline_store

        baseline_store().save(name, "local", self.good_facts)


def gather_local(ws: Path) -> list[Fact]:
    spec = SweepSpec.for_workspace(str(ws), interpreter=sys.executable)
    return SweepGatherer(LocalTransport(), spec, Ledger())(None)


@pytest.fixture(scope="session")
def race_scenario(tmp_path_factory: pytest.TempPathFactory, good_workspace: Path) -> Scenario:
    """The incident: the dataset grew (16 prompts of a new length, 80), and a target
    compiling it while the drafter calls its compiled function trips torch's FX check
    (the torch <= 2.11 behaviour, emulated on torch's own flag): the run dies with
    torch's error. The good state's facts are gathered first, as a snapshot would be."""
    return _raced(tmp_path_factory, good_workspace, "race")


def _raced(
    tmp_path_factory: pytest.TempPathFactory, good_workspace: Path, name: str, *flags: str
) -> Scenario:
    """The race run, until it dies of torch's FX-trace error. The shared tracing state
    kills a worker by one of two torch errors (examples/dflash_trainer/README.md: about 1
    crash in 11 is torch's ``NameError: module is not installed as a submodule``); these
    scenarios are the incident's, whose evidence is the FX check, so such a run is done
    again from a fresh copy, at most twice. Any other outcome fails the fixture."""
    seen = []
    for _ in range(3):
        ws = clone(good_workspace, tmp_path_factory.mktemp(name) / "ws")
        good = gather_local(ws)
        expand(ws, 16, "80")
        run = train(ws, "--steps", "60", "--seed", race_seed(ws), "--emulate-torch211-race", *flags)
        assert run.returncode != 0, "the emulated race should have killed a worker"
        log = (ws / "checkpoints" / "train_stdout.log").read_text()
        if FX_ERROR in log:
            return Scenario(ws, good)
        assert SUBMODULE_ERROR in log, log[-3000:]
        seen.append(SUBMODULE_ERROR)
    raise AssertionError(f"3 race runs, none died of the FX-trace error: {seen}")


# Sixteen new lengths (80 to 320) on top of the good state's 64, 16 prompts (two batches)
# of each: far past torch's default recompile limit of 8.
CHURN_LENGTHS = ",".join(str(n) for n in range(80, 321, 16))
CHURN_ADD = 256


def expand(ws: Path, add: int, lengths: str) -> None:
    run = trainer(
        "dataset", "--workspace", ws, "--expand", "--add", str(add), "--new-lengths", lengths
    )
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.fixture(scope="session")
def eager_scenario(tmp_path_factory: pytest.TempPathFactory, good_workspace: Path) -> Scenario:
    """Silent eager fallback through shape churn: the dataset grew by sixteen new lengths and
    the run resumed with dynamo's recompile limit at 1, so every length but the first a
    device meets runs flex_attention uncompiled (torch's own recompile-limit and
    uncompiled-flex warnings). Nothing crashes; the drafter is slower. A limit of 1 stands
    in for torch's 8 so that the run does not first spend minutes compiling 8 lengths
    cold on every device: past the limit, torch does the same thing either way."""
    ws = clone(good_workspace, tmp_path_factory.mktemp("eager") / "ws")
    good = gather_local(ws)
    expand(ws, CHURN_ADD, CHURN_LENGTHS)
    run = train(ws, "--steps", "100", "--resume", "--recompile-limit", "1")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return Scenario(ws, good)


@pytest.fixture(scope="session")
def monkeypatch_scenario(
    tmp_path_factory: pytest.TempPathFactory, good_workspace: Path
) -> Scenario:
    """The incident's patch: the race scenario's run with ``--monkeypatch-fx-check``, which
    replaces torch's is_fx_symbolic_tracing after the compiled wrappers exist (and says so
    on stdout). The wrappers keep the original, and the race still kills a worker."""
    return _raced(tmp_path_factory, good_workspace, "monkeypatch", "--monkeypatch-fx-check")


def ready_to_race(scenario: Scenario, good_workspace: Path, dest: Path) -> Path:
    """A copy of the race scenario that races again when restarted from its launch file.
    The crash left the new length's kernels in the cache, and a warm compile never sets
    the FX flag: the cache goes back to what it was before the crash, and launch.sh holds
    the configuration that crashed (see race_scenario), started again from scratch."""
    ws = clone(scenario.ws, dest)
    shutil.rmtree(ws / "compile_cache")
    shutil.copytree(good_workspace / "compile_cache", ws / "compile_cache")
    flags = ["--steps", "30", "--seed", race_seed(ws), "--emulate-torch211-race"]
    line = shlex.join(["exec", sys.executable, "train_dflash.py", *SMALL, *flags])
    (ws / "launch.sh").write_text(f"#!/bin/sh\n# the trainer's launch file\n{line}\n")
    return ws
