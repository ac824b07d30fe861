"""The end-to-end demo: a real trainer, the incident, the diagnosis, a guarded fix.

In a temporary workspace: run the reference trainer's good configuration and snapshot it;
grow the dataset and watch the run die of torch's FX-tracing error; diagnose it with cited
claims; apply ``lock-warmup`` as a transaction (approved by the demo's policy — shown as
such — or by you with ``--ask``); confirm; and print good / broken / fixed tokens/s side
by side, each figure with where it comes from.

The reference trainer lives in ``examples/`` (not in the installed package): the demo runs
from a source checkout, as ``make demo`` does.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from agent.fixes import adapt
from agent.nodes import Approver
from agent.runner import baseline_store, build_doctor, record_outcome, run_session
from agent.session import Session, SessionConfig
from agent.state import DiagnosisState
from playbooks import LockWarmup, TrainerSite
from playbooks.base import FixPlan
from tools.bundle import SweepSpec
from tools.errors import UsageError

REPO = Path(__file__).resolve().parents[1]
SMALL = ["--batch-size", "8", "--log-every", "5", "--intra-op-threads", "2"]


@dataclass
class RunFigure:
    label: str
    tok_s: float | None
    lines: int
    first_step: int | None
    last_step: int | None

    def text(self) -> str:
        if self.tok_s is None:
            return f"{self.label} n/a (no drafter log lines)"
        where = f"median of {self.lines} drafter log lines"
        if self.first_step is not None:
            where += f", steps {self.first_step}–{self.last_step}"
        return f"{self.label} {self.tok_s:,.0f} tok/s ({where})"


def _trainer_available() -> None:
    if not (REPO / "examples" / "dflash_trainer" / "__main__.py").exists():
        raise UsageError(
            "the demo needs the reference trainer (examples/dflash_trainer): run it "
            "from a source checkout, e.g. `make demo`"
        )


def _trainer(*args: str | Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "examples.dflash_trainer", *map(str, args)]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=900)


def _race_seed(ws: Path, new_length: int) -> str:
    """A batch order whose first new-length batch comes once the drafter is making
    compiled calls (batch 12 to 17), so the race window is met by a caller."""
    from examples.dflash_trainer import dataset

    prompts = dataset.load(ws / "data" / "prompts.jsonl")
    for seed in range(100):
        plan = dataset.batch_plan(prompts, 8, seed)
        first = next(i for i, b in enumerate(plan) if prompts[b[0]].length == new_length)
        if 12 <= first <= 17:
            return str(seed)
    raise RuntimeError(f"no seed puts the first length-{new_length} batch at 12..17")


def _write_launch(ws: Path, flags: list[str]) -> None:
    import shlex

    line = shlex.join(["exec", sys.executable, "train_dflash.py", *SMALL, *flags])
    (ws / "launch.sh").write_text(
        "#!/bin/sh\n# The trainer's launch file: dflash-doctor's playbooks edit its exec line.\n"
        f"{line}\n"
    )


def _run_launch(ws: Path) -> int:
    proc = subprocess.run(
        ["sh", str(ws / "launch.sh")], cwd=ws, capture_output=True, text=True, timeout=900
    )
    return proc.returncode


def _figure(label: str, log: Path, offset: int) -> RunFigure:
    records = []
    with log.open("rb") as fh:
        fh.seek(offset)
        for line in fh.read().decode(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("role") == "drafter" and isinstance(
                record.get("tokens_per_s"), int | float
            ):
                records.append(record)
    # All of the run's drafter lines, start-up included, as the verification counts them.
    steady = records
    if not steady:
        return RunFigure(label, None, 0, None, None)
    return RunFigure(
        label,
        statistics.median(r["tokens_per_s"] for r in steady),
        len(steady),
        steady[0]["step"],
        steady[-1]["step"],
    )


def run_demo(
    console: Console,
    *,
    ask: Callable[[FixPlan], bool] | None = None,
    root: Path | None = None,
    keep: bool = False,
) -> tuple[DiagnosisState, list[RunFigure], Session]:
    _trainer_available()
    started = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix="dflash-demo-", dir=root))
    ws = base / "workspace"
    log = ws / "checkpoints" / "train_log.jsonl"
    try:
        with console.status("1/5 good run: 128 prompts of length 64, 40 steps…"):
            for args in (
                ("dataset", "--workspace", ws, "--size", "128", "--lengths", "64"),
                ("init", "--workspace", ws),
            ):
                if _trainer(*args).returncode != 0:
                    raise RuntimeError(f"trainer {args[0]} failed")
            _write_launch(ws, ["--steps", "40", "--save-every", "20"])
            if _run_launch(ws) != 0:
                raise RuntimeError("the good run failed; see " + str(ws / "checkpoints"))
        good = _figure("good", log, 0)
        console.print(f"  good run done: {good.text()}")
        spec = SweepSpec.for_workspace(str(ws), interpreter=sys.executable)
        name = f"demo-{int(time.time())}"
        with console.status("2/5 snapshot of the good state (one round trip)…"):
            snap = Session.create(SessionConfig(command="snapshot", target="local", spec=spec))
            facts = build_doctor(snap, snap.target("local"), spec).gather(None)
            snap.close()
            baseline_store().save(name, "local", facts)
        console.print(f"  baseline {name!r}: {len(facts)} facts")

        with console.status("3/5 the dataset grows (16 prompts of length 80); the run restarts…"):
            if (
                _trainer(
                    "dataset", "--workspace", ws, "--expand", "--add", "16", "--new-lengths", "80"
                ).returncode
                != 0
            ):
                raise RuntimeError("dataset expansion failed")
            offset = log.stat().st_size
            # The emulation stands for the incident's torch 2.11 environment (see
            # examples/dflash_trainer/README.md): the race it opens is torch's own check.
            _write_launch(
                ws,
                [
                    "--steps",
                    "120",
                    "--seed",
                    _race_seed(ws, 80),
                    "--resume",
                    "--emulate-torch211-race",
                ],
            )
            code = _run_launch(ws)
        broken = _figure("broken", log, offset)
        console.print(f"  the run exited with code {code}: {broken.text()}")

        console.print("4/5 diagnose, plan lock-warmup, approve, apply, verify…")
        site = TrainerSite.for_workspace(str(ws), interpreter=sys.executable)
        config = SessionConfig(
            command="demo", target="local", mode="demo", spec=spec, baseline=name
        )
        session = Session.create(config)
        transport = session.target("local")
        approver: Approver
        if ask is None:

            def approver(plan: FixPlan) -> tuple[bool, str]:
                return True, "the demo's policy (approve the fix of a verified hypothesis)"
        else:

            def approver(plan: FixPlan) -> tuple[bool, str]:
                return ask(plan), "you, at the prompt"

        doctor = build_doctor(
            session,
            transport,
            spec,
            approver=approver,
            playbooks=adapt([LockWarmup()], site, transport),
        )
        with console.status("diagnosing and fixing (the fixed run trains to step 120)…"):
            outcome = run_session(
                session, doctor, start=DiagnosisState(target="local", mode="demo", baseline=name)
            )
            record_outcome(session, outcome.state)
        session.close()
        fixed_obs = outcome.state.outcome.observations if outcome.state.outcome else {}
        fixed_speed = fixed_obs.get("drafter_tok_s")
        fixed = RunFigure(
            "fixed",
            float(fixed_speed) if isinstance(fixed_speed, int | float) else None,
            int(fixed_obs.get("new_drafter_records") or 0),
            None,
            None,
        )
        console.print(f"5/5 done in {time.monotonic() - started:.0f}s; workspace {ws}")
        return outcome.state, [good, broken, fixed], session
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
