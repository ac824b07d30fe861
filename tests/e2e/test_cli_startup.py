"""What a command imports: each loads what it needs when it runs, so ``--version`` and
``--help`` start at once, a local ``exec`` does not load SSH or the graph, and ``facts``
never imports langgraph. Checked on the real entry point in a fresh interpreter (the
start-up times themselves are measured in benchmarks/startup_bench.py, not here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from agent.cli.application import COMMANDS, app
from agent.cli.options import SSH_OPTION_NAMES

HEAVY = ("langgraph", "langchain_core", "pydantic", "structlog", "paramiko", "fabric", "torch")

# Runs the entry point as the console script does, then reports the top-level packages
# loaded (on stderr's last line, so the command's own output stays on stdout).
PROBE = """
import json, sys
sys.argv = ["dflash-doctor", *json.loads(sys.argv[1])]
from agent.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def modules_loaded_by(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> tuple[int, set[str]]:
    """The exit code and every module loaded by the entry point run with ``args``."""
    run = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(args))],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )
    report = json.loads(run.stderr.strip().splitlines()[-1])
    return report["code"], set(report["modules"])


def loaded_by(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> tuple[int, set[str]]:
    """The exit code and the top-level packages loaded."""
    code, modules = modules_loaded_by(*args, cwd=cwd, env=env)
    return code, {m.split(".")[0] for m in modules}


def test_version_imports_nothing_heavy_nor_typer() -> None:
    """``--version`` loads none of the heavy libraries, nor typer, click or rich, so it
    answers at once."""
    code, loaded = loaded_by("--version")
    assert code == 0
    assert not loaded & {*HEAVY, "typer", "click", "rich"}, loaded & {*HEAVY, "typer", "rich"}


def test_help_imports_no_command_machinery() -> None:
    """``--help`` lists the commands from the command table without importing any command's
    module or the heavy libraries."""
    code, modules = modules_loaded_by("--help")
    assert code == 0
    loaded = {m.split(".")[0] for m in modules}
    assert not loaded & set(HEAVY), loaded & set(HEAVY)
    # The listing comes from the command table: no command's module is imported.
    assert not {f"agent.cli.{m}" for m in COMMAND_MODULES} & modules


COMMAND_MODULES = {spec.module.rsplit(".", 1)[1] for spec in COMMANDS.values()}


@pytest.mark.parametrize("command", ["diagnose", "health", "exec"])
def test_a_commands_help_imports_its_module_alone(command: str) -> None:
    """A command's ``--help`` imports that command's module and no other, and nothing
    heavy."""
    code, modules = modules_loaded_by(command, "--help")
    assert code == 0
    assert {m.split(".")[0] for m in modules}.isdisjoint(HEAVY)
    mine = COMMANDS[command].module
    assert mine in modules
    assert not {f"agent.cli.{m}" for m in COMMAND_MODULES} - {mine} & modules


def test_a_mistyped_command_is_told_the_nearest_one() -> None:
    """A mistyped command is told the nearest real one, exit 2."""
    run = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(["diagnse"])],
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = run.stderr.splitlines()[0]
    assert said == (
        "dflash-doctor: error: No such command 'diagnse'. Did you mean 'diagnose'? "
        "(see 'dflash-doctor --help')"
    )
    assert json.loads(run.stderr.splitlines()[-1])["code"] == 2


def test_a_local_exec_loads_neither_ssh_nor_the_graph(tmp_path: Path) -> None:
    """A local ``exec`` loads neither SSH nor the graph; once its screen is cached, the
    secret detector is loaded only when the output could hold a secret."""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    # The first run reads the secret formats' screen from detect-secrets and keeps it...
    code, loaded = loaded_by("exec", "--", "true", env=env)
    assert code == 0
    assert "detect_secrets" in loaded
    assert not loaded & {"paramiko", "fabric", "langgraph", "langchain_core", "torch"}
    assert (tmp_path / "dflash-doctor" / "cache" / "secret-screen.json").is_file()
    # ... so the next, whose output no format can match, loads neither it nor pydantic.
    code, loaded = loaded_by("exec", "--", "echo", "step 690 tok/s 4301", env=env)
    assert code == 0
    assert not loaded & {*HEAVY, "detect_secrets", "requests"}, loaded & {*HEAVY, "detect_secrets"}
    # A run whose output a format can match still loads the detector and redacts.
    code, loaded = loaded_by("exec", "--", "echo", "password = 'hunter2hunter2'", env=env)
    assert code == 0
    assert "detect_secrets" in loaded


def test_facts_never_imports_langgraph(tmp_path: Path) -> None:
    """``facts`` runs its probes without importing langgraph, paramiko or torch."""
    (tmp_path / "train.py").write_text("print('step 1')\n")
    code, loaded = loaded_by("-q", "facts", "--json", "-w", str(tmp_path), "--only", "host")
    assert code in (0, None)
    assert "pydantic" in loaded  # it did run: the facts are pydantic models
    assert not loaded & {"langgraph", "langchain_core", "paramiko", "torch"}


def _options(name: str) -> dict[str, tuple[str, ...]]:
    group = typer.main.get_command(app)
    built: Any = group.get_command(group.make_context("dflash-doctor", [name]), name)  # type: ignore[attr-defined]
    return {p.name: tuple(p.opts) for p in built.params if p.name}


@pytest.mark.parametrize("name", ["exec", "facts", "snapshot", "diagnose", "health"])
def test_every_command_that_reaches_a_target_takes_the_same_ssh_options(name: str) -> None:
    """Every command that reaches a target takes all the SSH options, declared exactly as
    ``facts`` declares them."""
    reference = _options("facts")
    mine = _options(name)
    assert set(SSH_OPTION_NAMES) <= mine.keys()
    assert {n: mine[n] for n in SSH_OPTION_NAMES} == {n: reference[n] for n in SSH_OPTION_NAMES}


def test_the_ssh_options_are_declared_in_one_module() -> None:
    """The SSH options are declared only in ``agent/cli/options.py``, so the commands cannot
    drift apart."""
    cli_dir = Path(__file__).resolve().parents[2] / "agent" / "cli"
    declaring = sorted(p.name for p in cli_dir.glob("*.py") if '"--known-hosts"' in p.read_text())
    assert declaring == ["options.py"]
