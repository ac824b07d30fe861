"""The options the commands share (``agent.cli.options``): the checks that turn a bad value
into a usage error, and ``reaches_targets``, which gives a command the SSH options as one
``SSHOptions`` argument, declared once."""

from __future__ import annotations

import inspect
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from agent.cli.options import SSH_OPTION_NAMES, one_of, reaches_targets, seconds
from tools.transport.ssh_options import SSHOptions


@pytest.mark.parametrize(
    "value", [None, 0.5, 30.0, 604800.0], ids=["none", "half", "thirty", "a-week"]
)
def test_a_usable_time_limit_is_kept(value: float | None) -> None:
    """No limit, or a positive finite one of at most a week, is taken as given."""
    assert seconds(value) == value


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.0, "0.0"),
        (-1.0, "-1.0"),
        (604800.5, "604800.5"),
        (float("inf"), "inf"),
        (float("nan"), "nan"),
    ],
    ids=["zero", "negative", "over-a-week", "infinite", "nan"],
)
def test_an_unusable_time_limit_is_a_usage_error_saying_why(value: float, shown: str) -> None:
    """Zero, a negative, more than a week, or not a finite number is a usage error that
    says what a time limit must be and what was given."""
    with pytest.raises(typer.BadParameter) as raised:
        seconds(value)
    assert str(raised.value) == (
        f"the time limit must be a number of seconds in (0, 604800], not {shown}"
    )


def test_one_of_accepts_only_the_listed_values() -> None:
    """A value in the list is returned; any other is a usage error listing the choices."""
    check = one_of("md", "html", "json")
    assert check("html") == "html"
    with pytest.raises(typer.BadParameter, match=r"^'xml' is not one of md, html, json$"):
        check("xml")
    with pytest.raises(typer.BadParameter, match=r"^'MD' is not one of md, html, json$"):
        check("MD")


def test_a_command_without_an_ssh_parameter_is_refused_by_name() -> None:
    """Only a command that takes ``ssh`` can be given the SSH options: any other is a
    TypeError naming the command."""

    def facts(target: str) -> None:
        return None

    with pytest.raises(TypeError, match=r"^facts must take an `ssh` parameter to reach targets$"):
        reaches_targets(facts)


def test_the_ssh_options_follow_the_commands_own_keyword_only() -> None:
    """The command's signature keeps its own parameters, drops ``ssh``, and ends with the
    SSH options, keyword-only, with their defaults; the return annotation is kept."""

    @reaches_targets
    def run(name: str, count: int = 1, *, ssh: SSHOptions) -> int:
        return count

    params = inspect.signature(run).parameters
    assert list(params) == ["name", "count", *SSH_OPTION_NAMES]
    assert SSH_OPTION_NAMES == (
        "accept_new_host_key",
        "known_hosts",
        "identity",
        "ssh_config",
        "connect_timeout",
        "retries",
    )
    assert all(params[n].kind is inspect.Parameter.KEYWORD_ONLY for n in SSH_OPTION_NAMES)
    defaults = {n: params[n].default for n in SSH_OPTION_NAMES}
    assert defaults == {
        "accept_new_host_key": False,
        "known_hosts": None,
        "identity": None,
        "ssh_config": None,
        "connect_timeout": 10.0,
        "retries": 3,
    }
    assert run.__annotations__["return"] is int
    assert run.__name__ == "run"


def app_with(seen: list[SSHOptions]) -> typer.Typer:
    """A one-command application whose command records the SSH options it was given."""
    app = typer.Typer()

    @app.command()
    @reaches_targets
    def reach(
        target: Annotated[str, typer.Option("--target")] = "local", *, ssh: SSHOptions
    ) -> None:
        seen.append(ssh)
        typer.echo(target)

    return app


def test_the_options_given_reach_the_command_as_one_ssh_options() -> None:
    """Each SSH option on the command line lands in its field of the one ``SSHOptions``
    the command receives (``--identity`` in ``identity_file``); the command's own option is
    still its own."""
    seen: list[SSHOptions] = []
    args = [
        "--target", "ssh://gpu",
        "--accept-new-host-key",
        "--known-hosts", "/k/known",
        "-i", "/k/id",
        "--ssh-config", "/k/config",
        "--connect-timeout", "2.5",
        "--retries", "0",
    ]  # fmt: skip
    result = CliRunner().invoke(app_with(seen), args)
    assert (result.exit_code, result.output) == (0, "ssh://gpu\n")
    assert seen == [
        SSHOptions(
            accept_new_host_key=True,
            known_hosts="/k/known",
            identity_file="/k/id",
            ssh_config="/k/config",
            connect_timeout=2.5,
            retries=0,
        )
    ]


def test_without_ssh_options_the_command_gets_the_defaults() -> None:
    """Given none of the SSH options, the command receives ``SSHOptions()``'s defaults."""
    seen: list[SSHOptions] = []
    result = CliRunner().invoke(app_with(seen), [])
    assert result.exit_code == 0
    assert seen == [SSHOptions()]


def test_a_bad_connect_timeout_stops_the_command_before_it_runs() -> None:
    """``--connect-timeout 0`` is a usage error (exit 2) naming the option; the command
    does not run."""
    seen: list[SSHOptions] = []
    result = CliRunner().invoke(app_with(seen), ["--connect-timeout", "0"], standalone_mode=False)
    assert isinstance(result.exception, typer.BadParameter)
    assert result.exception.exit_code == 2
    assert result.exception.format_message() == (
        "Invalid value for '--connect-timeout': the time limit must be a number of seconds "
        "in (0, 604800], not 0.0"
    )
    assert seen == []
