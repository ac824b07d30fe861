"""The HTML report's per-thread activity bars: for each live trainer process, each of its
sampled threads as one bar split by what its stacks showed (``tools.probes._activities``),
exactly as the live fact counts them: a segment's width is its activity's samples over
the thread's samples, and its tooltip says both numbers and the fact.
"""

from __future__ import annotations

import html
from typing import Any

from agent.model.facts import Fact, as_dict
from tools.probes._activities import ACTIVITIES

MAX_THREADS = 16  # per process, in the fact's order (the busiest first)

# One colour per activity: the waits and the sleeps warm, compiled code green, the eager
# and compiling paths amber, the rest grey.
COLORS: dict[str, str] = {
    "collective": "#8e44ad",
    "data_loading": "#2980b9",
    "fx_tracing": "#d35400",
    "compiling": "#f39c12",
    "eager_attention": "#e67e22",
    "compiled_code": "#27ae60",
    "waiting": "#c0392b",
    "sleeping": "#e74c3c",
    "own_code": "#16a085",
    "idle": "#bdc3c7",
    "python": "#7f8c8d",
}
assert set(COLORS) == set(ACTIVITIES)

CSS = (
    ".bar{display:flex;width:420px;height:14px;background:#f4f4f4}"
    ".bar span{display:block;height:100%}.key span{display:inline-block;width:.9em;"
    "height:.9em;margin:0 .3em 0 .8em;vertical-align:middle}"
)


def thread_bars(live: Fact | None) -> list[str]:
    """The section, or nothing where the live fact sampled no thread."""
    if live is None or not live.ok:
        return []
    procs = [
        (i, as_dict(p))
        for i, p in enumerate(as_dict(live.value).get("processes") or [])
        if any(as_dict(t).get("samples") for t in as_dict(p).get("threads") or [])
    ]
    if not procs:
        return []
    out = [
        "<h2 id='threads'>what the threads were doing</h2>",
        f"<p class='note'>Each bar is one thread's stack samples [<a href='#{live.id}'>"
        f"{live.id}</a>], split by activity; a segment's width is its share of them.</p>",
        "<p class='key'>"
        + "".join(
            f"<span style='background:{COLORS[a]}'></span>{html.escape(a)}" for a in ACTIVITIES
        )
        + "</p>",
    ]
    for i, proc in procs:
        out.append(
            f"<h3>pid {proc.get('pid')} <code>"
            f"{html.escape(str(proc.get('cmdline') or '')[:120])}</code></h3>"
            "<table><tr><th>thread</th><th>cores</th><th>samples</th></tr>"
        )
        threads = [as_dict(t) for t in proc.get("threads") or []]
        for j, thread in enumerate(threads[:MAX_THREADS]):
            if thread.get("samples"):
                out.append(_row(live.id, i, j, proc, thread))
        out.append("</table>")
    return out


def _row(fact: str, i: int, j: int, proc: dict[str, Any], thread: dict[str, Any]) -> str:
    total = int(thread["samples"])
    counts = as_dict(thread.get("activities"))
    segments = []
    for activity in ACTIVITIES:
        k = counts.get(activity)
        if not isinstance(k, int) or k <= 0:
            continue
        tip = f"{activity}: {k} of {total} samples [{fact}]"
        segments.append(
            f"<span class='act' data-activity='{activity}' data-samples='{k}' "
            f"style='width:{100 * k / total:.2f}%;background:{COLORS[activity]}' "
            f"title='{html.escape(tip)}'></span>"
        )
    cores = thread.get("cpu_share")
    name = html.escape(f"{thread.get('name')} (tid {thread.get('tid')})")
    return (
        f"<tr class='thread' data-fact='{fact}' data-process='{i}' data-thread='{j}' "
        f"data-of='{total}'><td>{name}</td>"
        f"<td>{'' if cores is None else f'{cores:g}'}</td>"
        f"<td><div class='bar'>{''.join(segments)}</div></td></tr>"
    )
