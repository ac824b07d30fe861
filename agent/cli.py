"""The ``dflash-doctor`` command line. Logging is configured here and nowhere else."""

from __future__ import annotations

import sys
from typing import Annotated

import structlog
import typer

from agent import __version__
from agent.logs import configure_logging
from agent.session import Session
from tools.errors import DoctorError
from tools.transport import SSHOptions, parse_target

app = typer.Typer(
    name="dflash-doctor",
    help="Evidence-first debugging for DFlash drafter training: facts first, then claims.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
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
    configure_logging(json=log_json, level="warning" if quiet else "debug" if verbose else "info")


TargetOpt = Annotated[
    str,
    typer.Option("--target", "-t", help="local | local/pct:200 | ssh://user@host[:port][/HOP…]"),
]
AcceptNewOpt = Annotated[
    bool,
    typer.Option(
        "--accept-new-host-key",
        help="Trust and remember a host key seen for the first time "
        "(a changed key is always refused).",
    ),
]
KnownHostsOpt = Annotated[
    str | None, typer.Option("--known-hosts", help="known_hosts file to use.")
]
IdentityOpt = Annotated[str | None, typer.Option("--identity", "-i", help="Private key file.")]
SSHConfigOpt = Annotated[
    str | None, typer.Option("--ssh-config", help="ssh_config file (default ~/.ssh/config).")
]
ConnectTimeoutOpt = Annotated[
    float, typer.Option("--connect-timeout", help="Seconds to wait for a TCP connection.")
]
RetriesOpt = Annotated[
    int, typer.Option("--retries", help="Extra connection attempts (connection failures only).")
]


def ssh_options(
    accept_new_host_key: bool,
    known_hosts: str | None,
    identity: str | None,
    ssh_config: str | None,
    connect_timeout: float,
    retries: int,
) -> SSHOptions:
    return SSHOptions(
        accept_new_host_key=accept_new_host_key,
        known_hosts=known_hosts,
        identity_file=identity,
        ssh_config=ssh_config,
        connect_timeout=connect_timeout,
        retries=retries,
    )


@app.command(
    "exec",
    context_settings={"allow_interspersed_args": False},
    help="Run one command through the target chain; print its output; exit with its code.",
)
def exec_(
    command: Annotated[list[str], typer.Argument(help="The command and its arguments, after --.")],
    target: TargetOpt = "local",
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="Seconds before the command is killed.")
    ] = None,
    accept_new_host_key: AcceptNewOpt = False,
    known_hosts: KnownHostsOpt = None,
    identity: IdentityOpt = None,
    ssh_config: SSHConfigOpt = None,
    connect_timeout: ConnectTimeoutOpt = 10.0,
    retries: RetriesOpt = 3,
) -> None:
    uri = parse_target(target)  # bad URIs fail here, before a session is created
    session = Session(
        ssh=ssh_options(
            accept_new_host_key, known_hosts, identity, ssh_config, connect_timeout, retries
        ),
        header={"command": "exec", "target": str(uri)},
        redact_hosts=[uri.host] if uri.host else [],
    )
    structlog.contextvars.bind_contextvars(session=session.id)
    try:
        result = session.target(str(uri)).run(command, timeout=timeout)
    finally:
        session.close()
    sys.stdout.buffer.write(result.stdout)
    sys.stdout.buffer.flush()
    sys.stderr.buffer.write(result.stderr)
    sys.stderr.buffer.flush()
    # ssh reports "killed by a signal, status unknown" as -1; 255 is what ssh(1) exits with.
    raise typer.Exit(result.rc if 0 <= result.rc <= 255 else 255)


def main() -> None:
    try:
        app()
    except DoctorError as exc:
        # One line, no traceback: what went wrong and where is in the message.
        message = " ".join(str(exc).split())
        print(f"dflash-doctor: error: {message}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("dflash-doctor: interrupted", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    main()
