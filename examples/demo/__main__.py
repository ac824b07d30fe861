"""``python -m examples.demo [--ask] [--keep] [--full] [-v]``: run the reference trainer,
break it as the incident did, diagnose, fix; print the report and good / broken / fixed
tokens/s, each figure with where it comes from.

A source-checkout program (the trainer it runs lives in ``examples/``), so it is not a
command of the installed ``dflash-doctor``; its errors are one line, as the doctor's are.
"""

from __future__ import annotations

import argparse
import sys

from rich.console import Console
from rich.markdown import Markdown

from agent.model.facts import Ledger
from agent.report.build import build_report
from agent.report.markdown import render_markdown
from examples.demo.run import RunFigure, run_demo
from playbooks.base import FixPlan
from tools.errors import DoctorError
from tools.log import configure


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m examples.demo", description=__doc__)
    parser.add_argument("--ask", action="store_true", help="ask before applying the fix")
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace")
    parser.add_argument(
        "--full", action="store_true", help="every hypothesis and fact in the report"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show the doctor's log")
    return parser.parse_args(argv)


def _ratios(figures: list[RunFigure]) -> list[str]:
    """Each figure's line, and beside the broken and fixed ones their ratio to good (the
    division is the formula; both operands are on the lines printed)."""
    good = figures[0].tok_s
    lines = []
    for figure in figures:
        ratio = ""
        if figure.tok_s is not None and good and figure.label != "good":
            ratio = f" = {figure.tok_s / good:.2f}× good"
        lines.append(f"{figure.text()}{ratio}")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    # The demo shows its own progress; info events would break into its status lines.
    configure(json=False, level="info" if args.verbose else "warning")
    console = Console(stderr=True)

    def prompt(plan: FixPlan) -> bool:
        console.print(plan.diff)
        return console.input(f"apply {plan.playbook}? [y/N] ").strip().lower() in ("y", "yes")

    try:
        state, figures, session = run_demo(
            console, ask=prompt if args.ask else None, keep=args.keep
        )
    except DoctorError as exc:
        print(f"demo: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("demo: interrupted", file=sys.stderr)
        return 130
    ledger = Ledger(session.dir / "ledger.jsonl")
    report = build_report(state, ledger, session.id)
    Console().print(Markdown(render_markdown(report, full=args.full)))
    print(f"transcript: {session.transcript_path}")
    print("\n".join(_ratios(figures)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
