"""The suite specifies module by module: each product module with logic of its own (a
function or a method) has a unit test module named after it, so what a module promises
is found in one place and a module added without one is noticed."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "tests" / "unit"
PRODUCT = ("agent", "tools", "playbooks")


def unit_test_names(module: Path) -> set[str]:
    """The names a unit test module of ``module`` may have: ``test_<name>.py``, or with
    a package it sits in before the name (``test_rules_crash.py``, ``test_rule_crash.py``,
    ``test_trainlog_steps.py``), which tells apart two modules of one name."""
    parts = module.relative_to(REPO).with_suffix("").parts
    name = parts[-1].lstrip("_")
    names = {f"test_{name}.py"}
    for package in parts[:-1]:
        for word in {package.lstrip("_"), package.lstrip("_").removesuffix("s")}:
            names.add(f"test_{word}_{name}.py")
    return names


def has_logic(module: Path) -> bool:
    tree = ast.parse(module.read_text(), str(module))
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in ast.walk(tree))


def test_every_module_with_logic_has_a_unit_test_module_named_after_it() -> None:
    """Every module of agent/, tools/ and playbooks/ that defines a function or method
    (``__init__.py`` aside) has one of its test file names under tests/unit/."""
    tests = {p.name for p in UNIT.glob("test_*.py")}
    bare = [
        str(module.relative_to(REPO))
        for top in PRODUCT
        for module in sorted((REPO / top).rglob("*.py"))
        if module.name != "__init__.py" and has_logic(module)
        if not unit_test_names(module) & tests
    ]
    assert bare == [], f"{len(bare)} modules without a unit test module: {bare}"


def test_the_names_tell_apart_two_modules_of_one_name() -> None:
    """Worked by hand: tools/parsers/stdoutlog.py and tools/probes/stdoutlog.py share
    ``test_stdoutlog.py`` but each has its own package-named file; a leading underscore
    and a plural package are dropped."""
    parsers = unit_test_names(REPO / "tools" / "parsers" / "stdoutlog.py")
    probes = unit_test_names(REPO / "tools" / "probes" / "stdoutlog.py")
    assert parsers - probes == {
        "test_parsers_stdoutlog.py",
        "test_parser_stdoutlog.py",
    }
    assert probes - parsers == {"test_probes_stdoutlog.py", "test_probe_stdoutlog.py"}
    steps = unit_test_names(REPO / "tools" / "parsers" / "_trainlog" / "steps.py")
    assert "test_trainlog_steps.py" in steps and "test_steps.py" in steps
