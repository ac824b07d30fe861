"""The entry point (``agent.cli.main``): ``--version`` answered before the application
loads, and every way a run can end turned into an exit code and, for a failure, one line
on stderr (usage errors with where to look for help)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer

from agent._version import __version__
from agent.cli import application
from agent.cli.main import main
from tools.errors import DoctorError, UsageError


def run_main(
    args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[object, str, str]:
    """``main`` with ``args`` as the command line: its exit code, stdout and stderr."""
    monkeypatch.setattr(sys, "argv", ["dflash-doctor", *args])
    with pytest.raises(SystemExit) as info:
        main()
    said = capsys.readouterr()
    return info.value.code, said.out, said.err


def app_doing(
    monkeypatch: pytest.MonkeyPatch, what: Callable[[], Any], calls: list[dict[str, Any]]
) -> None:
    """Stand in for the typer application: record how it was called, then do ``what``."""

    def fake(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return what()

    monkeypatch.setattr(application, "app", fake)


def raising(exc: BaseException) -> Callable[[], Any]:
    def throw() -> Any:
        raise exc

    return throw


def test_version_alone_is_answered_without_the_application(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--version`` on its own prints the name and version and exits 0; the application
    is never run."""
    calls: list[dict[str, Any]] = []
    app_doing(monkeypatch, raising(AssertionError("the application ran")), calls)
    assert run_main(["--version"], monkeypatch, capsys) == (0, f"dflash-doctor {__version__}\n", "")
    assert calls == []


@pytest.mark.parametrize(
    ("exc", "code", "line"),
    [
        (typer.Abort(), 130, "dflash-doctor: interrupted"),
        (KeyboardInterrupt(), 130, "dflash-doctor: interrupted"),
        (DoctorError("state file\n   damaged"), 1, "dflash-doctor: error: state file damaged"),
        (UsageError("bad target URI 'gpu'"), 2, "dflash-doctor: error: bad target URI 'gpu'"),
        (
            typer.BadParameter("--jobs must be\nat least 1"),
            2,
            "dflash-doctor: error: Invalid value: --jobs must be at least 1",
        ),
    ],
    ids=["abort", "ctrl-c", "doctor-error", "usage-error", "bad-parameter-without-context"],
)
def test_each_failure_is_one_line_and_its_exit_code(
    exc: BaseException,
    code: int,
    line: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An interrupt exits 130; the doctor's own errors exit with their code; a usage error
    exits 2. Each says one line on stderr, its message's whitespace run together, and
    nothing on stdout."""
    calls: list[dict[str, Any]] = []
    app_doing(monkeypatch, raising(exc), calls)
    assert run_main(["health"], monkeypatch, capsys) == (code, "", line + "\n")
    assert calls == [{"standalone_mode": False}]


@pytest.mark.parametrize(
    ("returned", "code"), [(None, 0), (0, 0), (7, 7)], ids=["none", "zero", "seven"]
)
def test_the_commands_own_exit_code_is_the_processs(
    returned: int | None,
    code: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What the application returns (a command's ``typer.Exit(code)``) is the exit code;
    nothing returned is success."""
    app_doing(monkeypatch, lambda: returned, [])
    assert run_main(["exec", "--", "true"], monkeypatch, capsys) == (code, "", "")


def test_no_arguments_run_the_application_standalone_for_its_help(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bare ``dflash-doctor`` runs the application as typer runs it alone (which shows
    the help and exits), not in the one-line error mode."""
    calls: list[dict[str, Any]] = []
    app_doing(monkeypatch, raising(SystemExit(0)), calls)
    assert run_main([], monkeypatch, capsys) == (0, "", "")
    assert calls == [{}]


def test_a_usage_error_says_where_to_look_for_help(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unknown option of a real command is one line naming it, the options it has, and
    that command's ``--help``, exit 2."""
    # Run as the console script runs it (a file, not ``python -m``), whose name click shows.
    monkeypatch.setattr(sys.modules["__main__"], "__package__", None, raising=False)
    assert run_main(["init", "--nope"], monkeypatch, capsys) == (
        2,
        "",
        "dflash-doctor: error: No such option: --nope (Possible options: --force) "
        "(see 'dflash-doctor init --help')\n",
    )


def test_a_real_command_runs_to_exit_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A command that succeeds exits 0 with its output on stdout; run again, its refusal
    (a ``UsageError``) is one line and exit 2."""
    path = tmp_path / "doctor.toml"
    assert run_main(["-q", "init", str(path)], monkeypatch, capsys) == (0, f"wrote {path}\n", "")
    assert run_main(["-q", "init", str(path)], monkeypatch, capsys) == (
        2,
        "",
        f"dflash-doctor: error: {path} exists; not overwriting it (use --force)\n",
    )
