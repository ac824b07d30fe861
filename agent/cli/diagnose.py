"""``dflash-doctor diagnose``: facts, the baseline diff, hypotheses and a cited report."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from agent.cli.options import (
    Baseline,
    Config,
    Full,
    Interpreter,
    MdOrJson,
    Target,
    Workspace,
    reaches_targets,
)
from tools.errors import UsageError
from tools.log import bind_contextvars, keep_off_prompts
from tools.transport.ssh_options import SSHOptions


@reaches_targets
def diagnose(
    target: Target = None,
    workspace: Workspace = None,
    interpreter: Interpreter = None,
    config: Config = None,
    baseline: Baseline = None,
    fmt: MdOrJson = "md",
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    full: Full = False,
    hypothesis: Annotated[
        str | None,
        typer.Option("--hypothesis", help="Test only this failure family (e.g. fx_trace_race)."),
    ] = None,
    interactive: Annotated[
        bool | None,
        typer.Option(
            "--interactive/--non-interactive",
            help="Ask at the menu after the verdict (default: when stdin is a terminal).",
        ),
    ] = None,
    proposer: Annotated[
        str | None,
        typer.Option(
            "--proposer",
            help="MODULE:FACTORY returning a LangChain chat model that may propose hypotheses.",
        ),
    ] = None,
    plan_only: Annotated[
        bool,
        typer.Option("--plan-only", help="Show the fix a verified fault unlocks; write nothing."),
    ] = False,
    redact_path: Annotated[
        list[str] | None,
        typer.Option("--redact-path", help="A local path to hide in the transcript (repeatable)."),
    ] = None,
    *,
    ssh: SSHOptions,
) -> None:
    from agent.analysis.baseline import baseline_store
    from agent.cli.drive import drive
    from agent.cli.sessions import say_settings
    from agent.graph.state import DiagnosisState
    from agent.model.hypotheses import KINDS
    from agent.sessions.config import SessionConfig
    from agent.sessions.session import Session, ssh_dict
    from agent.sessions.targets import resolve_target

    resolved = resolve_target(target, workspace=workspace, interpreter=interpreter, config=config)
    if hypothesis is not None and hypothesis not in KINDS:
        raise UsageError(f"--hypothesis {hypothesis!r}: not one of {', '.join(KINDS)}")
    if proposer is not None:
        # Only then: langchain's chat-model modules cost every other diagnosis nothing.
        from agent.graph.proposer import load_model

        load_model(proposer)  # a proposer that cannot be built fails before anything runs
    if baseline is not None:
        baseline_store().load(baseline)  # an unknown baseline fails before anything runs
    say_settings(resolved)
    session = Session.create(
        SessionConfig(
            command="diagnose",
            target=str(resolved.uri),
            mode="guided",
            spec=resolved.spec,
            baseline=baseline,
            ssh=ssh_dict(ssh),
            redact_paths=redact_path or [],
            proposer=proposer,
        )
    )
    bind_contextvars(session=session.id)
    ask = sys.stdin.isatty() if interactive is None else interactive
    if ask:
        keep_off_prompts()
    start = DiagnosisState(
        # As the facts cite it: the graph's checkpoints keep no host name in clear.
        target=session.recorded(str(resolved.uri)),
        mode="guided",
        baseline=baseline,
        plan_only=plan_only,
        focus=[hypothesis] if hypothesis else [],
        interactive=ask,
    )
    drive(session, start, "json" if as_json else fmt, ask, full=full)
