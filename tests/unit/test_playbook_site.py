"""A fix's site on a trainer the doctor has never seen (playbooks.site, playbooks.launch,
Remote.knob): the launch script written from a command or a running process, the exec
line found among redirections, the trainer's script, and options read from its code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from playbooks.launch import exec_words, trainer_script, with_env, with_flag
from playbooks.remote import Remote
from playbooks.site import running_trainer, script_from_command, script_from_process, site
from tools.errors import ApplyError
from tools.transport import LocalTransport

HEADER = "#!/bin/sh\n# Written by dflash-doctor from the profile's launch command.\nset -e\n"


@pytest.mark.parametrize(
    ("command", "body"),
    [
        ("python train.py --lr 3e-4", "cd /ws\nexec python train.py --lr 3e-4\n"),
        (
            "cd /ws/run && source env.sh && exec python t.py",
            "cd /ws\ncd /ws/run\nsource env.sh\nexec python t.py\n",
        ),
        (
            "CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc-per-node 2 train.py",
            "cd /ws\nexec env CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc-per-node 2 train.py\n",
        ),
        (
            "python 'my dir/t.py' > logs/out.txt 2>&1",
            "cd /ws\nexec >logs/out.txt 2>&1\nexec python 'my dir/t.py'\n",
        ),
        ("python t.py >> out.log", "cd /ws\nexec >>out.log\nexec python t.py\n"),
    ],
)
def test_a_launch_command_becomes_one_exec_line(command: str, body: str) -> None:
    """A launch command becomes a script that changes to the workspace and ends in one exec line for
    the trainer: cd and source kept as steps, variables through env, redirections on an exec of
    their own."""
    text = script_from_command(command, "/ws", "the profile's launch command")
    assert text == HEADER + body
    words = exec_words(text, "launch.sh")
    assert words[0] == "exec" and words[1] != ">logs/out.txt"


@pytest.mark.parametrize("command", ["python t.py | tee log", "python t.py &", ""])
def test_a_command_whose_trainer_cannot_be_one_exec_line_is_refused(command: str) -> None:
    """A pipeline, a background job or an empty command has no single trainer line to edit:
    refused."""
    with pytest.raises(ApplyError):
        script_from_command(command, "/ws", "x")


def test_flags_and_env_go_on_the_trainers_line_not_the_redirection() -> None:
    """A flag or a variable added to a written script goes on the trainer's exec line, never on the
    exec that only redirects output."""
    text = script_from_command("A=1 python t.py > o.txt 2>&1", "/ws", "x")
    flagged = with_flag(text, "l.sh", "--compile-lock")
    assert flagged.endswith("exec env A=1 python t.py --compile-lock\n")
    assert "exec >o.txt 2>&1\n" in flagged
    env = with_env(text, "l.sh", {"B": "2"})
    assert env.endswith("exec env A=1 B=2 python t.py\n")


def test_a_running_process_is_started_again_as_it_runs() -> None:
    """A running trainer is written back as it runs: its directory, its output files, its
    environment and argv; its script is read from that line."""
    text = script_from_process(
        ["/v/bin/python", "-u", "train.py", "--x"],
        "/ws",
        {"PYTHONPATH": "/lib", "CUDA_VISIBLE_DEVICES": "1"},
        "the running trainer",
        {"1": "/ws/out.log", "2": "/ws/out.log"},
    )
    assert text.endswith(
        "cd /ws\nexec >>/ws/out.log 2>&1\n"
        "exec env CUDA_VISIBLE_DEVICES=1 PYTHONPATH=/lib /v/bin/python -u train.py --x\n"
    )
    assert trainer_script(text, "l.sh", "/elsewhere") == "/ws/train.py"


def test_a_redacted_variable_is_not_written_back() -> None:
    """A variable whose value was redacted cannot be written back: the script is refused, naming the
    variable, rather than launching with the placeholder."""
    with pytest.raises(ApplyError, match="holds HF_TOKEN, whose value"):
        script_from_process(["python", "t.py"], "/ws", {"HF_TOKEN": "<redacted>"}, "x")


@pytest.mark.parametrize(
    ("text", "script"),
    [
        ("exec python train.py\n", "/ws/train.py"),
        ("cd /opt/run\nexec python -u /abs/t.py --a\n", "/abs/t.py"),
        ("cd sub\nexec python -m pkg.train\n", "/ws/sub/pkg/train.py"),
        ("exec torchrun --nproc-per-node 2 train.py\n", "/ws/train.py"),
        ("exec ./start-binary --x\n", None),
    ],
)
def test_the_trainers_script_is_read_off_the_exec_line(text: str, script: str | None) -> None:
    """The trainer's script is read off the exec line through python's options, ``-m`` and torchrun,
    relative to the line's cd; a binary has none."""
    assert trainer_script(text, "l.sh", "/ws") == script


def test_the_trainer_is_the_parent_python_in_the_workspace() -> None:
    """The running trainer is the outermost Python process in the workspace, not its shell, its
    child worker or a Python elsewhere."""
    procs = {
        "processes": [
            {"pid": 10, "ppid": 1, "exe": "/bin/bash", "cmdline": ["sh", "run.sh"], "cwd": "/ws"},
            {"pid": 11, "ppid": 10, "exe": "/usr/bin/python3.11", "cmdline": ["python", "t.py"],
             "cwd": "/ws"},
            {"pid": 12, "ppid": 11, "exe": "/usr/bin/python3.11", "cmdline": ["python", "t.py"],
             "cwd": "/ws"},
            {"pid": 5, "ppid": 1, "exe": "/usr/bin/python3", "cmdline": ["python", "train.py"],
             "cwd": "/other"},
        ]
    }  # fmt: skip
    found = running_trainer(procs, "/ws")
    assert found is not None and found["pid"] == 11
    assert running_trainer(procs, "/nowhere") is None


def test_no_launch_known_is_a_reason_not_a_guess(tmp_path: Path) -> None:
    """With no launch known, or no stdout log known, the site is refused with the reason rather than
    guessed."""
    with pytest.raises(ApplyError, match="no launch known for the trainer"):
        site(workspace=str(tmp_path), train_log="a", stdout_log="b")
    with pytest.raises(ApplyError, match="no stdout log known"):
        site(workspace=str(tmp_path), train_log="a", stdout_log=None, launch="run.sh")


def test_options_are_read_from_the_trainers_own_tree(tmp_path: Path) -> None:
    """The flag is found where the script's import leads (a package beside it, a
    directory it puts on sys.path, a relative import), never in a docstring mention, and
    nothing is run."""
    lib = tmp_path / "lib" / "mytrainer"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("")
    (lib / "cli.py").write_text(
        "import argparse\nfrom .opts import add\np = argparse.ArgumentParser()\n"
    )
    (lib / "opts.py").write_text(
        '"""Mentions --compile-lock in prose only."""\n'
        "def add(p):\n    p.add_argument('--workers', choices=['threads', 'processes'])\n"
    )
    script = tmp_path / "ws" / "go.py"
    script.parent.mkdir()
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(tmp_path / 'lib')!r})\n"
        "from mytrainer.cli import p\nraise SystemExit('must not run')\n"
    )
    remote = Remote(LocalTransport(), interpreter=sys.executable)
    assert remote.knob(str(script), "--workers", "processes") == str(lib / "opts.py")
    assert remote.knob(str(script), "--compile-lock") is None
    assert remote.knob(str(script), "--workers", "gpus") is None


def test_the_reference_trainers_options_are_found_through_its_launcher(tmp_path: Path) -> None:
    """The reference trainer's workspace launcher (written by its `init`) imports its
    CLI module: that is where --compile-lock and --workers processes are declared."""
    ws = tmp_path / "ws"
    done = subprocess.run(
        [sys.executable, "-m", "examples.dflash_trainer", "init", "--workspace", str(ws)],
        capture_output=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    remote = Remote(LocalTransport(), interpreter=sys.executable)
    found = remote.knob(str(ws / "train_dflash.py"), "--compile-lock")
    assert found is not None and found.endswith("examples/dflash_trainer/cli.py")
    assert remote.knob(str(ws / "train_dflash.py"), "--workers", "processes") == found
