"""``dflash-doctor diagnose``: facts, the baseline diff, hypotheses and a cited report."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

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

if TYPE_CHECKING:
    from agent.sessions.session import Session
    from agent.sessions.targets import Resolved


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
    from agent.cli.drive import drive
    from agent.cli.sessions import say_settings
    from agent.graph.state import DiagnosisState
    from agent.sessions.targets import resolve_target

    resolved = resolve_target(target, workspace=workspace, interpreter=interpreter, config=config)
    _refuse_what_cannot_run(hypothesis, proposer, baseline)
    say_settings(resolved)
    session = _session(resolved, baseline, proposer, redact_path or [], ssh)
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


def _refuse_what_cannot_run(
    hypothesis: str | None, proposer: str | None, baseline: str | None
) -> None:
    """An unknown family, a proposer that cannot be built or an unknown baseline fails
    before anything runs."""
    from agent.analysis.baseline import baseline_store
    from agent.model.hypotheses import KINDS

    if hypothesis is not None and hypothesis not in KINDS:
        raise UsageError(f"--hypothesis {hypothesis!r}: not one of {', '.join(KINDS)}")
    if proposer is not None:
        # Only then: langchain's chat-model modules cost every other diagnosis nothing.
        from agent.graph.proposer import load_model

        load_model(proposer)
    if baseline is not None:
        baseline_store().load(baseline)


def _session(
    resolved: Resolved,
    baseline: str | None,
    proposer: str | None,
    redact_paths: list[str],
    ssh: SSHOptions,
) -> Session:
    """The session a diagnosis of ``resolved`` is recorded in."""
    from agent.sessions.config import SessionConfig
    from agent.sessions.session import Session, ssh_dict

    return Session.create(
        SessionConfig(
            command="diagnose",
            target=str(resolved.uri),
            mode="guided",
            spec=resolved.spec,
            baseline=baseline,
            ssh=ssh_dict(ssh),
            redact_paths=redact_paths,
            proposer=proposer,
        )
    )
