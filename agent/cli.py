"""The ``dflash-doctor`` command line. Logging is configured here and nowhere else."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import structlog
import typer
from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table

from agent import __version__
from agent.baseline import baseline_store
from agent.cli_options import one_of, seconds
from agent.gather import SweepGatherer
from agent.logs import configure_logging
from agent.session import Session, SessionConfig, ssh_dict
from agent.summaries import summarize
from agent.targets import Resolved, resolve_target
from tools.bundle import PROBES
from tools.errors import DoctorError, UsageError
from tools.profile import write_template
from tools.transport import SSHOptions, parse_target

if TYPE_CHECKING:
    from agent.nodes import Doctor
    from agent.state import DiagnosisState
    from playbooks.base import FixPlan

# The graph (langgraph, langchain_core, langsmith), the playbooks, the reports and the
# demo are imported by the commands that use them, not here: `--version`, `--help`,
# `exec`, `facts` and `snapshot` start without them (pip's habit: a command's modules
# load when it runs).

app = typer.Typer(
    name="dflash-doctor",
    help="Evidence-first debugging for DFlash drafter training: facts first, then claims.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Help texts are plain text: "ssh://user@host[:port][/HOP…]" read as Rich markup was
    # a closing tag with no opening one, and `exec --help` died of it.
    rich_markup_mode=None,
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
    float,
    typer.Option(
        "--connect-timeout", help="Seconds to wait for a TCP connection.", callback=seconds
    ),
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
        float | None,
        typer.Option("--timeout", help="Seconds before the command is killed.", callback=seconds),
    ] = None,
    accept_new_host_key: AcceptNewOpt = False,
    known_hosts: KnownHostsOpt = None,
    identity: IdentityOpt = None,
    ssh_config: SSHConfigOpt = None,
    connect_timeout: ConnectTimeoutOpt = 10.0,
    retries: RetriesOpt = 3,
) -> None:
    uri = parse_target(target)  # bad URIs fail here, before a session is created
    ssh = ssh_options(
        accept_new_host_key, known_hosts, identity, ssh_config, connect_timeout, retries
    )
    if timeout is not None:
        # --timeout bounds reaching the host as well: a port that never sends a banner
        # must not hold the command for every retry's connect timeout.
        ssh = dataclasses.replace(ssh, connect_deadline=timeout)
    session = Session(
        ssh=ssh,
        header={"command": "exec", "target": str(uri)},
        redact_hosts=[uri.host] if uri.host else [],
    )
    structlog.contextvars.bind_contextvars(session=session.id)
    try:
        # exec prints the command's own bytes; only the transcript is redacted.
        result = session.target(str(uri), redact_results=False).run(command, timeout=timeout)
    finally:
        session.close()
    sys.stdout.buffer.write(result.stdout)
    sys.stdout.buffer.flush()
    sys.stderr.buffer.write(result.stderr)
    sys.stderr.buffer.flush()
    # ssh reports "killed by a signal, status unknown" as -1; 255 is what ssh(1) exits with.
    raise typer.Exit(result.rc if 0 <= result.rc <= 255 else 255)


WorkspaceOpt = Annotated[
    str | None,
    typer.Option("--workspace", "-w", help="The trainer's workspace; its layout is found there."),
]
InterpreterOpt = Annotated[
    str | None, typer.Option("--interpreter", help="The target's Python (e.g. a venv's).")
]
ConfigOpt = Annotated[str | None, typer.Option("--config", help="doctor.toml to read.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _session(command: str, resolved: Resolved, ssh: SSHOptions) -> Session:
    session = Session(
        ssh=ssh,
        header={"command": command, "target": str(resolved.uri)},
        redact_hosts=[resolved.uri.host] if resolved.uri.host else [],
    )
    structlog.contextvars.bind_contextvars(session=session.id)
    return session


@app.command(help="Sweep the target's facts in one round trip and list them.")
def facts(
    target: Annotated[
        str | None, typer.Option("--target", "-t", help="URI or profile name.")
    ] = None,
    workspace: WorkspaceOpt = None,
    interpreter: InterpreterOpt = None,
    config: ConfigOpt = None,
    only: Annotated[
        str | None,
        typer.Option(
            "--only", help="Comma-separated probes (default: all but torch_runtime, on demand)."
        ),
    ] = None,
    as_json: JsonOpt = False,
    accept_new_host_key: AcceptNewOpt = False,
    known_hosts: KnownHostsOpt = None,
    identity: IdentityOpt = None,
    ssh_config: SSHConfigOpt = None,
    connect_timeout: ConnectTimeoutOpt = 10.0,
    retries: RetriesOpt = 3,
) -> None:
    resolved = resolve_target(target, workspace=workspace, interpreter=interpreter, config=config)
    probes = _probe_list(only)
    _say_settings(resolved)
    ssh = ssh_options(
        accept_new_host_key, known_hosts, identity, ssh_config, connect_timeout, retries
    )
    session = _session("facts", resolved, ssh)
    gatherer = SweepGatherer(session.target(str(resolved.uri)), resolved.spec, session.ledger)
    try:
        if as_json:
            gathered = gatherer(probes)
        else:
            count = len(probes) if probes else "all"
            with Console(stderr=True).status(
                f"sweeping {count} probes on {resolved.uri} (one round trip)…"
            ):
                gathered = gatherer(probes)
    finally:
        session.close()
    if as_json:
        document = {
            "session": session.id,
            "target": str(resolved.uri),
            "settings": resolved.settings,
            "facts": [f.model_dump(mode="json") for f in gathered],
            "skipped": gatherer.skipped,
        }
        typer.echo(json.dumps(document, indent=1))
        return
    table = Table(title=f"facts on {resolved.uri} (session {session.id})")
    for column in ("id", "probe", "summary"):
        table.add_column(column, overflow="fold")
    for fact in gathered:
        style = "" if fact.ok else "red"
        table.add_row(fact.id, fact.probe, summarize(fact), style=style)
    console = Console()
    console.print(table)
    if gatherer.skipped:
        console.print(
            "not looked at (nothing configured): " + ", ".join(sorted(gatherer.skipped)),
            style="dim",
        )
    console.print(f"ledger: {session.ledger.path}", style="dim")


def _say_settings(resolved: Resolved) -> None:
    """Which profile (or none) the command runs with: a --config never applies silently."""
    typer.echo(f"settings: {resolved.settings}", err=True)


def _probe_list(only: str | None) -> frozenset[str] | None:
    if not only:
        return None
    names = frozenset(p.strip() for p in only.split(",") if p.strip())
    unknown = sorted(names - set(PROBES))
    if unknown:
        raise UsageError(
            f"unknown probe(s) {', '.join(unknown)} in --only (known: {', '.join(PROBES)})"
        )
    return names


BaselineOpt = Annotated[
    str | None,
    typer.Option(
        "--baseline", "-b", help="A snapshot name; without it, derive one from the workspace."
    ),
]


@app.command(help="Store the target's facts now as a named known good state.")
def snapshot(
    name: Annotated[str, typer.Option("--name", "-n", help="Name of the baseline.")],
    target: Annotated[
        str | None, typer.Option("--target", "-t", help="URI or profile name.")
    ] = None,
    workspace: WorkspaceOpt = None,
    interpreter: InterpreterOpt = None,
    config: ConfigOpt = None,
    accept_new_host_key: AcceptNewOpt = False,
    known_hosts: KnownHostsOpt = None,
    identity: IdentityOpt = None,
    ssh_config: SSHConfigOpt = None,
    connect_timeout: ConnectTimeoutOpt = 10.0,
    retries: RetriesOpt = 3,
) -> None:
    resolved = resolve_target(target, workspace=workspace, interpreter=interpreter, config=config)
    store = baseline_store()
    store.path(name)  # a bad name fails before anything runs
    _say_settings(resolved)
    ssh = ssh_options(
        accept_new_host_key, known_hosts, identity, ssh_config, connect_timeout, retries
    )
    session = _session("snapshot", resolved, ssh)
    try:
        gathered = SweepGatherer(session.target(str(resolved.uri)), resolved.spec, session.ledger)(
            None
        )
    finally:
        session.close()
    path = store.save(name, str(resolved.uri), gathered)
    failed = [f.probe for f in gathered if not f.ok]
    typer.echo(f"baseline {name!r}: {len(gathered)} facts from {resolved.uri} -> {path}")
    if failed:
        typer.echo(f"  (could not observe: {', '.join(failed)})")


@app.command(help="Diagnose the target: facts, baseline diff, hypotheses, cited report.")
def diagnose(
    target: Annotated[
        str | None, typer.Option("--target", "-t", help="URI or profile name.")
    ] = None,
    workspace: WorkspaceOpt = None,
    interpreter: InterpreterOpt = None,
    config: ConfigOpt = None,
    baseline: BaselineOpt = None,
    fmt: Annotated[
        str, typer.Option("--format", help="md | json", callback=one_of("md", "json"))
    ] = "md",
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
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
    accept_new_host_key: AcceptNewOpt = False,
    known_hosts: KnownHostsOpt = None,
    identity: IdentityOpt = None,
    ssh_config: SSHConfigOpt = None,
    connect_timeout: ConnectTimeoutOpt = 10.0,
    retries: RetriesOpt = 3,
) -> None:
    from agent.proposer import KINDS, load_model
    from agent.state import DiagnosisState

    resolved = resolve_target(target, workspace=workspace, interpreter=interpreter, config=config)
    if hypothesis is not None and hypothesis not in KINDS:
        raise UsageError(f"--hypothesis {hypothesis!r}: not one of {', '.join(KINDS)}")
    if proposer is not None:
        load_model(proposer)  # a proposer that cannot be built fails before anything runs
    if baseline is not None:
        baseline_store().load(baseline)  # an unknown baseline fails before anything runs
    _say_settings(resolved)
    ssh = ssh_options(
        accept_new_host_key, known_hosts, identity, ssh_config, connect_timeout, retries
    )
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
    structlog.contextvars.bind_contextvars(session=session.id)
    ask = sys.stdin.isatty() if interactive is None else interactive
    start = DiagnosisState(
        target=str(resolved.uri),
        mode="guided",
        baseline=baseline,
        plan_only=plan_only,
        focus=[hypothesis] if hypothesis else [],
        interactive=ask,
    )
    _drive(session, start, "json" if as_json else fmt, ask)


@app.command(help="Continue a session after a crash, or answer its pending approval.")
def resume(
    session_id: Annotated[str, typer.Argument(help="The session id (see its state directory).")],
    approve: Annotated[
        bool | None, typer.Option("--approve/--decline", help="Answer the pending approval.")
    ] = None,
    fmt: Annotated[
        str, typer.Option("--format", help="md | json", callback=one_of("md", "json"))
    ] = "md",
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
) -> None:
    session = Session.reopen(session_id)
    structlog.contextvars.bind_contextvars(session=session.id)
    _drive(session, None, "json" if as_json else fmt, sys.stdin.isatty(), answer=approve)


def _drive(
    session: Session,
    start: DiagnosisState | None,
    fmt: str,
    interactive: bool,
    answer: bool | None = None,
) -> None:
    from agent import guided
    from agent.fix_site import site_for
    from agent.fixes import adapt
    from agent.proposer import LLMProposer, load_model
    from agent.report import build_report, render_markdown
    from agent.runner import build_doctor, record_outcome, run_session
    from playbooks import default_playbooks

    assert session.config is not None and session.config.spec is not None
    err = Console(stderr=True)
    try:
        transport = session.target(session.config.target)
        spec = session.config.spec
        # Fixes need to know where the trainer lives: its workspace, launch and logs, from
        # the profile and the facts when a plan is made (agent.fix_site). Without a
        # workspace, the diagnosis still runs and no playbook is offered.
        playbooks = (
            adapt(default_playbooks(), site_for(spec, transport), transport)
            if spec.workspace
            else {}
        )
        proposers = (
            [LLMProposer(load_model(session.config.proposer), PROBES)]
            if session.config.proposer
            else []
        )
        doctor = build_doctor(
            session,
            transport,
            spec,
            approver="human",
            playbooks=playbooks,
            proposers=proposers,
        )
        reply = None
        if answer is not None:
            pending = _pending_question(session, doctor)
            if pending is not None and pending.get("question") == "next":
                raise UsageError(
                    f"session {session.id} waits at the menu, not for an approval: "
                    f"run `dflash-doctor resume {session.id}` in a terminal"
                )
            reply = {"approve": answer, "digest": (pending or {}).get("plan", {}).get("digest")}
        outcome = run_session(session, doctor, start=start, answer=reply)
        while outcome.paused is not None and interactive:
            question = outcome.paused
            if question.get("question") == "next":
                guided.show(err, build_report(outcome.state, session.ledger, session.id))
                reply = guided.ask_next(question, _prompt, err.print)
            else:
                plan = question.get("plan", {})
                err.print(
                    f"fix {plan.get('playbook')} answers {plan.get('hypothesis')}: "
                    + "; ".join(plan.get("steps", [])),
                    markup=False,
                )
                for change in plan.get("changes", []):
                    err.print(change.get("diff", ""), markup=False)
                ok = typer.confirm("apply this fix?", default=False, err=True)
                reply = {"approve": ok, "digest": plan.get("digest")}
            outcome = run_session(session, doctor, answer=reply)
        if outcome.paused is None:
            # A paused session is not finished: its outcome (the plan, the answer, what
            # the fix did) is recorded once, when ``resume`` finishes it.
            record_outcome(session, outcome.state)
    finally:
        session.close()
    report = build_report(outcome.state, session.ledger, session.id)
    if fmt == "json":
        typer.echo(report.model_dump_json(indent=1))
    else:
        Console().print(Markdown(render_markdown(report)))
    if outcome.paused is not None:
        if outcome.paused.get("question") == "next":
            hint = f"paused at the menu: run `dflash-doctor resume {session.id}` in a terminal"
        else:
            hint = (
                f"paused for approval: dflash-doctor resume {session.id} --approve (or --decline)"
            )
        typer.echo(hint, err=True)
    elif outcome.state.verdict is None:
        raise typer.Exit(1)  # no verdict reached (see the log for why)


def _prompt(text: str) -> str:
    """A line from the terminal; end of input is the answer "stop"."""
    try:
        return str(typer.prompt(text, default="", show_default=False, err=True))
    except (typer.Abort, EOFError):
        return "stop"


def _pending_question(session: Session, doctor: Doctor) -> dict[str, Any] | None:
    from agent.graph import build_graph, sqlite_checkpointer

    graph = build_graph(doctor.rules, checkpointer=sqlite_checkpointer(session.graph_path))
    snapshot_ = graph.get_state({"configurable": {"thread_id": session.id}})
    for task in snapshot_.tasks:
        for interrupt_ in task.interrupts:
            value = interrupt_.value
            if isinstance(value, dict):
                return value
    return None


@app.command(help="Re-run a recorded session with no machine; exit 1 if verdicts changed.")
def replay(
    path: Annotated[Path, typer.Argument(help="A transcript (.jsonl).")],
    as_json: JsonOpt = False,
    require_signature: Annotated[
        bool,
        typer.Option(
            "--require-signature", help="Exit 2 unless this installation's key signed it."
        ),
    ] = False,
) -> None:
    from agent.replay import replay as replay_transcript

    result = replay_transcript(path, require_signature=require_signature)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "transcript": str(path),
                    "same": result.same,
                    "verdict": result.state.verdict,
                    "hypotheses": [
                        {"kind": h.kind, "status": h.status} for h in result.state.hypotheses
                    ],
                    "differences": result.differences,
                    "seal": result.seal.as_json(),
                },
                indent=1,
            )
        )
    elif result.same:
        typer.echo(f"{path}: same facts, same verdicts ({result.state.verdict})")
        typer.echo(f"{path}: {result.seal.sentence}")
    else:
        typer.echo(f"{path}: {result.seal.sentence}")
        typer.echo(f"{path}: verdicts changed since recording:")
        typer.echo("\n".join(result.differences))
    raise typer.Exit(0 if result.same else 1)


@app.command(help="Render a recorded session as a report (md, html or json).")
def report(
    path: Annotated[Path, typer.Argument(help="A transcript (.jsonl).")],
    fmt: Annotated[
        str,
        typer.Option("--format", help="md | html | json", callback=one_of("md", "html", "json")),
    ] = "md",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write here, not stdout.")] = None,
) -> None:
    from agent.html_report import render_html
    from agent.recorded import load_recorded
    from agent.report import build_report, render_markdown

    if fmt not in ("md", "html", "json"):
        raise UsageError(f"unknown report format {fmt!r} (md, html or json)")
    recorded = load_recorded(path)
    built = build_report(recorded.state, recorded.ledger, str(recorded.header.get("session")))
    if fmt == "json":
        text = built.model_dump_json(indent=1)
    elif fmt == "html":
        text = render_html(built, recorded.state, recorded.ledger)
    else:
        text = render_markdown(built)
    if out is None:
        typer.echo(text)
    else:
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"{out}: cannot write the report: {exc.strerror}") from None
        typer.echo(f"wrote {out}", err=True)


@app.command(help="Run the reference trainer, break it as the incident did, diagnose, fix.")
def demo(
    ctx: typer.Context,
    ask: Annotated[bool, typer.Option("--ask", help="Ask before applying the fix.")] = False,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the temporary workspace.")] = False,
) -> None:
    from agent.demo import run_demo
    from agent.facts import Ledger
    from agent.report import build_report, render_markdown

    root = ctx.parent.params if ctx.parent else {}
    if not (root.get("verbose") or root.get("log_json")):
        # The demo shows its own progress; info events would break into its status lines.
        configure_logging(json=False, level="warning")
    console = Console(stderr=True)

    def prompt(plan: FixPlan) -> bool:
        console.print(plan.diff)
        return typer.confirm(f"apply {plan.playbook}?", default=False)

    state, figures, session = run_demo(console, ask=prompt if ask else None, keep=keep)
    ledger = Ledger(session.dir / "ledger.jsonl")
    Console().print(Markdown(render_markdown(build_report(state, ledger, session.id))))
    good = figures[0].tok_s
    typer.echo(f"transcript: {session.transcript_path}")
    for figure in figures:
        ratio = ""
        if figure.tok_s is not None and good and figure.label != "good":
            ratio = f" = {figure.tok_s / good:.2f}× good"
        typer.echo(f"{figure.text()}{ratio}")


@app.command(help="Write a commented doctor.toml template.")
def init(
    path: Annotated[str, typer.Argument(help="Where to write it.")] = "doctor.toml",
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    written = write_template(path, force=force)
    typer.echo(f"wrote {written}")


# Defined in its own module (agent/health_cli.py); registered here, after every other command.
from agent.health_cli import HELP as _HEALTH_HELP  # noqa: E402
from agent.health_cli import health  # noqa: E402

app.command("health", help=_HEALTH_HELP)(health)


def main() -> None:
    if not sys.argv[1:]:
        app()  # no command at all: typer's help, as a bare `dflash-doctor` always showed
    try:
        # Not standalone: typer's usage errors come here, to be one line like every other
        # error instead of a usage banner and a boxed message.
        code = app(standalone_mode=False)
    except typer.Abort:
        print("dflash-doctor: interrupted", file=sys.stderr)
        sys.exit(130)
    except typer.TyperException as exc:
        # A usage error (an unknown option, a bad value): its message, and where to look.
        formatted = getattr(exc, "format_message", None)
        raw = formatted() if callable(formatted) else str(exc)
        message = " ".join(str(raw).split())
        ctx = getattr(exc, "ctx", None)
        where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        print(f"dflash-doctor: error: {message}{where}", file=sys.stderr)
        code = getattr(exc, "exit_code", 2)
        sys.exit(code if isinstance(code, int) else 2)
    except DoctorError as exc:
        # One line, no traceback: what went wrong and where is in the message.
        message = " ".join(str(exc).split())
        print(f"dflash-doctor: error: {message}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("dflash-doctor: interrupted", file=sys.stderr)
        sys.exit(130)
    # A command's `typer.Exit(code)` comes back as its code.
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
