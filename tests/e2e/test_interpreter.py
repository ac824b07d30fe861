"""Finding the trainer's Python on the target (tools.interpreter), in the sweep's one round
trip, with real virtualenvs made by ``python -m venv``, a real running process, and once
through the real sshd and a container hop."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.sessions.targets import resolve_target
from tests.lib.sshd import SSHServer, options
from tests.lib.venv import make_venv
from tools.sweep import SweepSpec, sweep
from tools.transport import LocalTransport, open_target

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture(scope="module")
def venvs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("venvs")
    return {
        "torch": make_venv(root / "with-torch", torch=True),
        "bare": make_venv(root / "without-torch", torch=False),
    }


def _choose(spec: SweepSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    result = sweep(LocalTransport(), spec, only=["interpreter", "pyenv"])
    chosen, env = result["interpreter"], result["pyenv"]
    assert chosen.ok and env.ok, (chosen.error_text, env.error_text, result.stderr_tail)
    assert isinstance(chosen.value, dict) and isinstance(env.value, dict)
    return chosen.value, env.value


def test_the_first_python_on_path_that_can_import_torch_is_chosen(
    venvs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing else known (no workspace, no launch): PATH is searched in order, a Python
    that cannot import torch is passed over and listed as such."""
    bare, with_torch = venvs["bare"].parent, venvs["torch"].parent
    monkeypatch.setenv("PATH", f"{bare}:{with_torch}:{SYSTEM_PATH}")
    chosen, env = _choose(SweepSpec(discover_interpreter=True))
    assert chosen["discovered"] is True
    assert chosen["path"] == str(with_torch / "python3")
    assert chosen["chosen_because"] == "the first python3 on PATH that can import torch"
    verdicts = {c["path"]: c["verdict"] for c in chosen["candidates"]}
    assert verdicts[str(bare / "python3")] == "cannot import torch"
    assert verdicts[str(with_torch / "python3")] == "imports torch"
    # The sweep ran on it: the environment facts are that venv's.
    assert env["python"]["executable"] == str(with_torch / "python3")
    assert env["torch"] is not None and env["torch"]["version"]


def test_the_workspace_venv_comes_before_path(
    venvs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WS/.venv is the trainer's environment even when it lacks torch (the fact says so);
    a torch-capable Python on PATH does not override it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    make_venv(ws / ".venv", torch=False)
    monkeypatch.setenv("PATH", f"{venvs['torch'].parent}:{SYSTEM_PATH}")
    chosen, env = _choose(SweepSpec(discover_interpreter=True, workspace=str(ws)))
    assert chosen["path"] == str(ws / ".venv/bin/python")
    assert chosen["chosen_because"] == f"the workspace's virtualenv {ws}/.venv"
    assert chosen["candidates"] == [
        {
            "path": str(ws / ".venv/bin/python"),
            "source": f"the workspace's virtualenv {ws}/.venv",
            "verdict": "cannot import torch",
        }
    ]
    assert env["torch"] is None


def test_a_conda_env_in_the_workspace_is_found(tmp_path: Path) -> None:
    """A directory of the workspace holding conda-meta/ is a conda env."""
    env_dir = tmp_path / "ws" / "miniconda-env"
    make_venv(env_dir, torch=False)
    (env_dir / "conda-meta").mkdir()
    chosen, _ = _choose(SweepSpec(discover_interpreter=True, workspace=str(tmp_path / "ws")))
    assert chosen["path"] == str(env_dir / "bin/python")
    assert chosen["chosen_because"] == f"the workspace's conda env {env_dir}"


def test_the_launch_files_python_is_used(
    venvs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Python the launch file execs is the one chosen, and the reason names the launch
    file."""
    monkeypatch.setenv("PATH", SYSTEM_PATH)
    launch = tmp_path / "start-training.sh"
    launch.write_text(f"#!/bin/sh\ncd {tmp_path}\nexec env A=1 {venvs['torch']} my_train.py --x\n")
    chosen, env = _choose(SweepSpec(discover_interpreter=True, launch=str(launch)))
    assert chosen["path"] == str(venvs["torch"])
    assert chosen["chosen_because"] == f"the launch file {launch} runs it"
    assert env["torch"] is not None


def test_a_launch_script_in_the_workspace_is_read_without_a_profile(
    venvs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No launch named: the workspace's own shell scripts are the launch files a person
    would open first (an HF run's ``launch.sh`` that execs its venv's python)."""
    monkeypatch.setenv("PATH", SYSTEM_PATH)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.sh").write_text("echo nothing to run here\n")
    launch = ws / "launch.sh"
    launch.write_text(f"#!/bin/sh\ncd {ws}\nexec {venvs['torch']} train.py >> train.log 2>&1\n")
    chosen, env = _choose(SweepSpec(discover_interpreter=True, workspace=str(ws)))
    assert chosen["path"] == str(venvs["torch"])
    assert chosen["chosen_because"] == f"the launch file {launch} runs it"
    assert env["torch"] is not None


def test_the_doctors_own_process_is_never_the_trainer(tmp_path: Path) -> None:
    """Run locally, the doctor's CLI is an ancestor of the preamble, and its command line
    names the workspace and holds the default pattern: it must not be taken for the
    trainer (it was, for a workspace called ``ws_hf_trainer``)."""
    ws = tmp_path / "ws_hf_trainer"
    ws.mkdir()
    code = (
        "import json, sys\n"
        "from tools.sweep import SweepSpec, sweep\n"
        "from tools.transport import LocalTransport\n"
        "spec = SweepSpec(discover_interpreter=True, workspace=sys.argv[1],"
        " process_match=('train',))\n"
        "print(json.dumps(sweep(LocalTransport(), spec, only=['interpreter'])"
        "['interpreter'].value))\n"
    )
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code, str(ws)],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    chosen = json.loads(out.stdout.strip().splitlines()[-1])
    assert "running trainer" not in chosen["chosen_because"], chosen
    assert not [c for c in chosen["candidates"] if c["source"].startswith("process ")], chosen


@pytest.fixture
def running_trainer(venvs: dict[str, Path], tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A user's training process, started by its bare name ``python`` off its own PATH, in
    its workspace (which also holds a venv without torch: the running process wins)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    make_venv(ws / ".venv", torch=False)
    (ws / "run_pretrain.py").write_text("import time\ntime.sleep(60)\n")
    env = {"PATH": f"{venvs['torch'].parent}:{SYSTEM_PATH}"}
    proc = subprocess.Popen(["python", "run_pretrain.py"], cwd=ws, env=env)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # until its command line shows in /proc
        if b"run_pretrain.py" in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
            break
        time.sleep(0.05)
    yield proc
    proc.kill()
    proc.wait()


def test_the_running_trainers_python_wins(
    running_trainer: subprocess.Popen[bytes], venvs: dict[str, Path], tmp_path: Path
) -> None:
    """Found by the profile's pattern in its workspace: its argv[0] resolved on its own
    PATH (a venv's python, not the base interpreter /proc/PID/exe points at)."""
    spec = SweepSpec(
        discover_interpreter=True, workspace=str(tmp_path / "ws"), process_match=("pretrain",)
    )
    chosen, env = _choose(spec)
    pid = running_trainer.pid
    assert chosen["path"] == str(venvs["torch"])
    assert chosen["chosen_because"] == f"the running trainer (process {pid}) runs it"
    assert chosen["candidates"][0]["source"] == f"process {pid}: python run_pretrain.py"
    assert env["torch"] is not None


def test_a_matching_process_outside_the_workspace_is_not_the_trainer(
    running_trainer: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    """A running process that matches by name but works outside the workspace is not taken
    for the trainer."""
    other = tmp_path / "other-ws"
    other.mkdir()
    spec = SweepSpec(discover_interpreter=True, workspace=str(other), process_match=("pretrain",))
    chosen, _ = _choose(spec)
    assert "running trainer" not in chosen["chosen_because"]


def test_nothing_found_is_one_reason_on_every_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no Python on the target, every probe asked for fails with the one reason "no
    Python found"."""
    monkeypatch.setenv("PATH", str(tmp_path))  # no python anywhere on it
    spec = SweepSpec(discover_interpreter=True, interpreter=str(tmp_path / "python3"))
    result = sweep(LocalTransport(), spec, only=["interpreter", "host"])
    for r in result.results:
        assert r.error is not None and r.error.kind == "bundle_failed"
        assert r.error.message.startswith("no Python found on the target:"), r.error.message


def test_interpreter_given_turns_discovery_off_and_says_so() -> None:
    """``--interpreter`` is used as given with no discovery and no candidates, and the fact
    says so."""
    resolved = resolve_target("local", interpreter=sys.executable)
    assert resolved.spec.discover_interpreter is False
    chosen, env = _choose(resolved.spec)
    assert chosen == {
        "path": sys.executable,
        "executable": sys.executable,
        "discovered": False,
        "chosen_because": "given by --interpreter (no discovery)",
        "candidates": [],
    }
    assert env["python"]["executable"] == sys.executable


def test_discovery_through_ssh_and_a_container_hop(
    sshd_server: SSHServer, venvs: dict[str, Path], tmp_path: Path
) -> None:
    """The preamble crosses the SSH boundary as one shlex-joined string, inside the remote
    `timeout` and the `pct exec` hop, and still finds the workspace's venv."""
    ws = tmp_path / "ws"
    ws.mkdir()
    make_venv(ws / ".venv", torch=True)
    target = open_target(f"{sshd_server.uri}/pct:200", ssh=options(sshd_server))
    try:
        result = sweep(
            target,
            SweepSpec(discover_interpreter=True, workspace=str(ws)),
            only=["interpreter", "pyenv"],
        )
    finally:
        target.close()
    # Facts name the preamble by its digest; the wire carried its text.
    assert result.argv[:2] == ("sh", "-c")
    assert result.argv[2].startswith("<dflash-doctor-find-python preamble, sha256 ")
    chosen: Any = result["interpreter"].value
    assert isinstance(chosen, dict), result["interpreter"].error_text
    assert chosen["path"] == str(ws / ".venv/bin/python")
    assert chosen["candidates"][0]["verdict"] == "imports torch"
    env: Any = result["pyenv"].value
    assert isinstance(env, dict) and env["python"]["executable"] == str(ws / ".venv/bin/python")
