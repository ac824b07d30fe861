"""The typer application: the root options, and every command from its own module,
loaded when it is chosen.

``COMMANDS`` names each command's module, function and one-line help, so ``--help``
lists them without importing one, and ``exec`` imports ``execute`` alone: building every
command's options (typer reads each signature) was a third of the start-up. What a
command needs to run (the graph, the transports, the reports) it imports when it runs.

The root's options (``GLOBAL_OPTIONS``: ``--version``, ``--log-json``, ``-q``, ``-v``) are
declared once, on the root, and each command takes them too, after its name
(``health -q`` as ``-q health``): a copy of each is added to the command when it is built,
and sets the root's value. Options after ``--`` stay the command's (``exec -- ls -v``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

import typer
import typer.core
import typer.main

from agent._version import __version__
from tools.log import configure


@dataclass(frozen=True)
class Command:
    module: str
    function: str
    help: str
    context: dict[str, Any] = field(default_factory=dict)


# In the order `--help` lists them.
COMMANDS: dict[str, Command] = {
    "exec": Command(
        "agent.cli.execute",
        "exec_",
        "Run one command through the target chain; print its output; exit with its code.",
        {"allow_interspersed_args": False},
    ),
    "facts": Command(
        "agent.cli.facts", "facts", "Sweep the target's facts in one round trip and list them."
    ),
    "snapshot": Command(
        "agent.cli.snapshot",
        "snapshot",
        "Store the target's facts now as a named known good state.",
    ),
    "diagnose": Command(
        "agent.cli.diagnose",
        "diagnose",
        "Diagnose the target: facts, baseline diff, hypotheses, cited report.",
    ),
    "resume": Command(
        "agent.cli.resume",
        "resume",
        "Continue a session after a crash, or answer its pending approval.",
    ),
    "replay": Command(
        "agent.cli.replay",
        "replay",
        "Re-run a recorded session with no machine; exit 1 if verdicts changed.",
    ),
    "report": Command(
        "agent.cli.report", "report", "Render a recorded session as a report (md, html or json)."
    ),
    "init": Command("agent.cli.init", "init", "Write a commented doctor.toml template."),
    "health": Command(
        "agent.cli.health",
        "health",
        "Read-only health check of one or many targets against a baseline; exit 0 healthy, "
        "1 regression found, 2 could not check.",
    ),
}

_SETTINGS: dict[str, Any] = {
    "pretty_exceptions_enable": False,
    "add_completion": False,
    # Help texts are plain text: "ssh://user@host[:port][/HOP…]" read as Rich markup was
    # a closing tag with no opening one, and `exec --help` died of it.
    "rich_markup_mode": None,
}


# The root's options that every command accepts after its name as well.
GLOBAL_OPTIONS = ("version", "log_json", "quiet", "verbose")


@functools.cache
def command(name: str) -> Any:
    """The click command ``name`` (typer's own click), built from its module's function,
    with the root's options (``GLOBAL_OPTIONS``) added after its own."""
    spec = COMMANDS[name]
    function = getattr(importlib.import_module(spec.module), spec.function)
    single = typer.Typer(**_SETTINGS)
    single.command(name, help=spec.help, context_settings=spec.context)(function)
    built = typer.main.get_command(single)
    built.params.extend(_late_options())
    return built


@functools.cache
def _late_options() -> tuple[typer.core.TyperOption, ...]:
    """The root's global options, as a command's: read from the root as typer builds it
    (only the root's own options: no command is built for it), so their names and help
    are the root's. Each sets the root's value; the logging is configured again."""
    root = typer.main.get_command(app)
    out: list[typer.core.TyperOption] = []
    for option in root.params:
        if not isinstance(option, typer.core.TyperOption) or option.name not in GLOBAL_OPTIONS:
            continue
        # --version prints and exits wherever it is; the others are the root's flags.
        callback = option.callback if option.is_eager else _set_on_root
        out.append(
            typer.core.TyperOption(
                param_decls=[*option.opts, *option.secondary_opts],
                is_flag=True,
                default=False,
                help=option.help,
                is_eager=option.is_eager,
                expose_value=False,
                callback=callback,
            )
        )
    return tuple(out)


def _set_on_root(ctx: typer.Context, param: typer.CallbackParam, value: bool) -> None:
    """A global flag given after the command's name: the root's value, as if given
    before it (commands read it there: ``exec`` looks at ``verbose``)."""
    if not value or param.name is None:
        return
    root = ctx.find_root()
    root.params[param.name] = True
    _configure(root.params)


class _Table(Mapping[str, Any]):
    """``COMMANDS`` as the name → click command mapping typer reads (its "Did you mean"
    looks at the names), each command built only when looked up."""

    def __getitem__(self, name: str) -> Any:
        if name not in COMMANDS:
            raise KeyError(name)
        return command(name)

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)


class LazyCommands(typer.core.TyperGroup):
    """The root group: its commands come from ``COMMANDS``, each built on first use."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Table()  # type: ignore[assignment]  # read-only: nothing adds one

    def list_commands(self, ctx: Any) -> list[str]:
        # typer's own reads ``commands.items()``, which would build every command.
        return list(COMMANDS)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        # The listing needs each command's help only: a bare command carries it, so
        # `--help` shortens the texts exactly as for the real ones, importing none.
        limit = formatter.width - 6 - max(map(len, COMMANDS))
        rows = [
            (name, typer.core.TyperCommand(name, help=spec.help).get_short_help_str(limit))
            for name, spec in COMMANDS.items()
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


app = typer.Typer(
    name="dflash-doctor",
    help="Evidence-first debugging for DFlash drafter training: facts first, then claims.",
    cls=LazyCommands,
    no_args_is_help=True,
    **_SETTINGS,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"dflash-doctor {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
    log_json: Annotated[
        bool, typer.Option("--log-json", help="Log JSON lines to stderr (for unattended runs).")
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Log warnings and errors only.")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log debug events too.")] = False,
) -> None:
    _configure({"log_json": log_json, "quiet": quiet, "verbose": verbose})


def _configure(given: Mapping[str, Any]) -> None:
    """The logging the global flags ask for; ``-q`` wins over ``-v``."""
    level = "warning" if given.get("quiet") else "debug" if given.get("verbose") else "info"
    configure(json=bool(given.get("log_json")), level=level)
