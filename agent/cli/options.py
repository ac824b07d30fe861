"""The options commands share, declared once, and their checks: a bad value is a usage
error (exit 2, one line), never a traceback deep in a transport.

``reaches_targets`` gives a command the SSH options (host keys, identity, ssh_config,
timeouts, retries) as one ``ssh: SSHOptions`` argument, so that the five commands that
reach a target cannot drift apart in what they accept or how they spell it.

This module imports typer and plain data only: ``--help`` builds every command from it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from tools.transport.base import check_timeout
from tools.transport.ssh_options import SSHOptions


def seconds(value: float | None) -> float | None:
    """A time limit option: finite, positive, at most a week (``check_timeout``)."""
    if value is None:
        return None
    try:
        return check_timeout(value, "the time limit")
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def one_of(*allowed: str) -> Callable[[str], str]:
    """A ``--format``-style option's check: one of ``allowed``, else a usage error."""

    def check(value: str) -> str:
        if value not in allowed:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(allowed)}")
        return value

    return check


# What a target is: a URI or a profile's name (resolved by agent.sessions.targets).
Target = Annotated[str | None, typer.Option("--target", "-t", help="URI or profile name.")]
# exec runs one command, so it takes a URI only, local by default.
TargetURI = Annotated[
    str,
    typer.Option("--target", "-t", help="local | local/pct:200 | ssh://user@host[:port][/HOP…]"),
]
Workspace = Annotated[
    str | None,
    typer.Option("--workspace", "-w", help="The trainer's workspace; its layout is found there."),
]
Interpreter = Annotated[
    str | None, typer.Option("--interpreter", help="The target's Python (e.g. a venv's).")
]
Config = Annotated[str | None, typer.Option("--config", help="doctor.toml to read.")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
Baseline = Annotated[
    str | None,
    typer.Option(
        "--baseline", "-b", help="A snapshot name; without it, derive one from the workspace."
    ),
]


# A transcript read back (replay, report): refuse one this installation did not sign.
RequireSignature = Annotated[
    bool,
    typer.Option("--require-signature", help="Exit 2 unless this installation's key signed it."),
]
# --format for a document that is Markdown or JSON, or also HTML (a recorded report).
MdOrJson = Annotated[str, typer.Option("--format", help="md | json", callback=one_of("md", "json"))]
# A Markdown report's length: the first screen (the default) or every section and fact.
Full = Annotated[
    bool,
    typer.Option(
        "--full",
        help="The whole Markdown report: every hypothesis, every fact (html, json: always).",
    ),
]
MdHtmlOrJson = Annotated[
    str,
    typer.Option("--format", help="md | html | json", callback=one_of("md", "html", "json")),
]


# The SSH options, in the order --help lists them; (name, annotation, default).
_SSH: list[tuple[str, Any, Any]] = [
    (
        "accept_new_host_key",
        Annotated[
            bool,
            typer.Option(
                "--accept-new-host-key",
                help="Trust and remember a host key seen for the first time "
                "(a changed key is always refused).",
            ),
        ],
        False,
    ),
    (
        "known_hosts",
        Annotated[str | None, typer.Option("--known-hosts", help="known_hosts file to use.")],
        None,
    ),
    (
        "identity",
        Annotated[str | None, typer.Option("--identity", "-i", help="Private key file.")],
        None,
    ),
    (
        "ssh_config",
        Annotated[
            str | None,
            typer.Option("--ssh-config", help="ssh_config file (default ~/.ssh/config)."),
        ],
        None,
    ),
    (
        "connect_timeout",
        Annotated[
            float,
            typer.Option(
                "--connect-timeout", help="Seconds to wait for a TCP connection.", callback=seconds
            ),
        ],
        SSHOptions.connect_timeout,
    ),
    (
        "retries",
        Annotated[
            int,
            typer.Option("--retries", help="Extra connection attempts (connection failures only)."),
        ],
        SSHOptions.retries,
    ),
]
SSH_OPTION_NAMES = tuple(name for name, _, _ in _SSH)

F = TypeVar("F", bound=Callable[..., Any])


def reaches_targets(command: F) -> F:
    """Add the SSH options to ``command``'s signature and hand them to it as one
    ``ssh: SSHOptions`` keyword argument.

    typer reads a command's options from its signature; this rewrites the signature
    (``__signature__``, which ``inspect.signature`` prefers) rather than asking every
    command to spell six parameters and build the options itself.
    """
    # Evaluated: typer finds its Option objects in the annotations, not in their text.
    signature = inspect.signature(command, eval_str=True)
    if "ssh" not in signature.parameters:
        raise TypeError(f"{command.__name__} must take an `ssh` parameter to reach targets")
    kept = [p for p in signature.parameters.values() if p.name != "ssh"]
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann)
        for name, ann, default in _SSH
    ]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = {name: kwargs.pop(name) for name in SSH_OPTION_NAMES}
        kwargs["ssh"] = SSHOptions(
            accept_new_host_key=given["accept_new_host_key"],
            known_hosts=given["known_hosts"],
            identity_file=given["identity"],
            ssh_config=given["ssh_config"],
            connect_timeout=given["connect_timeout"],
            retries=given["retries"],
        )
        return command(*args, **kwargs)

    # Keyword-only, after the command's own: typer passes every option by name.
    wrapper.__signature__ = signature.replace(parameters=[*kept, *added])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in [*kept, *added]}
    if signature.return_annotation is not inspect.Signature.empty:
        wrapper.__annotations__["return"] = signature.return_annotation
    return wrapper  # type: ignore[return-value]
