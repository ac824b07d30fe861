"""The typer application (``agent.cli.application``): the command table behind ``--help``,
each command built on first use with the root's global options after its own, and the
logging those options ask for, whether given before or after the command's name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from agent._version import __version__
from agent.cli import application
from agent.cli.application import COMMANDS, GLOBAL_OPTIONS, LazyCommands, app, command

Configured = list[tuple[bool, str]]


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch) -> Iterator[Configured]:
    """Each logging configuration the application asks for, as (json, level), instead of
    configuring the process's logging."""
    calls: Configured = []
    monkeypatch.setattr(
        application, "configure", lambda *, json, level: calls.append((json, level))
    )
    yield calls


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_help_lists_every_command_in_the_tables_order(configured: Configured) -> None:
    """``--help`` lists the commands in the order of ``COMMANDS``, each with its help."""
    code, out = invoke("--help")
    assert code == 0
    listed = out.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed if line.strip()] == list(COMMANDS)
    assert "  init      Write a commented doctor.toml template." in listed


@pytest.mark.parametrize(
    "args", [["--version"], ["init", "--version"]], ids=["before-a-command", "after-a-command"]
)
def test_version_prints_the_name_and_version_and_exits_0(
    args: list[str], configured: Configured, tmp_path: Path
) -> None:
    """``--version`` prints "dflash-doctor <version>" and runs nothing, before a command's
    name or after it."""
    code, out = invoke(*args)
    assert (code, out) == (0, f"dflash-doctor {__version__}\n")
    assert not (tmp_path / "doctor.toml").exists()


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ([], (False, "info")),
        (["-q"], (False, "warning")),
        (["-v"], (False, "debug")),
        (["-q", "-v"], (False, "warning")),
        (["--log-json", "--verbose"], (True, "debug")),
    ],
    ids=["default", "quiet", "verbose", "quiet-wins", "json"],
)
def test_the_root_flags_choose_the_logging(
    flags: list[str], expected: tuple[bool, str], configured: Configured, tmp_path: Path
) -> None:
    """Before the command: info by default, warnings only with -q (which wins over -v),
    debug with -v, JSON lines with --log-json."""
    code, out = invoke(*flags, "init", str(tmp_path / "doctor.toml"))
    assert code == 0, out
    assert configured == [expected]


def test_a_global_flag_after_the_command_sets_the_roots_and_logs_again(
    configured: Configured, tmp_path: Path
) -> None:
    """``init -v`` configures the logging again as the root's ``-v`` would, keeping what
    was given before the name (``--log-json``), and the command still runs."""
    path = tmp_path / "doctor.toml"
    code, out = invoke("--log-json", "init", "-v", str(path))
    assert code == 0, out
    assert configured == [(True, "info"), (True, "debug")]
    assert path.is_file()


def test_a_command_is_built_once_with_the_global_options_after_its_own() -> None:
    """A command is built the first time it is asked for and the same one is returned
    after; its options are its own, then the root's global ones with the root's spelling."""
    built = command("init")
    assert command("init") is built
    params = [(p.name, tuple(p.opts) + tuple(p.secondary_opts)) for p in built.params]
    assert params == [
        ("path", ("path",)),
        ("force", ("--force",)),
        ("version", ("--version",)),
        ("log_json", ("--log-json",)),
        ("quiet", ("--quiet", "-q")),
        ("verbose", ("--verbose", "-v")),
    ]
    assert tuple(name for name, _ in params[2:]) == GLOBAL_OPTIONS


def test_exec_keeps_every_argument_after_its_command_as_its_own() -> None:
    """``exec`` stops reading options at its command's first word, so ``exec ls -v`` passes
    ``-v`` to ``ls``."""
    assert COMMANDS["exec"].context == {"allow_interspersed_args": False}
    assert command("exec").context_settings == {"allow_interspersed_args": False}


def test_the_root_groups_commands_are_the_table_and_nothing_else() -> None:
    """The root group's command mapping has the table's names, in order, and refuses a name
    not in it (so typer can suggest the nearest)."""
    group = typer.main.get_command(app)
    assert isinstance(group, LazyCommands)
    assert list(group.commands) == list(COMMANDS)
    assert len(group.commands) == len(COMMANDS)
    with pytest.raises(KeyError, match="diagnse"):
        group.commands["diagnse"]
    assert group.commands["init"] is command("init")
