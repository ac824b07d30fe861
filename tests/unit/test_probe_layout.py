"""layout: what a workspace holds, found by looking, on real directories laid out as each
trainer family leaves them (the reference trainer, Hugging Face's Trainer, Lightning,
SpecForge's DFlash trainer, torchtune), and on trees that try to trap a walk: a FIFO, a
symlink loop, a symlink out of the workspace, a tree past the entry cap.

The foreign layouts follow the public sources that write them:
``transformers/trainer.py`` (``checkpoint-N/`` with ``trainer_state.json``,
``model.safetensors``, ``optimizer.pt``, ``scheduler.pt``, ``rng_state.pth``,
``training_args.bin``; ``runs/`` for tensorboard), Lightning's ``CSVLogger`` and
``ModelCheckpoint`` (``lightning_logs/version_K/{metrics.csv,hparams.yaml}``,
``checkpoints/epoch=E-step=S.ckpt``), SpecForge's ``scripts/train_dflash.py``
(``save_checkpoint``: ``OUTPUT/epoch_E_step_S/`` with ``training_state.pt``, the draft
model's ``save_pretrained`` files and a copy of ``dflash.py``; ``record_metrics`` prints
``Train - Step N [N/T?], Loss: x, Acc: y`` through logging), torchtune's ``DiskLogger``
(``log_<unix time>.txt``, lines ``Step N | key:value ...``) and its HF checkpointer
(``OUTPUT/epoch_N/`` holding the model's safetensors).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.lib.probe_workspace import make_workspace, write_pt
from tools.probes import checkpoints, layout
from tools.probes._common import Context, ProbeFailure
from tools.sweep import SweepSpec, sweep
from tools.transport import LocalTransport


def discover(root: Path, **kw: Any) -> dict[str, Any]:
    """A fresh walk (the memo would hand back an earlier test's tree for a reused path)."""
    layout._MEMO.clear()
    return dict(layout.discover(str(root), **kw))


def paths(value: dict[str, Any], role: str) -> list[str]:
    return [c["path"] for c in value[role] if c.get("path")]


def hf_output(root: Path, steps: tuple[int, ...] = (10, 20)) -> Path:
    """A Hugging Face ``Trainer`` output_dir after ``save_steps=10``."""
    for step in steps:
        d = root / f"checkpoint-{step}"
        d.mkdir(parents=True)
        (d / "config.json").write_text(json.dumps({"transformers_version": "4.57.1"}))
        (d / "generation_config.json").write_text("{}")
        (d / "model.safetensors").write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
        for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth", "training_args.bin"):
            write_pt(d / name)
        state = {"global_step": step, "log_history": [{"loss": 2.0, "step": step}]}
        (d / "trainer_state.json").write_text(json.dumps(state))
    runs = root / "runs" / "Dec01_08-00-00_host"
    runs.mkdir(parents=True)
    (runs / "events.out.tfevents.1764576000.host.1.0").write_bytes(b"\x00" * 64)
    (root / "train.py").write_text("from transformers import Trainer\n")
    (root / "nohup.out").write_text("{'loss': 2.0, 'grad_norm': 1.0, 'epoch': 0.5}\n")
    return root


def lightning_root(root: Path) -> Path:
    version = root / "lightning_logs" / "version_0"
    (version / "checkpoints").mkdir(parents=True)
    (version / "hparams.yaml").write_text("lr: 0.001\n")
    (version / "metrics.csv").write_text("epoch,step,train_loss\n0,9,2.1\n0,19,1.9\n")
    write_pt(version / "checkpoints" / "epoch=0-step=40.ckpt")
    (root / "train.py").write_text("import lightning\n")
    return root


def specforge_root(root: Path) -> Path:
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "train_dflash.py").write_text("import torch\n")
    for epoch, step in ((0, 1000), (1, 2000)):
        d = root / "outputs" / f"epoch_{epoch}_step_{step}"
        d.mkdir(parents=True)
        write_pt(d / "training_state.pt")
        (d / "config.json").write_text("{}")
        (d / "model.safetensors").write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
        (d / "dflash.py").write_text("# copied by save_checkpoint\n")
    (root / "data").mkdir()
    (root / "data" / "train.jsonl").write_text(
        json.dumps({"conversations": [{"role": "user", "content": "hi"}]}) + "\n"
    )
    lines = [
        f"12/01/2026 08:00:{i:02d} - INFO - specforge - Train - Step {i * 50} "
        f"[{i * 50}/2000?], Loss: 1.{i:02d}00, Acc: 0.3000"
        for i in range(1, 6)
    ]
    (root / "train.log").write_text("\n".join(lines) + "\n")
    (root / "launch.sh").write_text(
        "#!/bin/sh\nexport TORCHINDUCTOR_CACHE_DIR=/tmp/sf-cache\n"
        "torchrun --nproc_per_node 8 scripts/train_dflash.py --output-dir outputs\n"
    )
    return root


def torchtune_root(root: Path) -> Path:
    for epoch in (0, 1):
        d = root / f"epoch_{epoch}"
        d.mkdir(parents=True)
        (d / "model-00001-of-00001.safetensors").write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}")
        (d / "config.json").write_text("{}")
    (root / "logs").mkdir()
    (root / "logs" / "log_1764576000.txt").write_text(
        "Step 1 | loss:2.31 lr:2e-05 tokens_per_second_per_gpu:812.4\n"
        "Step 2 | loss:2.20 lr:2e-05 tokens_per_second_per_gpu:820.1\n"
    )
    (root / "epoch_notes").mkdir()  # an epoch-ish name without state: no checkpoint
    (root / "config.yaml").write_text("model: llama\n")
    return root


def test_reference_workspace_found_as_the_fixed_layout_had_it(tmp_path: Path) -> None:
    """The reference trainer's workspace yields exactly the paths the fixed layout named."""
    ws = make_workspace(tmp_path / "ws")
    v = discover(ws)
    assert paths(v, "checkpoint_dirs")[0] == str(ws / "checkpoints")
    assert v["checkpoint_dirs"][0]["entries"] == 2
    assert (v["train_logs"][0]["path"], v["train_logs"][0]["kind"]) == (
        str(ws / "checkpoints" / "train_log.jsonl"),
        "jsonl",
    )
    assert paths(v, "stdout_logs")[0] == str(ws / "checkpoints" / "train_stdout.log")
    assert paths(v, "scripts") == sorted(str(p) for p in ws.glob("*.py"))
    assert paths(v, "dataset") == sorted(str(p) for p in ws.glob("data/*.jsonl"))
    assert not v["truncated"] and all(c["why"] for c in v["checkpoint_dirs"] + v["train_logs"])


def test_hf_trainer_output_dir(tmp_path: Path) -> None:
    """The output dir itself holds the checkpoints; the newest trainer_state.json is the
    train log; nohup.out the console; a checkpoint's own files are not scripts or logs."""
    root = hf_output(tmp_path / "out")
    v = discover(root)
    assert v["checkpoint_dirs"][0]["path"] == str(root)
    assert v["checkpoint_dirs"][0]["examples"] == ["checkpoint-10", "checkpoint-20"]
    assert "checkpoint" in v["checkpoint_dirs"][0]["why"]
    first = v["train_logs"][0]
    assert first["kind"] == "trainer_state"
    assert first["path"] == str(root / "checkpoint-20" / "trainer_state.json")
    assert "as of checkpoint step 20" in first["why"]
    assert paths(v, "stdout_logs") == [str(root / "nohup.out")]
    assert paths(v, "scripts") == [str(root / "train.py")]
    assert not [p for p in paths(v, "configs") if "checkpoint-" in p]


def test_lightning_logs(tmp_path: Path) -> None:
    """A directory of checkpoint *files* counts; metrics.csv is a CSV train log."""
    root = lightning_root(tmp_path / "pl")
    v = discover(root)
    version = root / "lightning_logs" / "version_0"
    assert v["checkpoint_dirs"][0]["path"] == str(version / "checkpoints")
    assert v["checkpoint_dirs"][0]["examples"] == ["epoch=0-step=40.ckpt"]
    assert (v["train_logs"][0]["path"], v["train_logs"][0]["kind"]) == (
        str(version / "metrics.csv"),
        "csv",
    )
    assert v["train_logs"][0]["why"] == "CSV with a step column (step)"  # not its epoch
    assert str(version / "hparams.yaml") in paths(v, "configs")


def test_specforge_dflash(tmp_path: Path) -> None:
    """epoch_E_step_S directories; the logging lines are a text train log and the
    console; the launch file is found; the dflash.py copied into each checkpoint is not
    a training script."""
    root = specforge_root(tmp_path / "sf")
    v = discover(root)
    assert v["checkpoint_dirs"][0]["path"] == str(root / "outputs")
    assert "epoch_step" in v["checkpoint_dirs"][0]["why"]
    log = str(root / "train.log")
    assert log in paths(v, "stdout_logs")
    text = [c for c in v["train_logs"] if c["path"] == log]
    assert text and text[0]["kind"] == "text"
    assert paths(v, "scripts") == [str(root / "scripts" / "train_dflash.py")]
    assert paths(v, "launch_files") == [str(root / "launch.sh")]
    assert paths(v, "dataset") == [str(root / "data" / "train.jsonl")]


def test_torchtune(tmp_path: Path) -> None:
    """epoch_N/ directories holding a state file are checkpoints (one without is not);
    DiskLogger's log_<time>.txt is a text train log."""
    root = torchtune_root(tmp_path / "tt")
    v = discover(root)
    assert v["checkpoint_dirs"][0]["path"] == str(root)
    assert v["checkpoint_dirs"][0]["examples"] == ["epoch_0", "epoch_1"]
    assert (v["train_logs"][0]["path"], v["train_logs"][0]["kind"]) == (
        str(root / "logs" / "log_1764576000.txt"),
        "text",
    )


def test_environments_and_environment_files(tmp_path: Path) -> None:
    """A virtualenv and a conda env are found (and not walked into); saved environment
    lists are found by name."""
    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "python").write_text("")
    site = venv / "lib" / "python3.12" / "site-packages" / "torch"
    site.mkdir(parents=True)
    (site / "train.py").write_text("")
    conda = tmp_path / "env"
    (conda / "conda-meta").mkdir(parents=True)
    (conda / "bin").mkdir()
    (conda / "bin" / "python").write_text("")
    for name in ("requirements.txt", "pip_freeze.txt", "environment.yml", "run.env.json"):
        (tmp_path / name).write_text("torch==2.11.0\n")
    v = discover(tmp_path)
    assert {(c["kind"], c["python"]) for c in v["envs"]} == {
        ("venv", str(venv / "bin" / "python")),
        ("conda", str(conda / "bin" / "python")),
    }
    assert not [p for p in paths(v, "scripts") if ".venv" in p]
    assert sorted(paths(v, "env_files")) == sorted(
        str(tmp_path / n)
        for n in ("requirements.txt", "pip_freeze.txt", "environment.yml", "run.env.json")
    )


@pytest.mark.timeout(30)
def test_fifo_and_symlink_loops_do_not_trap_the_walk(tmp_path: Path) -> None:
    """A FIFO (even one named like a log) is listed, never opened; a symlink back to the
    root is seen once; a symlinked directory out of the workspace is not followed; each
    says why."""
    ws = make_workspace(tmp_path / "ws")
    os.mkfifo(ws / "stdout.log")
    os.mkfifo(ws / "checkpoints" / "metrics.jsonl")
    (ws / "loop").symlink_to(ws)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.py").write_text("")
    (ws / "mounted").symlink_to(outside)
    (ws / "dangling").symlink_to(tmp_path / "nothing")
    v = discover(ws)
    why = {c["path"]: c["why"] for c in v["unrecognised"] + v["skipped"]}
    assert why[str(ws / "stdout.log")] == "fifo: not opened"
    assert why[str(ws / "checkpoints" / "metrics.jsonl")] == "fifo: not opened"
    assert "already seen" in why[str(ws / "loop")]
    assert "outside the workspace" in why[str(ws / "mounted")]
    assert why[str(ws / "dangling")] == "broken symlink"
    assert str(ws / "stdout.log") not in paths(v, "stdout_logs")
    assert not [p for p in paths(v, "scripts") if "secret" in p]
    assert paths(v, "checkpoint_dirs") == [str(ws / "checkpoints")]


def test_huge_tree_stops_at_the_cap_and_says_so(tmp_path: Path) -> None:
    """Breadth first: what lies near the top is still found when the cap cuts the walk."""
    ws = make_workspace(tmp_path / "ws")
    bulk = ws / "zz_bulk"
    for i in range(40):
        d = bulk / f"d{i:02d}"
        d.mkdir(parents=True)
        for j in range(50):
            (d / f"f{j}").write_bytes(b"")
    v = discover(ws, max_entries=500)
    assert v["truncated"] and v["entries"] == 500
    assert paths(v, "checkpoint_dirs") == [str(ws / "checkpoints")]
    full = discover(ws)
    assert not full["truncated"] and full["entries"] > 2000


def test_deadline_cuts_the_walk(tmp_path: Path) -> None:
    """A walk whose deadline has passed stops at once and says it was truncated."""
    ws = make_workspace(tmp_path / "ws")
    v = discover(ws, deadline=time.monotonic() - 1)
    assert v["truncated"] and v["entries"] == 0


def test_unusable_root_fails_with_the_reason(tmp_path: Path) -> None:
    """A workspace that is missing, is a file, or was not given fails the probe with the reason."""
    (tmp_path / "file").write_text("x")
    for root, kind in ((tmp_path / "missing", "not_found"), (tmp_path / "file", "not_a_directory")):
        with pytest.raises(ProbeFailure) as err:
            layout.collect({"workspace": str(root)}, Context())
        assert err.value.kind == kind
    with pytest.raises(ProbeFailure, match="needs a workspace"):
        layout.collect({}, Context())


def test_discover_is_memoized_per_root(tmp_path: Path) -> None:
    """One walk per root and process: the probes that share a bundle process share it."""
    a = make_workspace(tmp_path / "a")
    layout._MEMO.clear()
    first = layout.discover(str(a))
    (a / "late.py").write_text("")
    assert layout.discover(str(a)) is first
    assert layout.discover(str(tmp_path)) is not first


def test_checkpoints_probe_reads_file_checkpoints_and_names_what_it_skips(tmp_path: Path) -> None:
    """Lightning's checkpoint files are checkpoints with a step and an epoch; everything
    else in the directory is listed with the reason it is not one."""
    d = tmp_path / "checkpoints"
    d.mkdir()
    write_pt(d / "epoch=0-step=40.ckpt")
    write_pt(d / "epoch=1-step=80.ckpt")
    write_pt(d / "last.ckpt")
    (d / "notes.txt").write_text("x")
    (d / "epoch_9").mkdir()
    out = checkpoints.collect({"path": str(d)}, Context())
    assert out["step_numbers"] == [40, 80] and out["epoch_numbers"] == [0, 1]
    assert [(s["name"], s["step"], s["epoch"]) for s in out["steps"]] == [
        ("epoch=0-step=40.ckpt", 40, 0),
        ("epoch=1-step=80.ckpt", 80, 1),
    ]
    assert out["steps"][0]["files"][0]["ok"] is True
    why = {e["name"]: e["why"] for e in out["other_entries"]}
    assert why == {
        "last.ckpt": "name carries no step",
        "notes.txt": "not a checkpoint (directory or checkpoint file)",
        "epoch_9": "an epoch-numbered directory without a state file in it",
    }


def test_checkpoints_probe_with_a_profile_pattern(tmp_path: Path) -> None:
    """A profile's checkpoint pattern decides which entries are steps and reads their numbers from
    its ``step`` group; a name it does not match is listed with why, and a pattern without that
    group is refused."""
    d = tmp_path / "ckpt"
    for name in ("snap_e0_s100", "snap_e0_s200", "step_300"):
        (d / name).mkdir(parents=True)
        write_pt(d / name / "model.pt")
    out = checkpoints.collect(
        {"path": str(d), "pattern": r"snap_e(?P<epoch>\d+)_s(?P<step>\d+)"}, Context()
    )
    assert out["step_numbers"] == [100, 200]
    assert out["other_entries"][0]["why"] == "name does not match the profile's checkpoint_pattern"
    with pytest.raises(ProbeFailure, match="needs a group named step"):
        checkpoints.collect({"path": str(d), "pattern": r"snap(\d+)"}, Context())


def test_one_round_trip_on_a_foreign_workspace(tmp_path: Path) -> None:
    """Given only the workspace, the real bundle finds a Hugging Face output dir's
    checkpoints, console log and script on the target, and each fact says how."""
    root = hf_output(tmp_path / "out")
    spec = SweepSpec.for_workspace(str(root), interpreter=sys.executable)
    result = sweep(
        LocalTransport(), spec, only=["layout", "checkpoints", "stdoutlog", "checksums", "caches"]
    )
    assert all(r.ok for r in result.results), [r.error_text for r in result.results]
    ckpt: Any = result["checkpoints"].value
    assert ckpt["step_numbers"] == [10, 20] and ckpt["source"]["path"] == str(root)
    assert "(checkpoint: checkpoint-10, checkpoint-20)" in ckpt["source"]["why"]
    stdout: Any = result["stdoutlog"].value
    assert stdout["source"]["path"] == str(root / "nohup.out")
    sums: Any = result["checksums"].value
    assert [f["path"] for f in sums["files"]] == [str(root / "train.py")]
    found: Any = result["caches"].value
    assert not [c for c in found["caches"] if c["cache"] == "extra"]  # none made up


def test_caches_named_by_a_launch_file_and_the_trainer_process(tmp_path: Path) -> None:
    """The cache variables as the trainer sets them (its launch file; the environment
    its running process was started with) decide where the caches are, and say so."""
    from tools.probes import caches

    root = specforge_root(tmp_path / "sf")
    layout._MEMO.clear()
    got = caches.collect({"workspace": str(root)}, Context())
    inductor = got["caches"][0]
    assert (inductor["path"], inductor["source"]) == ("/tmp/sf-cache", f"launch:{root}/launch.sh")
    assert got["declared"][0]["line"] == 2

    cache_dir = tmp_path / "proc-cache"
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache_dir)}
    marker = "dflash_layout_test_trainer"
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", marker], cwd=root, env=env
    )
    try:
        # The kernel fills /proc/PID/cmdline a moment after the exec Popen waited for.
        deadline = time.monotonic() + 10
        cmdline = Path(f"/proc/{proc.pid}/cmdline")
        while marker.encode() not in cmdline.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
        got = caches.collect({"workspace": str(root), "match": [marker]}, Context())
    finally:
        proc.kill()
        proc.wait()
    inductor = got["caches"][0]
    assert (inductor["path"], inductor["source"]) == (str(cache_dir), f"process:{proc.pid}")
    assert (inductor["exists"], inductor["files"]) == (False, 0)


def test_layout_fact_summary_names_what_was_taken(tmp_path: Path) -> None:
    """The facts table's line for a layout fact shows the best candidates it holds."""
    from agent.model.facts import Fact
    from agent.report.summaries import fact_summary

    root = torchtune_root(tmp_path / "tt")
    line = fact_summary(Fact(probe="layout", target="local", value=discover(root)))
    assert line.startswith(f"checkpoints {root} · train log {root}/logs/log_1764576000.txt")
    assert "console none" in line and "1 configs" in line
    cut = fact_summary(Fact(probe="layout", target="local", value=discover(root, max_entries=3)))
    assert cut.endswith("walk truncated at 3 entries")


def test_a_workspace_that_is_itself_an_environment(tmp_path: Path) -> None:
    """A workspace that is itself a conda environment is found as one."""
    (tmp_path / "conda-meta").mkdir()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").write_text("")
    v = discover(tmp_path)
    assert [(c["path"], c["kind"]) for c in v["envs"]] == [(str(tmp_path), "conda")]


def test_nothing_found_is_nothing_to_look_at_not_a_failure(tmp_path: Path) -> None:
    """A Lightning run has no console log file: the stdoutlog probe is skipped, saying
    what it looked for, so no claim rests on a failed observation of a file nothing said
    would exist; a path the profile names and is missing still fails as not_found."""
    root = lightning_root(tmp_path / "pl")
    spec = SweepSpec.for_workspace(str(root), interpreter=sys.executable)
    result = sweep(LocalTransport(), spec, only=["stdoutlog", "checkpoints"])
    skipped = result["stdoutlog"].error
    assert skipped is not None and skipped.kind == "skipped"
    assert f"no console log found under {root}" in skipped.message
    assert result.ok and result["checkpoints"].ok
    named = spec.model_copy(update={"stdout_log": str(root / "nohup.out")})
    missing = sweep(LocalTransport(), named, only=["stdoutlog"])["stdoutlog"].error
    assert missing is not None and missing.kind == "not_found"


def test_checkpoint_examples_are_in_step_order(tmp_path: Path) -> None:
    """Checkpoint examples are listed in step order (5, 10, 100), not the string order of their
    names."""
    root = hf_output(tmp_path / "out", steps=(5, 10, 100))
    best = discover(root)["checkpoint_dirs"][0]
    assert best["examples"] == ["checkpoint-5", "checkpoint-10", "checkpoint-100"]
    assert best["why"] == (
        "3 entries named with a step or epoch "
        "(checkpoint: checkpoint-5, checkpoint-10, checkpoint-100)"
    )


@pytest.mark.parametrize(
    ("beside", "said"),
    [
        (["train.log"], "; one level up, in {up}: train.log (give --workspace that directory)"),
        (["a.out", "b.log", "notes.md"], "; one level up, in {up}: a.out, b.log (give"),
        ([f"r{i}.log" for i in range(7)], ": r0.log, r1.log, r2.log, r3.log, r4.log and 2 more"),
        (["README.md"], None),
    ],
)
def test_no_console_log_in_an_output_dir_names_the_logs_beside_it(
    tmp_path: Path, beside: list[str], said: str | None
) -> None:
    """Issue 25: pointed at a Trainer's output_dir, the console log one level up was
    missed in silence. Nothing found under the workspace, the log-like files beside it
    (not walked further) are named, with what to do."""
    run = tmp_path / "run"
    out = run / "out" / "checkpoint-10"
    out.mkdir(parents=True)
    (out / "trainer_state.json").write_text(json.dumps({"global_step": 10}))
    for name in beside:
        (run / name).write_text("step 1\n")
    (run / "logs").mkdir()  # a directory is not a log, whatever its name
    with pytest.raises(ProbeFailure) as caught:
        layout.chosen({"workspace": str(run / "out")}, "stdout_logs", "console log")
    assert caught.value.kind == "skipped"
    message = caught.value.message
    assert message.startswith(f"no console log found under {run / 'out'} (")
    assert message.endswith("; name it in the profile")
    if said is None:
        assert "one level up" not in message
    else:
        assert said.format(up=run) in message
