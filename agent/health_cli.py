"""``dflash-doctor health``: the command function, registered by ``agent.cli``.

It declares its own options rather than importing ``agent.cli``'s, so that importing it
never depends on the order in which the two modules load.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import structlog
import typer

from agent.cli_options import seconds
from agent.health_output import FILES, FORMATS, Format, render, write
from tools.errors import UsageError
from tools.transport import SSHOptions

log = structlog.get_logger(__name__)

HELP = (
    "Read-only health check of one or many targets against a baseline; exit 0 healthy, "
    "1 regression found, 2 could not check."
)


def health(
    target: Annotated[
        list[str] | None,
        typer.Option("--target", "-t", help="URI or profile name (repeatable)."),
    ] = None,
    all_targets: Annotated[
        bool, typer.Option("--all", help="Every target in the profile (doctor.toml).")
    ] = False,
    baseline: Annotated[
        list[str] | None,
        typer.Option(
            "--baseline",
            "-b",
            help="Baseline snapshot NAME for every target, or TARGET=NAME for one (repeatable).",
        ),
    ] = None,
    fmt: Annotated[
        list[str] | None,
        typer.Option(
            "--format",
            help="json | junit | md | prom (repeatable with --out; default: md, or all "
            "four with --out).",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write each format into DIR (and the trend charts)."),
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Targets checked at once.")] = 4,
    target_timeout: Annotated[
        float,
        typer.Option("--target-timeout", help="Seconds allowed per target.", callback=seconds),
    ] = 600.0,
    trend: Annotated[int, typer.Option("--trend", help="Runs shown in each trend.")] = 30,
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace", "-w", help="The incident's layout: DIR/checkpoints/{step_N,…}."
        ),
    ] = None,
    interpreter: Annotated[
        str | None, typer.Option("--interpreter", help="The target's Python (e.g. a venv's).")
    ] = None,
    config: Annotated[str | None, typer.Option("--config", help="doctor.toml to read.")] = None,
    accept_new_host_key: Annotated[
        bool,
        typer.Option(
            "--accept-new-host-key",
            help="Trust and remember a host key seen for the first time "
            "(a changed key is always refused).",
        ),
    ] = False,
    known_hosts: Annotated[
        str | None, typer.Option("--known-hosts", help="known_hosts file to use.")
    ] = None,
    identity: Annotated[
        str | None, typer.Option("--identity", "-i", help="Private key file.")
    ] = None,
    ssh_config: Annotated[
        str | None, typer.Option("--ssh-config", help="ssh_config file (default ~/.ssh/config).")
    ] = None,
    connect_timeout: Annotated[
        float,
        typer.Option(
            "--connect-timeout", help="Seconds to wait for a TCP connection.", callback=seconds
        ),
    ] = 10.0,
    retries: Annotated[
        int, typer.Option("--retries", help="Extra connection attempts (connection failures only).")
    ] = 3,
) -> None:
    from agent.health import plan_targets, run_health  # the graph: only when health runs

    formats = _formats(fmt, out)
    if not baseline:
        raise UsageError("--baseline is required: NAME, or TARGET=NAME per target")
    targets = plan_targets(
        target or [],
        all_targets=all_targets,
        baselines=baseline,
        workspace=workspace,
        interpreter=interpreter,
        config=config,
    )
    if out is not None:
        # Before any target is checked: a nightly run that cannot write its report
        # should say so at once, not after sweeping every host.
        try:
            out.mkdir(parents=True, exist_ok=True)
            probe = out / ".dflash-doctor-write-check"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise UsageError(
                f"{out}: cannot write the health report there: {exc.strerror}"
            ) from None
    ssh = SSHOptions(
        accept_new_host_key=accept_new_host_key,
        known_hosts=known_hosts,
        identity_file=identity,
        ssh_config=ssh_config,
        connect_timeout=connect_timeout,
        retries=retries,
    )
    run = run_health(targets, ssh=ssh, jobs=jobs, limit=target_timeout, trend=trend)
    if out is None:
        sys.stdout.write(render(run, formats[0]))
        sys.stdout.flush()
    else:
        try:
            written = write(run, formats, out)
        except OSError as exc:
            raise UsageError(f"{out}: cannot write the health report: {exc.strerror}") from None
        if run.exit_code != 0:
            # Quiet when all is well, so that cron mails and journals only speak up then.
            typer.echo(f"health: exit {run.exit_code}: {run.exit_reason}")
            typer.echo(f"  written: {', '.join(str(p) for p in written)}")
    log.info("health_run", run=run.run, exit_code=run.exit_code, reason=run.exit_reason)
    raise typer.Exit(run.exit_code)


def _formats(given: list[str] | None, out: Path | None) -> list[Format]:
    chosen: list[Format] = []
    for name in given or []:
        for part in name.split(","):
            part = part.strip()
            if part not in FORMATS:
                raise UsageError(f"unknown --format {part!r} (one of {', '.join(FORMATS)})")
            if part not in chosen:
                chosen.append(part)
    if not chosen:
        return list(FORMATS) if out is not None else ["md"]
    if out is None and len(chosen) > 1:
        raise UsageError(
            f"{len(chosen)} formats need --out DIR (files: "
            + ", ".join(FILES[f] for f in chosen)
            + "); without it, one format goes to stdout"
        )
    return chosen
