"""The bundle's text: the probe modules' own sources and the plan, in one program sent on
stdin to ``<interpreter> -B -``."""

from __future__ import annotations

import ast
import functools
import json
import threading
from collections import deque
from collections.abc import Iterable
from pathlib import Path

from tools.probes._runner import FORMAT, SENTINEL
from tools.sweep.plan import Plan

PACKAGE = "_dflash_doctor_bundle"
# The tools package, whose probe and parser modules the bundle carries.
_TOOLS = Path(__file__).resolve().parents[1]


# Each bundle module's relative imports, filled on first use. One lock around the fill:
# CPython 3.11's ast.parse is not safe in two threads at once (gh-106905: "AST
# constructor recursion depth mismatch" when a garbage collection runs Python code
# mid-parse), health renders bundles from one thread per target, and holding the lock
# for the whole fill also parses each module once per process, not once per thread.
_IMPORTS: dict[str, tuple[str, ...]] = {}
_IMPORTS_LOCK = threading.Lock()

_BLOCKS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


def _import_froms(tree: ast.Module) -> Iterable[ast.ImportFrom]:
    """The ``from … import`` statements of a module, at any depth of blocks, in
    ``ast.walk``'s order (the bundle's module order, so its bytes, follow from it). Only
    blocks of statements are walked: an import is a statement, and skipping every
    expression makes this several times cheaper than ``ast.walk``."""
    queue: deque[ast.AST] = deque([tree])
    while queue:
        node = queue.popleft()
        if isinstance(node, ast.ImportFrom):
            yield node
        for field in node._fields:
            block = getattr(node, field, None) if field in _BLOCKS else None
            if isinstance(block, list):
                queue.extend(block)


def _relative_imports(name: str) -> tuple[str, ...]:
    """Bundle modules ``name`` (e.g. ``probes.trainlog``) imports relatively. Kept: a
    render asks for each module's imports once per probe that needs it, and the sources
    do not change while the process runs. Safe to call from several threads."""
    with _IMPORTS_LOCK:
        found = _IMPORTS.get(name)
        if found is None:
            found = _IMPORTS[name] = _scan(name, _tree(name))
    return found


def _tree(name: str) -> ast.Module:
    return ast.parse(_source(name))


def _scan(name: str, tree: ast.Module) -> tuple[str, ...]:
    package = name.rsplit(".", 1)[0].split(".")
    found = []
    for node in _import_froms(tree):
        if node.level:
            base = package[: len(package) - (node.level - 1)]
            stem = [*base, *(node.module.split(".") if node.module else [])]
            for alias in node.names:
                candidate = ".".join([*stem, alias.name])
                if _TOOLS.joinpath(*candidate.split(".")).with_suffix(".py").is_file():
                    found.append(candidate)
                else:
                    found.append(".".join(stem))
    return tuple(found)


@functools.cache
def _source(name: str) -> str:
    return _TOOLS.joinpath(*name.split(".")).with_suffix(".py").read_text(encoding="utf-8")


def _modules(roots: Iterable[str]) -> list[str]:
    """``roots`` and everything they import, dependencies first."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in order or name in visiting:
            return
        visiting.add(name)
        for dep in _relative_imports(name):
            visit(dep)
        visiting.discard(name)
        order.append(name)

    for root in roots:
        visit(root)
    return order


_BOOTSTRAP = """\
# dflash-doctor probe bundle (format {format}). Read-only: it stats and reads files and
# /proc and runs read-only commands (nvidia-smi); it writes nothing. The probes'
# sources follow; each is run in a forked child with a time limit.
import os, sys
# The command line's -B kept the start-up from writing bytecode; these keep the rest of
# this run (a bundle sent without -B too) and any Python a probe starts from writing it.
sys.dont_write_bytecode = True
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
# The working directory must not shadow the stdlib (a json.py there, say).
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
if sys.version_info < (3, 8):
    sys.stdout.write("\\n{sentinel}" + '{{"format": {format}, "fatal": "python %d.%d is older '
                     'than 3.8"}}' % sys.version_info[:2] + "\\n")
    sys.exit(0)
import json, traceback, types
PACKAGE = {package!r}
SOURCES = json.loads({sources!r})
PLAN = json.loads({plan!r})
BROKEN = {{}}
root = types.ModuleType(PACKAGE)
root.__path__ = []
sys.modules[PACKAGE] = root
for name, source in SOURCES:
    parts = name.split(".")
    parent = PACKAGE
    for part in parts[:-1]:
        sub = parent + "." + part
        if sub not in sys.modules:
            pkg = types.ModuleType(sub)
            pkg.__path__ = []
            sys.modules[sub] = pkg
            setattr(sys.modules[parent], part, pkg)
        parent = sub
    mod = types.ModuleType(PACKAGE + "." + name)
    mod.__package__ = parent
    mod.__file__ = "<bundle>/" + name.replace(".", "/") + ".py"
    sys.modules[mod.__name__] = mod
    try:
        exec(compile(source, mod.__file__, "exec"), mod.__dict__)
    except BaseException:
        BROKEN[name] = traceback.format_exc(limit=-2)[-600:]
        continue
    setattr(sys.modules[parent], parts[-1], mod)
if "probes._runner" in BROKEN:
    sys.stdout.write("\\n{sentinel}" + json.dumps({{"format": {format},
                     "fatal": BROKEN["probes._runner"]}}) + "\\n")
    sys.exit(0)
sys.modules[PACKAGE + ".probes._runner"].main(PLAN, PACKAGE, BROKEN)
"""


def render(plan: Plan) -> bytes:
    """The program sent to ``<interpreter> -B -``: bootstrap, sources, plan."""
    runnable = plan.runnable()
    roots = ["probes._runner", *(f"probes.{p.name}" for p in runnable)]
    names = _modules(roots)
    entries = []
    for p in runnable:
        needs = _modules([f"probes.{p.name}"])
        entries.append(
            {
                "name": p.name,
                "module": f"probes.{p.name}",
                "params": p.params,
                "timeout": p.timeout,
                "needs": needs,
            }
        )
    sources = json.dumps([[n, _source(n)] for n in names])
    wire_plan = json.dumps({"probes": entries, "parallel": plan.parallel})
    text = _BOOTSTRAP.format(
        format=FORMAT, sentinel=SENTINEL, package=PACKAGE, sources=sources, plan=wire_plan
    )
    return text.encode()
