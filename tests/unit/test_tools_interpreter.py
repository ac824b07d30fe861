"""tools.interpreter: the command that runs the probe bundle on the target's Python. Either
the Python named (``bundle_argv``) or a POSIX ``sh`` preamble that chooses the trainer's
Python on the target, hands its choice over in one environment variable, and ``exec``s it
on the bundle (``discovery_argv``); facts show the preamble by its digest (``shown``).

The preamble's search through real virtualenvs, processes and hops is specified end to end
in tests/e2e/test_interpreter.py; here it runs on stand-in Pythons (small shell scripts)
under a ``PATH`` that holds only the few tools it uses, so each answer is exact."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tools.interpreter import (
    MARKER,
    PREAMBLE,
    PYTHON_FLAGS,
    bundle_argv,
    discovery_argv,
    shown,
)

CHOICE = "DFLASH_DOCTOR_PYTHON_CHOICE"

# A stand-in Python: the ``-c`` import check exits with TORCH_RC; run on the bundle, it
# says how it was started and what choice it was handed.
_STAND_IN = """#!/bin/sh
if [ "$2" = "-c" ]; then exit {rc}; fi
printf 'ran %s %s\\n' "$0" "$*"
printf '%s' "$DFLASH_DOCTOR_PYTHON_CHOICE"
"""


def _python(path: Path, *, torch: bool) -> Path:
    """A stand-in Python at ``path`` that can (or cannot) import torch."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_STAND_IN.format(rc=0 if torch else 1))
    path.chmod(0o755)
    return path


@pytest.fixture
def tools_dir(tmp_path: Path) -> Path:
    """A directory holding only ``sh`` and the commands the preamble uses (no Python)."""
    bin_dir = tmp_path / "tools"
    bin_dir.mkdir()
    for name in ("sh", "sed", "tr", "readlink", "cut", "head", "cat"):
        found = shutil.which(name)
        assert found is not None, name
        (bin_dir / name).symlink_to(found)
    return bin_dir


def _choose(argv: tuple[str, ...], path: str) -> str:
    """Run the preamble with ``PATH`` as given; what the chosen stand-in printed."""
    done = subprocess.run(
        argv, env={"PATH": path}, capture_output=True, check=False, timeout=5, stdin=None
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


# -- the argv --------------------------------------------------------------------------


def test_a_python_named_runs_the_bundle_from_stdin_writing_no_bytecode() -> None:
    """Without discovery the command is the Python itself, ``-B`` (no ``__pycache__``
    written on the target) and ``-`` (the program is read from stdin)."""
    assert PYTHON_FLAGS == ("-B",)
    assert bundle_argv("/venv/bin/python") == ("/venv/bin/python", "-B", "-")


@pytest.mark.parametrize(
    ("workspace", "launch", "patterns", "tail"),
    [
        (None, None, [], ("python3", "", "")),
        ("/ws", None, ["train.py"], ("python3", "/ws", "", "train.py")),
        (
            "/ws",
            "/ws/run.sh",
            ["train", "torchrun"],
            ("python3", "/ws", "/ws/run.sh", "train", "torchrun"),
        ),
    ],
    ids=["nothing-known", "workspace-and-one-pattern", "launch-file-and-two-patterns"],
)
def test_discovery_passes_fallback_workspace_launch_then_patterns_as_arguments(
    workspace: str | None, launch: str | None, patterns: list[str], tail: tuple[str, ...]
) -> None:
    """The preamble is ``sh -c`` text with the marker as ``$0``, then the fallback, the
    workspace and the launch (empty strings for none), then one argument per pattern."""
    argv = discovery_argv("python3", workspace=workspace, launch=launch, patterns=patterns)
    assert argv == ("sh", "-c", PREAMBLE, MARKER, *tail)


def test_the_preamble_execs_the_choice_with_the_flags_and_hands_the_choice_over() -> None:
    """The placeholders are filled: the choice is exported in the variable the
    ``interpreter`` probe reads, and the chosen Python runs as ``<it> -B -``."""
    assert "@FLAGS@" not in PREAMBLE and "@CHOICE_ENV@" not in PREAMBLE
    assert f'export {CHOICE}="$chosen$tab$why$nl$cands"' in PREAMBLE
    assert PREAMBLE.rstrip().endswith('exec "$chosen" -B -')


# -- shown -----------------------------------------------------------------------------


def test_facts_name_the_preamble_by_its_digest_and_keep_the_arguments() -> None:
    """The 4 kB preamble text is replaced by a short name holding the first 12 hex digits
    of its sha256; the marker and every argument after it are kept as they are."""
    digest = hashlib.sha256(PREAMBLE.encode()).hexdigest()[:12]
    argv = discovery_argv("python3", workspace="/ws", launch=None, patterns=["train.py"])
    assert shown(argv) == (
        "sh",
        "-c",
        f"<dflash-doctor-find-python preamble, sha256 {digest}>",
        "dflash-doctor-find-python",
        "python3",
        "/ws",
        "",
        "train.py",
    )


@pytest.mark.parametrize(
    "argv",
    [
        ("/venv/bin/python", "-B", "-"),
        ("sh", "-c", "echo hi", MARKER),
        ("sh", "-c", PREAMBLE, "another-name", "python3"),
        ("sh", "-c", PREAMBLE),
    ],
    ids=["bundle-argv", "other-shell-text", "preamble-without-marker", "preamble-alone"],
)
def test_any_other_command_is_shown_as_it_is(argv: tuple[str, ...]) -> None:
    """Only the preamble with its marker as ``$0`` is abbreviated; any other command,
    even one that carries the preamble's text, is recorded unchanged."""
    assert shown(argv) == argv


# -- the preamble, on stand-in Pythons -------------------------------------------------


def test_the_workspace_virtualenv_is_chosen_and_listed(tmp_path: Path, tools_dir: Path) -> None:
    """With no launch and no process to look for, ``WS/.venv/bin/python`` is chosen (a
    trailing slash on the workspace is dropped); the choice says why, and the candidate
    line says whether it can import torch."""
    ws = tmp_path / "ws"
    py = _python(ws / ".venv" / "bin" / "python", torch=True)
    _python(ws / "venv" / "bin" / "python", torch=True)  # .venv is tried first
    argv = discovery_argv("python3", workspace=f"{ws}/", launch=None, patterns=[])
    why = f"the workspace's virtualenv {ws}/.venv"
    assert _choose(argv, str(tools_dir)) == (
        f"ran {py} -B -\n{py}\t{why}\n{py}\t{why}\timports torch\n"
    )


def test_a_conda_env_is_a_workspace_directory_holding_conda_meta(
    tmp_path: Path, tools_dir: Path
) -> None:
    """A directory of the workspace counts as a conda env only when it holds
    ``conda-meta/``; its Python is chosen even when it cannot import torch."""
    ws = tmp_path / "ws"
    _python(ws / "notanenv" / "bin" / "python", torch=True)
    py = _python(ws / "conda" / "bin" / "python", torch=False)
    (ws / "conda" / "conda-meta").mkdir()
    argv = discovery_argv("python3", workspace=str(ws), launch=None, patterns=[])
    why = f"the workspace's conda env {ws}/conda"
    assert _choose(argv, str(tools_dir)) == (
        f"ran {py} -B -\n{py}\t{why}\n{py}\t{why}\tcannot import torch\n"
    )


def test_the_launch_files_shebang_names_the_python(tmp_path: Path, tools_dir: Path) -> None:
    """A launch file that is a file is read: the first word naming a ``pythonX.Y`` by
    path is the choice, and the reason names the file."""
    py = _python(tmp_path / "opt" / "bin" / "python3.11", torch=True)
    launch = tmp_path / "run.sh"
    launch.write_text(f"#!{py}\nimport train\n")
    argv = discovery_argv("python3", workspace=None, launch=str(launch), patterns=[])
    why = f"the launch file {launch} runs it"
    source = f"the launch file {launch}"
    assert _choose(argv, str(tools_dir)) == (
        f"ran {py} -B -\n{py}\t{why}\n{py}\t{source}\timports torch\n"
    )


def test_a_relative_python_in_a_launch_command_is_taken_from_the_workspace(
    tmp_path: Path, tools_dir: Path
) -> None:
    """A launch that is no file is a command; a relative ``bin/python`` in it is found
    under the workspace."""
    ws = tmp_path / "ws"
    _python(ws / "bin" / "python", torch=False)
    argv = discovery_argv(
        "python3", workspace=str(ws), launch="cd /x && bin/python train.py", patterns=[]
    )
    py = f"{ws}/bin/python"
    assert _choose(argv, str(tools_dir)) == (
        f"ran {py} -B -\n{py}\tthe launch command runs it\n"
        f"{py}\tthe launch command\tcannot import torch\n"
    )


def test_path_is_searched_for_a_python_that_imports_torch(tmp_path: Path, tools_dir: Path) -> None:
    """With nothing else known, ``PATH`` is searched in order; a ``python3`` that cannot
    import torch is listed and passed over."""
    bare = _python(tmp_path / "bare" / "python3", torch=False)
    good = _python(tmp_path / "good" / "python3", torch=True)
    argv = discovery_argv("python3", workspace=None, launch=None, patterns=[])
    path = os.pathsep.join([str(tools_dir), str(bare.parent), str(good.parent)])
    assert _choose(argv, path) == (
        f"ran {good} -B -\n{good}\tthe first python3 on PATH that can import torch\n"
        f"{bare}\tPATH\tcannot import torch\n{good}\tPATH\timports torch\n"
    )


def test_with_no_candidate_the_fallback_runs_and_says_so(tmp_path: Path, tools_dir: Path) -> None:
    """An empty workspace, no launch and no Python on ``PATH``: the fallback is exec'd,
    the reason says so, and no candidate is listed."""
    fallback = _python(tmp_path / "fallback" / "python", torch=False)
    ws = tmp_path / "ws"
    ws.mkdir()
    argv = discovery_argv(str(fallback), workspace=str(ws), launch=None, patterns=[])
    assert _choose(argv, str(tools_dir)) == (
        f"ran {fallback} -B -\n{fallback}\tno candidate found: the default {fallback}\n"
    )
