"""The HTML report's per-thread bars held to the live fact they draw, read with the
standard library's HTML parser: every sampled thread of a process (the first sixteen of
the fact's list) has one row; its segments' sample counts are the fact's activity counts,
no more and no fewer; its total is the thread's samples; each segment's width is its
count over that total, in percent."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

from tests.lib.oracle.speed import Mismatch

SHOWN = 16  # threads per process the page draws


class _Rows(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "tr" and a.get("class") == "thread":
            self.rows.append({**a, "segments": []})
        elif tag == "span" and a.get("class") == "act" and self.rows:
            width = re.search(r"width:([0-9.]+)%", a.get("style", ""))
            self.rows[-1]["segments"].append(
                (
                    a["data-activity"],
                    int(a["data-samples"]),
                    float(width.group(1)) if width else None,
                )
            )


def check_thread_bars(page: str, facts: dict[str, Any]) -> list[Mismatch]:
    """``facts``: fact id -> the live fact's value."""
    parser = _Rows()
    parser.feed(page)
    bad: list[Mismatch] = []
    drawn = set()
    for row in parser.rows:
        fact, i, j = row["data-fact"], int(row["data-process"]), int(row["data-thread"])
        where = f"{fact} process {i} thread {j}"
        drawn.add((fact, i, j))
        thread = facts[fact]["processes"][i]["threads"][j]
        counts = {name: k for name, k, _ in row["segments"]}
        expected = {a: k for a, k in (thread.get("activities") or {}).items() if k > 0}
        if counts != expected:
            bad.append(Mismatch("activities", expected, counts, where))
        total = int(row["data-of"])
        if total != thread["samples"]:
            bad.append(Mismatch("samples", thread["samples"], total, where))
        for name, k, width in row["segments"]:
            if width is None or abs(width - 100 * k / total) > 0.01:
                bad.append(Mismatch(f"width of {name}", round(100 * k / total, 2), width, where))
    for fact, value in facts.items():
        for i, proc in enumerate(value.get("processes") or []):
            for j, thread in enumerate((proc.get("threads") or [])[:SHOWN]):
                if thread.get("samples") and (fact, i, j) not in drawn:
                    bad.append(Mismatch("row", "drawn", None, f"{fact} process {i} thread {j}"))
    return bad
