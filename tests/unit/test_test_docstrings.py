"""The suite specifies: every test says in its docstring what behaviour it holds the code
to, so a failure reads as the promise broken, not only as a function name."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_has_a_docstring() -> None:
    """Each ``test_*`` function of tests/ (parametrized ones and methods too) opens with a
    docstring."""
    bare = [
        f"{path.relative_to(TESTS.parent)}:{node.lineno} {node.name}"
        for path in sorted(TESTS.rglob("test_*.py"))
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test")
        and ast.get_docstring(node) is None
    ]
    assert bare == [], f"{len(bare)} tests without a docstring, first: {bare[:5]}"
