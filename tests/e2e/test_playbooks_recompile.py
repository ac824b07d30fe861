"""recompile-limit, as a transaction, against the reference trainer after shape churn.

The churned workspace: the good workspace (tests/lib/workspaces.py), its dataset grown by a
new length (80), run with a recompile limit of 1 — fewer than its two lengths — so torch
stops compiling the second length each device meets and runs it eager, saying so in the
stdout log. Each test copies it and runs the playbook on the copy for real.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from examples.demo.run import reference_site
from playbooks import ApplyError, RecompileLimit, Remote, TrainerSite, Transaction
from playbooks.recompile_limit import WARNING
from tests.lib.workspaces import SMALL, Scenario, clone, gather_local, trainer
from tools.transport import LocalTransport

pytestmark = [pytest.mark.timeout(600)]

EAGER_FLEX = "flex_attention called without torch.compile()"
# What dynamo logs when it stops recompiling a frame (torch/_dynamo/convert_frame.py).
RECOMPILE_LIMIT_HIT = "torch._dynamo hit config.recompile_limit"
# The trainer announces each device's first call of a shape; q is [batch, heads, len, dim].
FIRST_80 = re.compile(r"first flex_attention call on sim:\d for \w+ q=\[\d+, \d+, 80, ")
# 20 steps from scratch: the drafter takes the first 20 batches, which hold the whole
# first epoch (16 batches of length 64, 2 of length 80), so every run meets both lengths.
FLAGS = ["--steps", "20"]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_launch(ws: Path, *flags: str) -> None:
    line = shlex.join(["exec", sys.executable, "train_dflash.py", *SMALL, *flags])
    (ws / "launch.sh").write_text(f"#!/bin/sh\n# the trainer's launch file\n{line}\n")


def run_launch(ws: Path) -> None:
    run = subprocess.run(["sh", "launch.sh"], cwd=ws, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


@dataclass(frozen=True)
class Churned:
    ws: Path
    stdout_log: str  # what the churned run wrote


@pytest.fixture(scope="module")
def churned(tmp_path_factory: pytest.TempPathFactory, good_workspace: Path) -> Churned:
    # torch warns of an eager flex_attention call once per process, and marks it shown
    # even when it skips the warning because a compilation is in progress at that moment
    # (torch.nn.attention.flex_attention._warn_once): with threads compiling side by side
    # on a loaded machine the warning can be swallowed for the whole run (seen once). A
    # fresh copy is run again, at most twice; the hit limit alone fails at once.
    for attempt in range(3):
        ws = clone(good_workspace, tmp_path_factory.mktemp(f"churn{attempt}") / "ws")
        grown = trainer(
            "dataset", "--workspace", ws, "--expand", "--add", "16", "--new-lengths", "80"
        )
        assert grown.returncode == 0, grown.stderr
        write_launch(ws, *FLAGS, "--recompile-limit", "1")
        run_launch(ws)
        log = (ws / "checkpoints" / "train_stdout.log").read_text()
        assert f"{RECOMPILE_LIMIT_HIT} (1)" in log, log[-3000:]
        if EAGER_FLEX in log:
            break
    # The evidence the playbook's preconditions look for, from torch itself.
    assert EAGER_FLEX in log, log[-3000:]
    return Churned(ws, log)


@pytest.fixture
def site(churned: Churned, tmp_path: Path) -> TrainerSite:
    ws = clone(churned.ws, tmp_path / "ws")
    return reference_site(ws)


def transaction(site: TrainerSite) -> Transaction:
    remote = Remote(LocalTransport(), interpreter=sys.executable)
    # Throughput is compared with 1 tok/s, as in tests/e2e/test_playbooks.py: on two shared
    # cores a run with a cold compile in its first 20 steps is too noisy for 0.9× a baseline.
    return Transaction(RecompileLimit(), site, remote, baseline_tok_s=1.0, run_timeout=300)


@pytest.mark.torch
@pytest.mark.slow
def test_plan_writes_nothing_and_derives_the_limit_from_the_facts(site: TrainerSite) -> None:
    """Two distinct lengths, a limit of 1 hit: the plan raises it to 2 × 2 on the exec
    line, says which facts it came from, and writes nothing."""
    launch = Path(site.launch_file)
    before = sha(launch)
    listing = sorted(str(p) for p in Path(site.workspace).rglob("*"))
    plan = transaction(site).plan()
    assert sha(launch) == before
    assert sorted(str(p) for p in Path(site.workspace).rglob("*")) == listing
    assert "-exec " in plan.diff and "--recompile-limit 1" in plan.diff
    assert "+exec " in plan.diff and "--recompile-limit 4" in plan.diff
    assert plan.preconditions[site.launch_file] == before
    assert "torch hit its recompile limit of 1" in plan.steps[0]
    assert "2 distinct prompt lengths" in plan.steps[0] and "every line" in plan.steps[0]
    assert any(
        "no new recompile-limit warning lines (recompile_limit in the console log)" in s
        for s in plan.steps
    )


@pytest.mark.torch
@pytest.mark.slow
def test_apply_compiles_every_length_and_a_second_apply_changes_nothing(
    site: TrainerSite, churned: Churned
) -> None:
    """After the fix the restarted run meets length 80 and compiles it: neither torch's
    recompile-limit warning nor its uncompiled-flex warning is in its log lines."""
    log = Path(site.stdout_log)
    offset = log.stat().st_size
    tx = transaction(site)
    outcome = tx.apply(tx.plan())
    assert outcome.status == "applied", outcome
    assert outcome.observations["signature"] == "recompile-limit warning"
    assert outcome.observations["new_signature_lines"] == 0
    assert outcome.observations["new_drafter_records"]
    assert "no recompile-limit warning and no FX-trace error" in outcome.detail
    fresh = log.read_bytes()[offset:].decode()
    assert FIRST_80.search(fresh), fresh[-3000:]  # the new length was met…
    assert RECOMPILE_LIMIT_HIT not in fresh and EAGER_FLEX not in fresh  # …and compiled
    assert FIRST_80.search(churned.stdout_log)  # the same length met before the fix
    assert "--recompile-limit 4" in Path(site.launch_file).read_text()
    after = sha(Path(site.launch_file))
    again = transaction(site)
    second = again.apply(again.plan())
    assert second.status == "already_applied"
    assert sha(Path(site.launch_file)) == after


@pytest.mark.torch
@pytest.mark.slow
def test_a_precondition_gone_after_the_approval_aborts(site: TrainerSite) -> None:
    """The log was rotated between plan and apply: planned again, the fix rests on no
    warning any more, so the apply aborts and writes nothing."""
    tx = transaction(site)
    plan = tx.plan()
    log = Path(site.stdout_log)
    log.rename(log.with_name(log.name + ".1"))  # as logrotate's create mode does
    log.touch()
    before = sha(Path(site.launch_file))
    outcome = tx.apply(plan)
    assert outcome.status == "aborted", outcome
    assert outcome.detail.startswith("a precondition no longer holds: precondition not met")
    assert WARNING.label in outcome.detail and RECOMPILE_LIMIT_HIT in outcome.detail
    assert sha(Path(site.launch_file)) == before


@pytest.mark.torch
@pytest.mark.slow
def test_without_torchs_warning_the_fix_is_not_planned(
    good_workspace: Path, tmp_path: Path
) -> None:
    """The good run never hit the limit: a higher one would change nothing, so the plan
    is refused, naming the missing warning, and nothing is written."""
    ws = clone(good_workspace, tmp_path / "ws")
    write_launch(ws, *FLAGS)
    site = reference_site(ws)
    before = sha(ws / "launch.sh")
    with pytest.raises(ApplyError, match=re.escape(f"precondition not met: no {WARNING.label}")):
        transaction(site).plan()
    assert sha(ws / "launch.sh") == before


@pytest.mark.torch
@pytest.mark.slow
def test_diagnose_offers_the_fix_for_verified_shape_churn(
    good_workspace: Path, churned: Churned, tmp_path: Path
) -> None:
    """`diagnose --plan-only` against the good state: the dataset grew, shape churn is
    verified, and recompile-limit is planned (its diff shown, nothing written)."""
    from tests.lib.cli import cli

    # The baseline's facts name their files by path: take them at the path the churned
    # copy will have, from a copy of the good workspace, then put the churned one there.
    ws = clone(good_workspace, tmp_path / "ws")
    Scenario(ws, gather_local(ws)).install_baseline("good")
    shutil.rmtree(ws)
    clone(churned.ws, ws)
    site = reference_site(ws)
    before = sha(Path(site.launch_file))
    result = cli(
        "-q",
        "diagnose",
        "--target",
        "local",
        "--workspace",
        site.workspace,
        "--interpreter",
        sys.executable,
        "--baseline",
        "good",
        "--plan-only",
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    fix = next(s for s in report["sections"] if s["title"] == "fix: recompile-limit")
    texts = [line["text"] for line in fix["lines"]]
    assert "plan only: nothing was written" in texts
    assert any("--recompile-limit 4" in t for t in texts)
    assert sha(Path(site.launch_file)) == before
