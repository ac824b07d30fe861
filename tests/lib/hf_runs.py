"""Real Hugging Face ``transformers.Trainer`` runs, healthy and faulty, for the diagnosis
tests (a pytest plugin).

Each fixture runs tests/lib/foreign/hf_train.py once per session on CPU, a Llama two layers
deep built from a config in code, the way a user runs it (tests/lib/foreign_trainers.py):
``train.py``, ``launch.sh`` appending stdout and stderr to ``train.log``,
``data/train.jsonl`` (64 prompts of 32 tokens, 8 per batch: 256 tokens a step, 8 steps an
epoch), the Trainer's ``out/checkpoint-N/`` with ``trainer_state.json``. A step takes about
8 ms here; a run's wall time is mostly the interpreter importing transformers (about 6 s).

A fault is applied by the trainer's own callback after step ``injected_step`` (the last
good step, as ``global_step`` counts it) and the fixture passes that field to the trainer:
the field is the oracle of where the change is. A resumed run resumes from the newest
checkpoint, ``out/checkpoint-{resumed_from_step}``, written by a first run of
``resumed_from_step`` steps into the same workspace and the same ``train.log``.

Set ``HF_RUNS_COPY_TO=DIR`` to have each fixture also copy its workspace to ``DIR/<name>``
and then touch ``DIR/READY_<name>`` (samples of real output, to read by hand).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

from tests.lib import oracle_bars
from tests.lib.foreign_trainers import (
    Workspace,
    _need,
    launch,
    log_tail,
    new_workspace,
    offline_env,
    write_launcher,
    write_prompts,
)

# Long against a step (about 8 ms alone, a few times that under load): a record after the
# fault is at least 3x slower than one before it however loaded the machine is.
SLOW_SECONDS = 0.3
# A stalled trainer's log is taken as stopped once it has not grown for this long.
QUIET_SECONDS = 3.0


@dataclass(frozen=True)
class HfRun:
    """A finished ``transformers.Trainer`` run of ``steps`` steps, one record on the
    console and in ``log_history`` every ``logging_steps``, a checkpoint every
    ``save_steps``; ``tokens_seen``: ``include_num_input_tokens_seen`` was on (each record
    then has ``num_input_tokens_seen``, ``train_runtime``, ``train_tokens_per_second``)."""

    workspace: Workspace
    steps: int
    logging_steps: int
    save_steps: int
    tokens_seen: bool

    @property
    def ws(self) -> Path:
        return self.workspace.ws


@dataclass(frozen=True)
class HfSlowRun(HfRun):
    """Resumed from ``out/checkpoint-{resumed_from_step}``; every step after
    ``injected_step`` sleeps ``slow_seconds`` in a user callback's ``on_step_end``."""

    resumed_from_step: int
    injected_step: int
    slow_seconds: float


@dataclass(frozen=True)
class HfBarRun(HfRun):
    """A run with no speed in its records (the Trainer's default), read from its
    progress bar or its checkpoints. ``injected_step``: every later step sleeps
    ``slow_seconds`` more (None: healthy)."""

    injected_step: int | None
    slow_seconds: float


@dataclass(frozen=True)
class HfNanRun(HfRun):
    """A weight set to NaN at the end of step ``injected_step``: every later step's loss
    and gradients are NaN. ``nan_filter``: the Trainer's default
    ``logging_nan_inf_filter=True`` was left on (the loss then logs as 0, not nan)."""

    injected_step: int
    nan_filter: bool


@dataclass(frozen=True)
class HfStalledRun(HfRun):
    """A LIVE trainer, ``pid``, blocked in a callback before the step after
    ``injected_step``: alive, sleeping, its console silent since that step's record. It is
    killed and reaped at the end of the session."""

    injected_step: int
    pid: int


def trainer_flags(
    steps: int, logging_steps: int, save_steps: int, tokens_seen: bool, *extra: str
) -> list[str]:
    flags = ["--model", "llama", "--steps", str(steps)]
    flags += ["--logging-steps", str(logging_steps), "--save-steps", str(save_steps)]
    return [*flags, *(["--tokens-seen"] if tokens_seen else []), *extra]


def _workspace(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    _need("torch", "torch")
    _need("transformers", "foreign")
    ws = new_workspace(tmp_path_factory, name, "hf_train.py")
    write_prompts(ws / "data" / "train.jsonl", [32], 64, seed=0)
    # One thread, as launch files on shared machines set: torch's two OpenMP threads on a
    # loaded two-core machine wait on each other for seconds a step, which no user callback
    # causes; one thread keeps a step near 10 ms under load.
    write_launcher(ws, before="export OMP_NUM_THREADS=1")
    return ws


def _train(ws: Path, *flags: str) -> None:
    run = launch(ws, *flags, timeout=240)
    assert run.returncode == 0, log_tail(ws)


def _publish(run: HfRun, name: str) -> None:
    """The copy ``HF_RUNS_COPY_TO`` asks for (see the module's docstring), with the run's
    facts beside it in ``<name>.facts.json``."""
    root = os.environ.get("HF_RUNS_COPY_TO")
    if not root:
        return
    dest = Path(root) / name
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(run.ws, dest, symlinks=True)
    facts = {k: v for k, v in asdict(run).items() if k != "workspace"}
    (Path(root) / f"{name}.facts.json").write_text(json.dumps(facts, indent=1) + "\n")
    (Path(root) / f"READY_{name}").touch()


HELD = 0.85  # the last quarter's median window rate against the earlier windows'


def held_speed(ws: Path) -> float | None:
    """The run's last quarter of window rates (tokens seen over Trainer's runtime, between
    consecutive records) over its earlier windows' (the first left out as warm-up), by
    medians, read from the newest checkpoint's ``trainer_state.json`` apart from any
    parser. None: no tokens in its records."""
    states = sorted(ws.glob("out/checkpoint-*/trainer_state.json"), key=lambda p: p.stat().st_mtime)
    if not states:
        return None
    rows = [
        (r["num_input_tokens_seen"], r["train_runtime"])
        for r in json.loads(states[-1].read_text())["log_history"]
        if "num_input_tokens_seen" in r and "train_runtime" in r and "loss" in r
    ]
    rates = [(b[0] - a[0]) / (b[1] - a[1]) for a, b in itertools.pairwise(rows) if b[1] > a[1]]
    quarter = max(3, len(rates) // 4)
    early, recent = rates[1:-quarter], rates[-quarter:]
    if not early or not recent:
        return None
    return float(statistics.median(recent) / statistics.median(early))


def _healthy(tmp_path_factory: pytest.TempPathFactory, name: str, tokens_seen: bool) -> HfRun:
    """A healthy run. One whose own records show it slowed (on a shared 2-core machine the
    suite's other worker can take the cores in its last quarter: the clean-clone run met
    that once, and the doctor rightly called it insufficient evidence) is not the healthy
    run the tests need: it is trained again, at most twice."""
    for attempt in range(3):
        ws = _workspace(tmp_path_factory, f"{name}-{attempt}")
        run = HfRun(
            Workspace(ws), steps=60, logging_steps=5, save_steps=20, tokens_seen=tokens_seen
        )
        _train(ws, *trainer_flags(run.steps, run.logging_steps, run.save_steps, tokens_seen))
        ratio = held_speed(ws) if tokens_seen else None
        if ratio is None or ratio >= HELD:
            break
    else:
        raise AssertionError(f"three runs slowed on this machine (last: {ratio:.2f}x)")
    _publish(run, name)
    return run


@pytest.fixture(scope="session")
def hf_default_run(tmp_path_factory: pytest.TempPathFactory) -> HfRun:
    """Healthy, 60 steps, the Trainer's default records (no tokens seen: loss, grad_norm,
    learning_rate, epoch), one every 5 steps (12), checkpoints 20, 40, 60. About 6 s."""
    return _healthy(tmp_path_factory, "hf_default_run", tokens_seen=False)


@pytest.fixture(scope="session")
def hf_tokens_run(tmp_path_factory: pytest.TempPathFactory) -> HfRun:
    """``hf_default_run`` with ``include_num_input_tokens_seen``. About 6 s."""
    return _healthy(tmp_path_factory, "hf_tokens_run", tokens_seen=True)


# A bar's windows hold 5 of tqdm's updates at least, and tqdm redraws at most every
# 0.1 s: 600 steps of about 8 ms give the fast part enough windows to confirm a change.
BAR_STEPS, BAR_SLOW_AFTER, BAR_SLOW_SECONDS = 600, 450, 0.05


def bar_held(ws: Path) -> float | None:
    """The last quarter of the console bar's window rates over all its windows but the
    warm-up ones (a bar's first), by medians, read with the bar oracle apart from any
    parser: the steady claim's comparison. None: no bar with a rate."""
    fam = oracle_bars.chosen(
        oracle_bars.families(oracle_bars.updates((ws / "train.log").read_bytes()))
    )
    if fam is None:
        return None
    rates = [w["speed"] for w in oracle_bars.windows(fam) if not w["bar_start"]]
    quarter = max(2, len(rates) // 4)
    if len(rates) < 2 * quarter:
        return None
    return float(statistics.median(rates[-quarter:]) / statistics.median(rates))


def _bar(tmp_path_factory: pytest.TempPathFactory, name: str, slow: bool) -> HfBarRun:
    """A run with its progress bar on. The healthy one is trained again (at most twice)
    when its own bar shows it slowed in its last quarter (``bar_held``): on a loaded
    2-core machine the suite's other worker can take the cores then (the clean-clone run
    met it once: 0.69×), and a slowed run is not the healthy run the tests need."""
    for attempt in range(1 if slow else 3):
        ws = _workspace(tmp_path_factory, f"{name}-{attempt}")
        run = HfBarRun(
            Workspace(ws),
            steps=BAR_STEPS,
            logging_steps=50,
            save_steps=200,
            tokens_seen=False,
            injected_step=BAR_SLOW_AFTER if slow else None,
            slow_seconds=BAR_SLOW_SECONDS if slow else 0.0,
        )
        flags = trainer_flags(run.steps, run.logging_steps, run.save_steps, False, "--progress-bar")
        if slow:
            flags += ["--slow-after", str(BAR_SLOW_AFTER), "--slow-seconds", str(BAR_SLOW_SECONDS)]
        _train(ws, *flags)
        ratio = None if slow else bar_held(ws)
        if ratio is None or ratio >= HELD:
            break
    else:
        raise AssertionError(f"three bar runs slowed on this machine (last: {ratio:.2f}x)")
    _publish(run, name)
    return run


@pytest.fixture(scope="session")
def hf_bar_run(tmp_path_factory: pytest.TempPathFactory) -> HfBarRun:
    """Healthy, 600 steps, the Trainer's defaults but for the step counts: its progress
    bar on, no speed in its records (one every 50 steps), checkpoints 200, 400, 600.
    About 11 s."""
    return _bar(tmp_path_factory, "hf_bar_run", slow=False)


@pytest.fixture(scope="session")
def hf_bar_slow_run(tmp_path_factory: pytest.TempPathFactory) -> HfBarRun:
    """``hf_bar_run`` with a sleep of 0.05 s after every step after 450. About 17 s."""
    return _bar(tmp_path_factory, "hf_bar_slow_run", slow=True)


# Checkpoints every 5 steps of a quarter second: a second or more apart, as the pace
# reads them (tools.probes.checkpoints.PACE_MIN_SECONDS); 0.6 s more a step after 25.
PACE_STEPS, PACE_SAVE, PACE_STEP_SECONDS, PACE_SLOW_AFTER, PACE_SLOW_SECONDS = 50, 5, 0.25, 25, 0.6


@pytest.fixture(scope="session")
def hf_pace_slow_run(tmp_path_factory: pytest.TempPathFactory) -> HfBarRun:
    """No speed in the records and no progress bar: only the checkpoints' times tell the
    pace. 50 steps of 0.25 s, a checkpoint every 5, each step after 25 slept 0.6 s more.
    About 34 s."""
    name = "hf_pace_slow_run"
    ws = _workspace(tmp_path_factory, name)
    run = HfBarRun(
        Workspace(ws),
        steps=PACE_STEPS,
        logging_steps=5,
        save_steps=PACE_SAVE,
        tokens_seen=False,
        injected_step=PACE_SLOW_AFTER,
        slow_seconds=PACE_SLOW_SECONDS,
    )
    flags = trainer_flags(run.steps, run.logging_steps, run.save_steps, False)
    flags += ["--step-seconds", str(PACE_STEP_SECONDS)]
    flags += ["--slow-after", str(PACE_SLOW_AFTER), "--slow-seconds", str(PACE_SLOW_SECONDS)]
    _train(ws, *flags)
    _publish(run, name)
    return run


def _resumed_slow(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    steps: int,
    logging_steps: int,
    injected_step: int,
) -> HfSlowRun:
    ws = _workspace(tmp_path_factory, name)
    run = HfSlowRun(
        Workspace(ws),
        steps=steps,
        logging_steps=logging_steps,
        save_steps=20,
        tokens_seen=True,
        resumed_from_step=40,
        injected_step=injected_step,
        slow_seconds=SLOW_SECONDS,
    )
    # The first run ends at the checkpoint the second resumes from: a user extending a run.
    _train(ws, *trainer_flags(run.resumed_from_step, logging_steps, run.save_steps, True))
    slow = ("--slow-after", str(injected_step), "--slow-seconds", str(run.slow_seconds))
    _train(ws, *trainer_flags(steps, logging_steps, run.save_steps, True, "--resume", *slow))
    _publish(run, name)
    return run


@pytest.fixture(scope="session")
def hf_resumed_slow_60(tmp_path_factory: pytest.TempPathFactory) -> HfSlowRun:
    """Tokens seen, a record every 5 steps: 40 steps, then resumed from checkpoint-40 to
    60, steps 46-60 slowed by a sleep (the resumed session's records: 45 fast; 50, 55, 60
    slow). About 15 s (two interpreters, 4.5 s of sleep)."""
    return _resumed_slow(tmp_path_factory, "hf_resumed_slow_60", 60, 5, injected_step=45)


@pytest.fixture(scope="session")
def hf_resumed_slow_200(tmp_path_factory: pytest.TempPathFactory) -> HfSlowRun:
    """Tokens seen, a record every 10 steps: 40 steps, then resumed from checkpoint-40 to
    200, steps 121-200 slowed by a sleep (records 50-120 fast, 130-200 slow). About 39 s
    (24 s of it asleep)."""
    return _resumed_slow(tmp_path_factory, "hf_resumed_slow_200", 200, 10, injected_step=120)


def _nan(tmp_path_factory: pytest.TempPathFactory, name: str, nan_filter: bool) -> HfNanRun:
    ws = _workspace(tmp_path_factory, name)
    run = HfNanRun(
        Workspace(ws),
        steps=60,
        logging_steps=5,
        save_steps=20,
        tokens_seen=False,
        injected_step=30,
        nan_filter=nan_filter,
    )
    fault = ["--nan-after", str(run.injected_step)]
    if not nan_filter:
        fault.append("--no-nan-filter")
    _train(ws, *trainer_flags(run.steps, run.logging_steps, run.save_steps, False, *fault))
    _publish(run, name)
    return run


@pytest.fixture(scope="session")
def hf_nan_run(tmp_path_factory: pytest.TempPathFactory) -> HfNanRun:
    """60 steps, NaN from step 31, ``logging_nan_inf_filter=False``: the records from
    step 35 on log ``loss`` and ``grad_norm`` nan. About 6 s."""
    return _nan(tmp_path_factory, "hf_nan_run", nan_filter=False)


@pytest.fixture(scope="session")
def hf_nan_filtered_run(tmp_path_factory: pytest.TempPathFactory) -> HfNanRun:
    """``hf_nan_run`` under the Trainer's default NaN filter: the records from step 35 on
    log ``loss`` 0 and ``grad_norm`` nan; the summary's ``train_loss`` is finite. About 7 s."""
    return _nan(tmp_path_factory, "hf_nan_filtered_run", nan_filter=True)


def _records(ws: Path) -> int:
    """The training records on the console so far (each begins ``{'loss':``)."""
    log = ws / "train.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return sum(line.startswith("{'loss':") for line in lines)


def _wait_stalled(proc: subprocess.Popen[bytes], ws: Path, records: int) -> None:
    """Until ``records`` records are on the console and it then stays quiet."""
    log, deadline = ws / "train.log", time.monotonic() + 180
    while _records(ws) < records:
        assert proc.poll() is None, f"the trainer exited (rc {proc.returncode}): {log_tail(ws)}"
        assert time.monotonic() < deadline, f"no record {records} in time: {log_tail(ws)}"
        time.sleep(0.2)
    quiet_since, size = time.monotonic(), log.stat().st_size
    while time.monotonic() - quiet_since < QUIET_SECONDS:
        time.sleep(0.2)
        if log.stat().st_size != size:
            quiet_since, size = time.monotonic(), log.stat().st_size
        assert time.monotonic() < deadline, f"the log never went quiet: {log_tail(ws)}"
    assert proc.poll() is None, f"the trainer exited (rc {proc.returncode}): {log_tail(ws)}"


@pytest.fixture(scope="session")
def hf_stalled_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HfStalledRun]:
    """A LIVE process: ``launch.sh`` started in the background (it ``exec``s the trainer,
    so ``pid`` is the trainer's), 60 steps asked, blocked for an hour before step 31. The
    fixture yields once the step-30 record is on the console and the log has then been
    quiet for ``QUIET_SECONDS``; the session's end kills and reaps the process. About 8 s
    to yield."""
    name = "hf_stalled_run"
    ws = _workspace(tmp_path_factory, name)
    steps, logging_steps, save_steps, injected_step = 60, 5, 20, 30
    # Its speed logged (tokens seen): the run's own logging interval is what a stall is
    # judged against.
    flags = trainer_flags(
        steps, logging_steps, save_steps, True, "--hang-after", str(injected_step)
    )
    proc = subprocess.Popen(
        ["sh", str(ws / "launch.sh"), *flags],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=offline_env(HF_HOME=str(ws.parent / "hf-home")),
    )
    try:
        _wait_stalled(proc, ws, injected_step // logging_steps)
        run = HfStalledRun(
            Workspace(ws),
            steps=steps,
            logging_steps=logging_steps,
            save_steps=save_steps,
            tokens_seen=True,
            injected_step=injected_step,
            pid=proc.pid,
        )
        _publish(run, name)
        yield run
    finally:
        proc.kill()
        proc.wait(timeout=30)
