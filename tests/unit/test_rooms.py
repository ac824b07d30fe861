"""The house drawing of ``agent/`` (README, "Layout"): each room imports only the rooms
below it, the grounding model imports nothing else of ``agent``, and no two modules
import each other in a circle.

Read from the source with ``ast`` (every import: at the top, in a function, under
``TYPE_CHECKING``), not from ``sys.modules``, so a lazy import cannot hide an arrow.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

AGENT = Path(__file__).resolve().parents[2] / "agent"

# Bottom to top. ``_version`` is a leaf anyone may read (``--version`` loads nothing else);
# ``agent/__init__`` is the public surface over all of them.
ROOMS = ["model", "analysis", "rules", "graph", "sessions", "report", "health", "cli"]


def module_name(path: Path) -> str:
    parts = path.relative_to(AGENT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> Iterator[tuple[int, str]]:
    """Each ``agent`` module ``path`` imports, with its line."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from agent.x import y` may name a module y: count it as agent.x.y when it is one.
            names = [
                f"{node.module}.{alias.name}"
                if (AGENT.parent / node.module.replace(".", "/") / f"{alias.name}.py").exists()
                else node.module
                for alias in node.names
            ]
        else:
            continue
        for name in names:
            if name == "agent" or name.startswith("agent."):
                yield node.lineno, name


def room(module: str) -> str | None:
    """The room a module of ``agent`` stands in; None for the package's own top."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


SOURCES = sorted(AGENT.rglob("*.py"))


def test_every_module_stands_in_a_room() -> None:
    """A module straight under agent/ is only the public surface or the version: anything
    else belongs in a room of the drawing."""
    loose = sorted(
        p.name for p in AGENT.glob("*.py") if p.name not in ("__init__.py", "_version.py")
    )
    assert loose == []
    rooms = {p.name for p in AGENT.iterdir() if (p / "__init__.py").exists()}
    assert rooms == set(ROOMS)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: module_name(p))
def test_no_room_imports_a_room_above_it(path: Path) -> None:
    """An arrow goes down the drawing or stays in its room; the package top (the public
    surface) may import anything, and nothing imports it."""
    here = room(module_name(path))
    if here is None:
        return
    arrows_up = [
        f"line {line}: {name}"
        for line, name in imported(path)
        if (there := room(name)) != "_version"
        and (there is None or ROOMS.index(there) > ROOMS.index(here))
    ]
    assert arrows_up == [], f"{module_name(path)} ({here}) imports upward: {arrows_up}"


def test_the_grounding_model_imports_nothing_else_of_agent() -> None:
    """facts, claims, hypotheses and versions stand alone: a rule or a report can change
    without touching what a claim means."""
    outside = [
        f"{module_name(path)} line {line}: {name}"
        for path in (AGENT / "model").glob("*.py")
        for line, name in imported(path)
        if room(name) != "model"
    ]
    assert outside == []


def test_no_two_modules_import_each_other_in_a_circle() -> None:
    """Within a room too: a circle (even a lazy one) is two modules that cannot be read,
    or changed, apart."""
    graph = {
        module_name(path): {name for _, name in imported(path)} - {module_name(path)}
        for path in SOURCES
    }
    graph = {m: {d for d in deps if d in graph and d != "agent"} for m, deps in graph.items()}
    done: set[str] = set()

    def circle_from(module: str, trail: list[str]) -> list[str] | None:
        if module in trail:
            return [*trail[trail.index(module) :], module]
        if module in done:
            return None
        for dep in sorted(graph[module]):
            # A package's __init__ naming its own modules (rules/__init__ listing the
            # families) is the package's table, not an arrow back.
            if module.startswith(dep + ".") or dep.startswith(module + "."):
                continue
            found = circle_from(dep, [*trail, module])
            if found:
                return found
        done.add(module)
        return None

    circles = [c for m in sorted(graph) if (c := circle_from(m, []))]
    assert circles == [], circles[0]
