"""Diagnosis end to end on trainers that are not the reference one (issue 12's "Done
when"): Hugging Face ``transformers.Trainer`` and PyTorch Lightning run for real, a
DFlash-like threaded trainer of its own layout, SpecForge's and torchtune's layouts.

Every case goes through the real CLI as a user would: ``snapshot --name good`` while the
workspace is healthy, the change, then ``diagnose --target local --workspace WS
--non-interactive --json`` (with ``--baseline good`` when a snapshot was taken), and the
asserts read the JSON report. The workspaces are tests/lib/foreign_trainers.py's.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agent.report.model import SCHEMA
from tests.lib import oracle
from tests.lib.foreign_trainers import CLI, Workspace, cli, offline_env
from tests.lib.torch_error_texts import RECOMPILE_LIMIT, RECOMPILE_LIMIT_OLD

pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.timeout(300)]

# The crash family (issue 12, "Crashes are answers"): a worker or the run ended by an
# exception the stdout log states.
CRASH = "crash_stated"


def diagnose(ws: Path, state: Path, *extra: str, discover: bool = False) -> dict[str, Any]:
    """The JSON report of ``diagnose``; a CLI that fails prints why. The trainer's Python
    is named (``--interpreter``) unless the case is about ``discover``-ing it."""
    args = ["diagnose", "--target", "local", "--workspace", str(ws), "--non-interactive"]
    if not discover:
        args += ["--interpreter", sys.executable]
    run = cli(*args, "--json", *extra, state=state)
    assert run.stdout.strip(), f"{CLI.name} diagnose rc {run.returncode}: {run.stderr[-4000:]}"
    report: dict[str, Any] = json.loads(run.stdout)
    # The document has the shape the shipped schema writes down (README: Guided, …).
    jsonschema.validate(report, json.loads(SCHEMA.read_text()))
    # Every speed figure it holds is recomputed from the log by the independent oracle.
    assert oracle.check_report(report) == [], explain(report)
    return report


def explain(report: dict[str, Any]) -> str:
    """The verdict, the symptoms, and the ranked hypotheses with their claims, for a
    failing assert."""
    lines = [f"verdict: {report['verdict']}"]
    for section in report["sections"][:1]:
        lines += [f"{section['title']}: {line['text']}" for line in section["lines"]]
    for h in report["hypotheses"]:
        lines.append(f"{h['kind']}: {h['status']}")
        lines += [f"  {c['status']}: {c['text']}" for c in h["claims"]]
    return "\n".join(lines)


def kinds(report: dict[str, Any], status: str) -> set[str]:
    return {h["kind"] for h in report["hypotheses"] if h["status"] == status}


def top(report: dict[str, Any]) -> dict[str, Any]:
    assert report["hypotheses"], explain(report)
    first: dict[str, Any] = report["hypotheses"][0]
    return first


def checked(report: dict[str, Any]) -> list[str]:
    """The lines of the report's "what was checked" section."""
    section = next((s for s in report["sections"] if s["title"] == "what was checked"), None)
    assert section is not None, [s["title"] for s in report["sections"]]
    return [line["text"] for line in section["lines"]]


def assert_no_fault(report: dict[str, Any], *, remedy: str | None = None) -> None:
    """No family verified, with what was checked listed. The symptoms say the judged
    throughput held steady, and the verdict is "no fault found"; or, for a log that
    records no speed (a Trainer's default log_history, Lightning's metrics.csv without a
    throughput callback), that its speed is not observed and what would make it so
    (``remedy``), and the verdict is "insufficient evidence": "no fault found" needs the
    run's speed observed."""
    verdict = "no fault found" if remedy is None else "insufficient evidence"
    assert report["verdict"] == verdict, explain(report)
    assert not kinds(report, "verified"), explain(report)
    families = {line.split(":", 1)[0] for line in checked(report)}
    assert {"environment_drift", "script_changed", "checkpoint_integrity"} <= families, families
    # The report opens with what the run did: its judged throughput held steady.
    symptoms = report["sections"][0]
    assert symptoms["title"] == "symptoms", explain(report)
    said = [line["text"] for line in symptoms["lines"]]
    # Steady, or faster once it warmed up (three threads compiling on a loaded machine
    # can take a third of a 40-step run, so the last quarter climbs with no change point
    # placed): a healthy run never shows a drop or a slowdown.
    held = [
        t
        for t in said
        if t.endswith(" is steady (verified)")
        or " rose to " in t
        or " climbed in its last quarter" in t
    ]
    unknown = [t for t in said if t.startswith("the run's speed is not observed: ")]
    assert (bool(held), bool(unknown)) == (remedy is None, remedy is not None), said
    if remedy is not None:
        assert remedy in unknown[0], unknown
    assert not any(
        " fell to " in t or " slowed in its last quarter" in t or "possible drop" in t for t in said
    ), said
    assert all(line["cites"] for line in symptoms["lines"]), symptoms


def assert_found(report: dict[str, Any], kind: str) -> dict[str, Any]:
    """A fault found, ``kind`` verified and ranked first, its claims holding and cited."""
    assert report["verdict"] == "fault found", explain(report)
    first = top(report)
    assert first["kind"] == kind and first["status"] == "verified", explain(report)
    assert all(c["cites"] for c in first["claims"]), explain(report)
    return first


def cited_values(report: dict[str, Any], state: Path, hyp: dict[str, Any]) -> list[Any]:
    """The values of the facts ``hyp``'s claims cite, as the session's ledger holds them."""
    ledger = state / "dflash-doctor" / "sessions" / report["session"] / "ledger.jsonl"
    ids = {fact_id for claim in hyp["claims"] for fact_id in claim["cites"]}
    facts = [json.loads(line) for line in ledger.read_text().splitlines() if line]
    return [f["value"] for f in facts if f["id"] in ids]


def checkpoint_file(values: list[Any], step: str, name: str) -> dict[str, Any]:
    """The entry for file ``name`` of checkpoint ``step`` in cited checkpoints facts."""
    for value in values:
        for entry in value.get("steps", []) if isinstance(value, dict) else []:
            if entry.get("name") == step:
                found: dict[str, Any] = next(f for f in entry["files"] if f["name"] == name)
                return found
    raise AssertionError(f"no cited fact lists {step}/{name}")


def fresh(src: Workspace, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of a good workspace (at the path its snapshot was taken of, when it has one;
    its launch file starts with ``cd "$(dirname "$0")"``) and the test's state directory."""
    if src.live is not None:
        return src.checkout(tmp_path)
    ws = tmp_path / "ws"
    shutil.copytree(src.ws, ws, symlinks=True)
    return ws, src.state_for(tmp_path)


def truncate(path: Path) -> None:
    """Cut a real checkpoint file to half its size, as an interrupted copy leaves it."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def last(paths: list[Path]) -> Path:
    """The newest of numbered checkpoints: the highest step in the name."""
    return max(paths, key=lambda p: int(re.findall(r"\d+", p.name)[-1]))


# --- transformers.Trainer ---------------------------------------------------------


# Trainer's default logging states no speed; this is what turns it on.
HF_REMEDY = "include_num_input_tokens_seen=True"
LIGHTNING_REMEDY = "ThroughputMonitor"


def test_hf_trainer_healthy_without_a_speed_is_insufficient_evidence(
    hf_workspace: Workspace, tmp_path: Path
) -> None:
    """A healthy transformers.Trainer run whose log holds no speed is "insufficient
    evidence", naming the Trainer setting that would log it."""
    ws, state = fresh(hf_workspace, tmp_path)
    assert_no_fault(diagnose(ws, state, "--baseline", "good"), remedy=HF_REMEDY)


def test_hf_trainer_healthy_without_a_snapshot_finds_nothing_and_names_the_speed_switch(
    hf_workspace: Workspace, tmp_path: Path
) -> None:
    """The baseline derived from the workspace itself (its checkpoints' records, the
    saved pip freeze) matches what is installed: no family holds. The trainer's Python is
    not named: it is found (the launch file names it). The speed is not logged, so the
    answer is "insufficient evidence" naming Trainer's switch for it."""
    ws, state = fresh(hf_workspace, tmp_path)
    assert_no_fault(diagnose(ws, state, discover=True), remedy=HF_REMEDY)


def test_hf_trainer_script_changed(hf_workspace: Workspace, tmp_path: Path) -> None:
    """The Trainer's train.py edited since the baseline: script_changed is found first and
    cites the script's path."""
    ws, state = fresh(hf_workspace, tmp_path)
    script = ws / "train.py"
    script.write_text(script.read_text().replace("learning_rate=1e-3", "learning_rate=3e-3"))
    first = assert_found(diagnose(ws, state, "--baseline", "good"), "script_changed")
    assert any(f"{ws}/train.py" in c["text"] for c in first["claims"]), first


def test_hf_trainer_truncated_safetensors(hf_workspace: Workspace, tmp_path: Path) -> None:
    """The newest Trainer checkpoint's model.safetensors truncated: checkpoint integrity is
    found, and its cited fact marks that file as not ok."""
    ws, state = fresh(hf_workspace, tmp_path)
    newest = last(list((ws / "out").glob("checkpoint-*")))
    truncate(newest / "model.safetensors")
    report = diagnose(ws, state, "--baseline", "good")
    first = assert_found(report, "checkpoint_integrity")
    cut = checkpoint_file(cited_values(report, state, first), newest.name, "model.safetensors")
    assert cut["ok"] is False, cut


def test_hf_trainer_environment_drift_from_its_records(
    hf_workspace: Workspace, tmp_path: Path
) -> None:
    """The run's records say it ran under other versions than the installed ones: the
    checkpoints' ``config.json`` (``transformers_version``) and the launch file's saved
    ``pip freeze`` (torch, transformers). No snapshot: the derived baseline compares them."""
    ws, state = fresh(hf_workspace, tmp_path)
    installed_tf = metadata.version("transformers")
    for config in ws.glob("out/checkpoint-*/config.json"):
        doc = json.loads(config.read_text())
        assert doc["transformers_version"] == installed_tf
        doc["transformers_version"] = "4.57.1"
        config.write_text(json.dumps(doc, indent=2))
    freeze = ws / "pip_freeze.txt"
    lines = freeze.read_text().splitlines()
    assert any(line.startswith("torch==") for line in lines), lines
    drifted = [
        "torch==2.11.0+cu130"
        if line.startswith("torch==")
        else "transformers==4.57.1"
        if line.startswith("transformers==")
        else line
        for line in lines
    ]
    freeze.write_text("\n".join(drifted) + "\n")
    first = assert_found(diagnose(ws, state), "environment_drift")
    said = " ".join(c["text"] for c in first["claims"])
    assert "4.57.1" in said or "2.11.0+cu130" in said, first


# --- PyTorch Lightning ------------------------------------------------------------


def test_lightning_healthy_without_a_speed_is_insufficient_evidence(
    lightning_workspace: Workspace, tmp_path: Path
) -> None:
    """A healthy Lightning run with no throughput logged is "insufficient evidence", naming
    ThroughputMonitor as what would make its speed observable."""
    ws, state = fresh(lightning_workspace, tmp_path)
    assert_no_fault(diagnose(ws, state, "--baseline", "good"), remedy=LIGHTNING_REMEDY)


def test_lightning_healthy_without_a_snapshot_finds_no_drift(
    lightning_workspace: Workspace, tmp_path: Path
) -> None:
    """What ``env.json`` and the checkpoints record is what is installed: no drift."""
    ws, state = fresh(lightning_workspace, tmp_path)
    assert_no_fault(diagnose(ws, state), remedy=LIGHTNING_REMEDY)


def test_lightning_with_its_throughput_monitor_is_judged_by_its_own_figure(
    lightning_throughput_workspace: Workspace, tmp_path: Path
) -> None:
    """Lightning's ThroughputMonitor states the speed (on one device it logs only the
    device's figures: train/device/items_per_sec): it is the figure, in Lightning's unit,
    held; no fault found."""
    ws, state = fresh(lightning_throughput_workspace, tmp_path)
    report = diagnose(ws, state)
    assert_no_fault(report)
    (log,) = [f["value"] for f in report["facts"] if f["probe"] == "trainlog"]
    speed = log["speed"]
    assert (speed["kind"], speed["field"], speed["unit"]) == (
        "stated",
        "train/device/items_per_sec",
        "items/s",
    )
    # Judged in its own unit: steady, or climbing in its last quarter (a loaded machine
    # can slow the run's first windows; assert_no_fault accepts both as held).
    symptoms = [line["text"] for line in report["sections"][0]["lines"]]
    held = ("items/s is steady", "items/s climbed in its last quarter")
    assert any(t.startswith(held) for t in symptoms), symptoms


def test_lightning_truncated_ckpt(lightning_workspace: Workspace, tmp_path: Path) -> None:
    """The newest of Lightning's ``.ckpt`` files truncated: checkpoint integrity is found
    first."""
    ws, state = fresh(lightning_workspace, tmp_path)
    ckpts = list(ws.glob("lightning_logs/version_0/checkpoints/epoch=*-step=*.ckpt"))
    assert len(ckpts) == 3, ckpts
    truncate(last(ckpts))
    assert_found(diagnose(ws, state, "--baseline", "good"), "checkpoint_integrity")


def test_lightning_environment_drift_from_its_saved_environment(
    lightning_workspace: Workspace, tmp_path: Path
) -> None:
    """``env.json``, which the script writes at start, records another torch than the
    installed one (``{"torch": "2.11.0+cu130", ...}``, as the issue's ``meta.json``)."""
    ws, state = fresh(lightning_workspace, tmp_path)
    env = json.loads((ws / "env.json").read_text())
    assert env["torch"] == metadata.version("torch")
    env["torch"] = "2.11.0+cu130"
    (ws / "env.json").write_text(json.dumps(env, indent=1))
    first = assert_found(diagnose(ws, state), "environment_drift")
    assert any("2.11.0+cu130" in c["text"] for c in first["claims"]), first


# --- a DFlash-like threaded trainer of its own layout -----------------------------


def test_threads_trainer_healthy_is_no_fault_found(
    threads_workspace: Workspace, tmp_path: Path
) -> None:
    """The healthy threaded trainer, which logs its speed, is "no fault found" with what was
    checked listed."""
    ws, state = fresh(threads_workspace, tmp_path)
    assert_no_fault(diagnose(ws, state, "--baseline", "good"))


def test_fx_trace_error_in_a_worker_thread(fx_crash_workspace: Workspace, tmp_path: Path) -> None:
    """Torch raised its FX-tracing error in worker ``drafter-1``: the FX race, verified from
    the error line and the thread, not the generic crash family."""
    ws = fx_crash_workspace.ws
    report = diagnose(ws, fx_crash_workspace.state_for(tmp_path))
    first = assert_found(report, "fx_trace_race")
    said = [c["text"] for c in first["claims"]]
    assert any(s.startswith("first FX-trace error") for s in said), said
    assert any(s.startswith("exceptions escaping a thread") for s in said), said
    # The script replaces nothing of torch's FX check: it sets dynamo's recompile_limit,
    # a configuration value, so no monkeypatch of the check can be verified.
    assert "ineffective_monkeypatch" not in kinds(report, "verified"), explain(report)


def crash_case(found: Workspace, tmp_path: Path, exception: str) -> None:
    """A worker died of ``exception``: the crash family is verified first, citing the
    exception line and the thread; the FX race does not claim it."""
    report = diagnose(found.ws, found.state_for(tmp_path))
    first = assert_found(report, CRASH)
    said = " ".join(c["text"] for c in first["claims"])
    assert exception in said, first
    assert "drafter-1" in said, first
    assert "fx_trace_race" not in kinds(report, "verified"), explain(report)
    assert report["verdict"] != "insufficient evidence"


def test_cuda_oom_in_a_worker_thread(oom_crash_workspace: Workspace, tmp_path: Path) -> None:
    """A CUDA out-of-memory in a worker thread is the crash found first, naming the
    exception and the thread; the FX race does not claim it."""
    crash_case(oom_crash_workspace, tmp_path, "OutOfMemoryError")


def test_nccl_timeout_in_a_worker_thread(nccl_crash_workspace: Workspace, tmp_path: Path) -> None:
    """An NCCL timeout (DistBackendError) in a worker thread is the crash found first,
    naming the exception and the thread; the FX race does not claim it."""
    crash_case(nccl_crash_workspace, tmp_path, "DistBackendError")


def recompile_case(report: dict[str, Any]) -> None:
    """Past the recompile limit after the dataset grew: the family the rules assign
    (eager fallback, shape churn, or the limit set where it does not apply) is first,
    and eager fallback is proposed with the recompile-limit warning found in the log.
    threads_train.py raises the limit to 64 in its main thread and its drafter threads
    hit torch's default: the limit set where it does not apply is verified, citing that
    line, what this torch's sources say of config overrides, and torch's warning."""
    assert report["verdict"] == "fault found", explain(report)
    first = top(report)
    assert first["kind"] in {
        "silent_eager_fallback",
        "dataset_shape_churn",
        "limit_not_applied",
    }, explain(report)
    assert first["status"] == "verified", explain(report)
    eager = [h for h in report["hypotheses"] if h["kind"] == "silent_eager_fallback"]
    assert eager, explain(report)
    warned = [c for c in eager[0]["claims"] if c["text"].startswith("recompile-limit warnings")]
    assert warned and warned[0]["status"] == "holds", explain(report)
    (limit,) = [h for h in report["hypotheses"] if h["kind"] == "limit_not_applied"]
    assert limit["status"] == "verified", explain(report)
    said = [c["text"] for c in limit["claims"]]
    line = next(
        n
        for n, text in enumerate(
            (Path(__file__).parents[1] / "lib/foreign/threads_train.py").read_text().splitlines(), 1
        )
        if "recompile_limit = 64" in text
    )
    assert any(
        t.startswith("recompile limit the script sets at ") and f"train.py:{line} = 64" in t
        for t in said
    ), said
    assert any("torch/utils/_config_module.py:" in t and "ContextVar" in t for t in said), said
    assert any(
        "hit config.recompile_limit (8)" in t or "hit config.cache_size_limit (8)" in t
        for t in said
    ), said


def test_recompile_limit_in_current_wording(churn_workspace: Workspace, tmp_path: Path) -> None:
    """Torch's own warning of this torch (``hit config.recompile_limit (8)``), three
    drafter groups in the log."""
    state = churn_workspace.state_for(tmp_path)
    report = diagnose(churn_workspace.ws, state, "--baseline", "good")
    recompile_case(report)
    # Its steps go on and its speed is stated per record: only the console's line that it
    # loaded the step-40 checkpoint, printed after step 40's lines, tells the resume.
    symptoms = [line["text"] for line in report["sections"][0]["lines"]]
    restarted = [t for t in symptoms if t.startswith("the run restarted at step 40 ")]
    assert restarted and "loaded checkpoint ckpt/epoch_0_step_40/drafter.pt" in restarted[0]


def test_recompile_limit_in_older_torch_wording(
    threads_workspace: Workspace, churn_workspace: Workspace, tmp_path: Path
) -> None:
    """The same run as an older torch logs it, whose warning named ``cache_size_limit``:
    the good state is snapshotted at this test's path, then the churned run's files take
    its place with torch's current warning line replaced by the older one."""
    ws, state = fresh(threads_workspace, tmp_path)
    shutil.rmtree(ws)
    shutil.copytree(churn_workspace.ws, ws, symlinks=True)
    log = ws / "train.log"
    lines = log.read_text().splitlines()
    assert any(RECOMPILE_LIMIT in line for line in lines), "no recompile-limit warning"
    log.write_text("\n".join(line.replace(RECOMPILE_LIMIT, RECOMPILE_LIMIT_OLD) for line in lines))
    recompile_case(diagnose(ws, state, "--baseline", "good"))


# --- layouts of trainers that cannot run here -------------------------------------


def test_specforge_layout_healthy_without_a_speed_is_insufficient_evidence(
    written_layouts: dict[str, Workspace], tmp_path: Path
) -> None:
    """A healthy run in SpecForge's layout with no speed logged is "insufficient evidence",
    saying a tokens/s field would settle it."""
    ws, state = fresh(written_layouts["specforge"], tmp_path)
    report = diagnose(ws, state)
    assert_no_fault(report, remedy="a tokens/s field")


def test_specforge_layout_truncated_checkpoint(
    written_layouts: dict[str, Workspace], tmp_path: Path
) -> None:
    """A truncated model.safetensors in SpecForge's checkpoint layout is found as a
    checkpoint integrity fault."""
    ws, state = fresh(written_layouts["specforge"], tmp_path)
    truncate(ws / "outputs" / "qwen3-8b-dflash" / "epoch_1_step_120" / "model.safetensors")
    assert_found(diagnose(ws, state, "--baseline", "good"), "checkpoint_integrity")


def test_torchtune_layout_healthy_is_no_fault_found(
    written_layouts: dict[str, Workspace], tmp_path: Path
) -> None:
    """A healthy run in torchtune's layout is "no fault found", with what was checked
    listed."""
    ws, state = fresh(written_layouts["torchtune"], tmp_path)
    report = diagnose(ws, state)
    assert_no_fault(report)


HANG_AT_45 = ("--fault", "hang", "--fault-step", "45")


def test_a_live_trainer_started_after_the_log_began_is_a_restart(
    threads_workspace: Workspace, tmp_path: Path
) -> None:
    """The good run's log (steps 5-40, wall-clock times), then the run started again
    from its step-40 checkpoint by a new process whose console went elsewhere (a
    ``nohup`` relaunch): its steps go on and its speed is stated per record, so only the
    live process's start time, after the log's first record, tells the restart. The
    process hangs in one worker (alive) while the doctor looks."""
    ws, state = fresh(threads_workspace, tmp_path)
    console = tmp_path / "nohup.out"
    with console.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "train.py", "--steps", "60", "--resume", *HANG_AT_45],
            cwd=ws,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=offline_env(),
        )
    try:
        deadline = time.monotonic() + 120
        while b"loaded checkpoint" not in console.read_bytes():
            assert proc.poll() is None, console.read_text()[-2000:]
            assert time.monotonic() < deadline, console.read_text()[-2000:]
            time.sleep(0.2)
        report = diagnose(ws, state)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    symptoms = [line["text"] for line in report["sections"][0]["lines"]]
    restarted = [t for t in symptoms if t.startswith("the run restarted (trainer pid ")]
    assert restarted, symptoms
    assert f"trainer pid {proc.pid} started " in restarted[0], restarted
    assert any(
        t.startswith(f"start time of trainer pid {proc.pid} = ") and "time of the train log's" in t
        for t in symptoms
    ), symptoms
