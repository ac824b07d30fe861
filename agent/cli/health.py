"""``dflash-doctor health``: read-only checks of one or many targets against a baseline
(a named snapshot, or derived from each target's own record as ``diagnose`` derives it),
for cron and CI (exit 0 healthy, 1 regression found, 2 could not check)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agent.cli.options import Config, Interpreter, Workspace, reaches_targets, seconds
from agent.health.output.names import FILES, FORMATS
from tools.errors import UsageError
from tools.log import get_logger
from tools.transport.ssh_options import SSHOptions

if TYPE_CHECKING:
    from agent.health.model import HealthRun
    from agent.health.output.names import Format

log = get_logger(__name__)


@reaches_targets
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
            help="Baseline snapshot NAME for every target, or TARGET=NAME for one "
            "(repeatable); without one, a target's baseline is derived from its own record "
            "(checkpoint, train log), as diagnose derives it.",
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
    workspace: Workspace = None,
    interpreter: Interpreter = None,
    config: Config = None,
    *,
    ssh: SSHOptions,
) -> None:
    from agent.health.output.formats import render
    from agent.health.run import plan_targets, run_health

    formats = _formats(fmt, out)
    targets = plan_targets(
        target or [],
        all_targets=all_targets,
        baselines=baseline or [],
        workspace=workspace,
        interpreter=interpreter,
        config=config,
    )
    if out is not None:
        _check_writable(out)
    run = run_health(targets, ssh=ssh, jobs=jobs, limit=target_timeout, trend=trend)
    if out is None:
        sys.stdout.write(render(run, formats[0]))
        sys.stdout.flush()
    else:
        _write_out(run, formats, out)
    log.info("health_run", run=run.run, exit_code=run.exit_code, reason=run.exit_reason)
    raise typer.Exit(run.exit_code)


def _check_writable(out: Path) -> None:
    """Before any target is checked: a nightly run that cannot write its report should
    say so at once, not after sweeping every host."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".dflash-doctor-write-check"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"{out}: cannot write the health report there: {exc.strerror}") from None


def _write_out(run: HealthRun, formats: list[Format], out: Path) -> None:
    """Every format into ``out``; quiet when all is well, so that cron mails and journals
    only speak up then."""
    from agent.health.output.formats import write

    try:
        written = write(run, formats, out)
    except OSError as exc:
        raise UsageError(f"{out}: cannot write the health report: {exc.strerror}") from None
    if run.exit_code != 0:
        typer.echo(f"health: exit {run.exit_code}: {run.exit_reason}")
        typer.echo(f"  written: {', '.join(str(p) for p in written)}")


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
