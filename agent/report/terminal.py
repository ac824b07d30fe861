"""The terminal side of a guided session: show the evidence and the ranked hypotheses,
then ask what next — test a named hypothesis, run more probes, pick a playbook, or stop.

The graph asks the question (an ``interrupt`` in ``agent.graph.nodes.guide``); this module only
shows what the report says and turns keystrokes into a ``Choice``. Nothing here decides
anything about the target: every line shown is a report line, with its fact ids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console

from agent.model.shown import with_cites
from agent.report.markdown import MARK
from agent.report.model import Report

Prompt = Callable[[str], str]


def show(console: Console, report: Report) -> None:
    """The verdict and the symptoms, then the ranked hypotheses: a verified one with every
    cited claim, any other with the claim that decided it (all of them: the report)."""
    console.print(f"[bold]{report.verdict}[/bold] — session {report.session}")
    for section in report.sections:
        if section.kind == "symptoms":
            for line in section.lines:
                text = with_cites(line.text, line.cites)
                console.print(f"  {MARK[line.outcome]} {text}", markup=False)
    if not report.hypotheses:
        console.print("  no hypothesis was formed from the facts (see 'what was checked')")
    for rank, hyp in enumerate(report.hypotheses, start=1):
        console.print(f"  {rank}. {hyp.kind}: {hyp.status}", markup=False)
        claims = hyp.claims
        if hyp.status != "verified":
            claims = [c for c in hyp.claims if c.status != "holds"][:1]
        for claim in claims:
            text = with_cites(claim.text, claim.cites)
            console.print(f"     {MARK[claim.status]} {text}", markup=False)


def show_new(console: Console, facts: Sequence[tuple[str, str, str]]) -> None:
    """The facts a [p]robe or [t]est gathered (id, probe, what it holds): what changed."""
    if not facts:
        return
    console.print(f"  {len(facts)} new fact(s):", markup=False)
    for fact_id, probe, summary in facts:
        console.print(f"    {fact_id} {probe}: {summary}", markup=False)


def ask_next(
    question: dict[str, Any], prompt: Prompt, say: Callable[[str], None]
) -> dict[str, Any]:
    """One menu answer, as the ``guide`` node expects it. End of input means stop. The
    menu offers [f]ix only when a playbook is offered, and says which families are in
    focus (a ``t`` narrows it; ``t`` then ``all`` widens it again)."""
    kinds: Sequence[str] = question.get("kinds", [])
    offered: Sequence[str] = question.get("offered", [])
    focus: Sequence[str] = question.get("focus") or []
    if focus:
        say(f"in focus: {', '.join(focus)} (t, then all, to test every family)")
    menu = ["[t]est a hypothesis", "[p]robe again", *(["[f]ix"] if offered else []), "[s]top"]
    letters = ", ".join(item[1] for item in menu)
    while True:
        action = prompt("next: " + ", ".join(menu)).strip().lower()
        if action in ("s", "stop", "q", "quit"):
            return {"action": "stop"}
        if action in ("t", "test"):
            kind = prompt(f"which one ({', '.join(kinds)}, or all)").strip()
            if kind == "all":
                return {"action": "test", "kind": None}
            if kind in kinds:
                return {"action": "test", "kind": kind}
            say(f"unknown hypothesis kind {kind!r}")
        elif action in ("p", "probe"):
            known = question.get("probes", [])
            raw = prompt(f"which probes, comma-separated ({', '.join(known)})")
            probes = [p.strip() for p in raw.split(",") if p.strip()]
            unknown = [p for p in probes if p not in known]
            if probes and not unknown:
                return {"action": "probe", "probes": probes}
            say(f"unknown probes {unknown}" if unknown else "no probe named")
        elif action in ("f", "fix"):
            if not offered:
                say("no playbook is offered: no verified hypothesis unlocks one")
                continue
            name = prompt(f"which playbook ({', '.join(offered)})").strip() or offered[0]
            if name in offered:
                return {"action": "fix", "playbook": name}
            say(f"{name!r} is not offered")
        else:
            say(f"{action!r}: answer one of {letters}")
