"""Writing a health run out: one format to stdout, or every asked-for format into a
directory (``--out``), each file written whole and renamed into place, so a dashboard,
a CI job or node_exporter reading the directory never sees half a file.

    health.json                 --format json
    health.junit.xml            --format junit
    health.md + trend-*.svg     --format md (one throughput chart per target)
    dflash_doctor_health.prom   --format prom
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

from agent.health.model import HealthRun
from agent.health.output import junit, markdown, prom
from agent.health.output.names import FILES, Format
from agent.health.output.trend import svg
from tools.localfile import write_file
from tools.text import model_json


def render(run: HealthRun, fmt: Format, trend_files: dict[str, str] | None = None) -> str:
    if fmt == "json":
        return model_json(run, indent=1) + "\n"
    if fmt == "junit":
        return junit.render(run)
    if fmt == "md":
        return markdown.render(run, trend_files)
    return prom.render(run)


def trend_name(target: str) -> str:
    """A file name for a target's chart: readable, and distinct for distinct targets."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", target).strip("._")[:48] or "target"
    return f"trend-{slug}-{hashlib.sha256(target.encode()).hexdigest()[:6]}.svg"


def write(run: HealthRun, formats: Sequence[Format], out: Path) -> list[Path]:
    """Write ``formats`` into ``out`` (created if needed); returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    trend_files: dict[str, str] = {}
    if "md" in formats:
        for t in run.targets:
            if any(p.tokens_per_s is not None for p in t.trend):
                name = trend_name(t.target)
                # Drawn from the figures the throughput was judged on (``judged``).
                chart = svg(
                    t.trend,
                    f"{t.target} tokens/s",
                    t.judged.baseline if t.judged else None,
                    which=t.baseline_used.text if t.baseline_used else "",
                    ratio=t.judged.ratio if t.judged else None,
                )
                write_file(out / name, chart, force=True, what="a trend chart")
                trend_files[t.target] = name
                written.append(out / name)
    for fmt in formats:
        path = out / FILES[fmt]
        write_file(path, render(run, fmt, trend_files), force=True, what="the health report")
        written.append(path)
    return written
