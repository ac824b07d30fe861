"""``dflash-doctor demo``: the incident end to end on the reference trainer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agent.cli.options import Full
from tools.log import configure

if TYPE_CHECKING:
    from playbooks.base import FixPlan


def demo(
    ctx: typer.Context,
    ask: Annotated[bool, typer.Option("--ask", help="Ask before applying the fix.")] = False,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the temporary workspace.")] = False,
    full: Full = False,
) -> None:
    from rich.console import Console
    from rich.markdown import Markdown

    from agent.demo import run_demo
    from agent.facts import Ledger
    from agent.report.build import build_report
    from agent.report.markdown import render_markdown

    root = ctx.parent.params if ctx.parent else {}
    if not (root.get("verbose") or root.get("log_json")):
        # The demo shows its own progress; info events would break into its status lines.
        configure(json=False, level="warning")
    console = Console(stderr=True)

    def prompt(plan: FixPlan) -> bool:
        console.print(plan.diff)
        return typer.confirm(f"apply {plan.playbook}?", default=False)

    state, figures, session = run_demo(console, ask=prompt if ask else None, keep=keep)
    ledger = Ledger(session.dir / "ledger.jsonl")
    Console().print(Markdown(render_markdown(build_report(state, ledger, session.id), full=full)))
    good = figures[0].tok_s
    typer.echo(f"transcript: {session.transcript_path}")
    for figure in figures:
        ratio = ""
        if figure.tok_s is not None and good and figure.label != "good":
            ratio = f" = {figure.tok_s / good:.2f}× good"
        typer.echo(f"{figure.text()}{ratio}")
