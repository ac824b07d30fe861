"""What this torch build does, in the ways a per-device-thread trainer depends on, read
from its sources with ``ast`` (no import: the answer holds where ``import torch`` is
slow or broken). Each answer carries the ``file:line: source`` it rests on; ``None``
means the sources did not say (a layout this reader does not know), never a guess.

- ``fx_flag_process_global``: the flag ``is_fx_tracing`` returns is one module global
  that tracing sets under ``global`` (torch/fx/_symbolic_trace.py), so a trace in one
  thread is seen by every thread's compiled calls; a ``threading.local`` or
  ``ContextVar`` would make it per thread.
- ``config_overrides_thread_local``: a config entry keeps the user's value in a
  ``ContextVar`` (torch/utils/_config_module.py, ``_ConfigEntry.__init__``), so
  ``torch._dynamo.config.recompile_limit = 64`` in the main thread is not what a
  worker thread reads; a plain attribute is shared by all threads.
- ``recompile_limit``: what dynamo calls its per-function recompile limit and its
  default (torch/_dynamo/config.py: ``recompile_limit``, ``cache_size_limit`` in older
  builds, the other an alias of it).
- ``flex_unfused_warning``: flex_attention called outside a compiled region runs its
  unfused path and warns so, once per process where it goes through ``_warn_once``
  (torch/nn/attention/flex_attention.py).

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ._common import TypedDict

FILES = {
    "symbolic_trace": "fx/_symbolic_trace.py",
    "config_module": "utils/_config_module.py",
    "config": "_dynamo/config.py",
    "flex_attention": "nn/attention/flex_attention.py",
}
LIMIT_NAMES = ("recompile_limit", "cache_size_limit")
# The ``torch._dynamo.config`` entries that decide what the FX-tracing race does: their
# defaults in the sources (torch_source), their values in force (torch_runtime) and a
# script's changes to them (script_patches) are read for exactly these.
CONFIG_KEYS = (
    "error_on_nested_fx_trace",
    "force_compile_during_fx_trace",
    "recompile_limit",
    "cache_size_limit",
    "accumulated_recompile_limit",
    "accumulated_cache_size_limit",
    "suppress_errors",
)
PER_THREAD_HOLDERS = ("ContextVar", "local")  # contextvars.ContextVar, threading.local
FLEX_UNFUSED = "flex_attention called without torch.compile()"


class BuildAnswer(TypedDict):
    value: Any  # bool, or a name for recompile_limit; None: the sources did not say
    evidence: list[str]  # "file:line: source"
    note: str


class LimitAnswer(BuildAnswer, total=False):
    default: int  # the limit's default, where the config sets it to a number


if TYPE_CHECKING:  # the bundle runs on Python 3.8: no runtime alias with ``|``
    from collections.abc import Callable

    Reader = Callable[[ast.Module | None, str, str], BuildAnswer]


def _line(rel: str, source: str, node: ast.AST) -> str:
    text = (ast.get_source_segment(source, node) or "").strip().splitlines()[:1]
    return f"{rel}:{getattr(node, 'lineno', 0)}: {' '.join(''.join(text).split())[:160]}"


def _tail(node: ast.AST) -> str:
    """The last name of a dotted callee: ``contextvars.ContextVar`` -> ``ContextVar``."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _unknown(note: str) -> BuildAnswer:
    return {"value": None, "evidence": [], "note": note}


def fx_flag_process_global(tree: ast.Module | None, source: str, rel: str) -> BuildAnswer:
    """Is the flag ``is_fx_tracing`` returns a plain module global that code sets under
    ``global``?"""
    if tree is None:
        return _unknown(f"{rel} not parsed")
    module_level = {
        t.id: node
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    }
    reader = next(
        (
            n
            for n in tree.body
            if isinstance(n, ast.FunctionDef)
            and n.name in ("is_fx_tracing", "is_fx_symbolic_tracing")
        ),
        None,
    )
    if reader is None:
        return _unknown(f"{rel} defines no is_fx_tracing")
    returned = [
        n.id
        for r in ast.walk(reader)
        if isinstance(r, ast.Return) and r.value is not None
        for n in ast.walk(r.value)
        if isinstance(n, ast.Name) and n.id in module_level
    ]
    if not returned:
        return _unknown(f"{reader.name} returns no module-level name of {rel}")
    name = returned[0]
    held = module_level[name]
    value = held.value if isinstance(held, (ast.Assign, ast.AnnAssign)) else None
    evidence = [_line(rel, source, reader), _line(rel, source, held)]
    if isinstance(value, ast.Call) and _tail(value.func) in PER_THREAD_HOLDERS:
        return {
            "value": False,
            "evidence": evidence,
            "note": f"{name} is a {_tail(value.func)}: each thread has its own",
        }
    setters = [g for g in ast.walk(tree) if isinstance(g, ast.Global) and name in g.names]
    if isinstance(value, ast.Constant) and setters:
        return {
            "value": True,
            "evidence": [*evidence, _line(rel, source, setters[0])],
            "note": f"{name} is one module global, set under 'global': every thread sees it",
        }
    return _unknown(f"{name} is neither a per-thread holder nor a global set under 'global'")


def _user_override(tree: ast.Module) -> ast.Assign | ast.AnnAssign | None:
    """``self.user_override = …`` in an ``__init__`` (torch 2.6 on), else a class field
    ``user_override: Any = …`` (a dataclass entry, older builds)."""
    fields: list[ast.Assign | ast.AnnAssign] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            fields += [
                s
                for s in node.body
                if isinstance(s, (ast.Assign, ast.AnnAssign))
                and any(
                    isinstance(t, ast.Name) and t.id == "user_override"
                    for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
                )
            ]
        if not (isinstance(node, ast.FunctionDef) and node.name == "__init__"):
            continue
        for stmt in ast.walk(node):
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and any(
                isinstance(t, ast.Attribute) and t.attr == "user_override"
                for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
            ):
                return stmt
    return fields[0] if fields else None


def config_overrides_thread_local(tree: ast.Module | None, source: str, rel: str) -> BuildAnswer:
    """Where does a config entry keep a value the user set: a ContextVar (per thread) or
    a plain value (shared by every thread)?"""
    if tree is None:
        return _unknown(f"{rel} not parsed")
    stmt = _user_override(tree)
    if stmt is None or stmt.value is None:
        return _unknown(f"{rel} keeps no user_override")
    evidence = [_line(rel, source, stmt)]
    if isinstance(stmt.value, ast.Call) and _tail(stmt.value.func) in PER_THREAD_HOLDERS:
        return {
            "value": True,
            "evidence": evidence,
            "note": "a value set on torch._dynamo.config holds in the thread that set it",
        }
    return {
        "value": False,
        "evidence": evidence,
        "note": "a value set on torch._dynamo.config holds in every thread",
    }


def recompile_limit(tree: ast.Module | None, source: str, rel: str) -> LimitAnswer:
    """The name dynamo's per-function recompile limit has in this build, its default,
    and the alias where the other name is one."""
    if tree is None:
        return {"value": None, "evidence": [], "note": f"{rel} not parsed"}
    found: dict[str, tuple[ast.AST, Any]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id in LIMIT_NAMES:
            found[target.id] = (node, value)
    for name in LIMIT_NAMES:
        if name not in found:
            continue
        where, value = found[name]
        if isinstance(value, ast.Constant) and isinstance(value.value, int):
            others = [_line(rel, source, n) for k, (n, _) in found.items() if k != name]
            return {
                "value": name,
                "evidence": [_line(rel, source, where), *others],
                "note": f"default {value.value}",
                "default": value.value,
            }
    unsaid = f"{rel} sets neither {' nor '.join(LIMIT_NAMES)} to a number"
    return {"value": None, "evidence": [], "note": unsaid}


def flex_unfused_warning(tree: ast.Module | None, source: str, rel: str) -> BuildAnswer:
    """Does flex_attention warn when it runs its unfused path, and how often?"""
    if tree is None:
        return _unknown(f"{rel} not parsed (no flex_attention in this build?)")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        texts = [
            c
            for c in ast.walk(node)
            if isinstance(c, ast.Constant) and isinstance(c.value, str) and FLEX_UNFUSED in c.value
        ]
        if texts and _tail(node.func) in ("warn", "_warn_once", "warning"):
            once = _tail(node.func) == "_warn_once"
            return {
                "value": True,
                "evidence": [_line(rel, source, texts[0])],
                "note": "warned once per process" if once else "warned by Python's warnings",
            }
    return {
        "value": False,
        "evidence": [],
        "note": f"no call in {rel} warns {FLEX_UNFUSED!r}",
    }


def read(parsed: dict[str, tuple[ast.Module | None, str, str]]) -> dict[str, BuildAnswer]:
    """The four answers from the parsed files (key -> tree, source, "torch/<rel>")."""
    return {
        "fx_flag_process_global": fx_flag_process_global(*parsed["symbolic_trace"]),
        "config_overrides_thread_local": config_overrides_thread_local(*parsed["config_module"]),
        "recompile_limit": recompile_limit(*parsed["config"]),
        "flex_unfused_warning": flex_unfused_warning(*parsed["flex_attention"]),
    }
