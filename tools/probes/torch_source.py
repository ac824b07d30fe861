"""What the installed torch does about the FX-tracing race, read from its sources.

No import: the files are parsed with ``ast``, so the answer holds for the installed
build even when ``import torch`` is slow, broken or patched. Three questions, each with
the file:line evidence behind its answer (see shared/experiments/README.md):

- ``binds_check_at_wrap``: does ``torch/_dynamo/eval_frame.py`` copy
  ``torch.fx._symbolic_trace.is_fx_symbolic_tracing`` into a local when it builds a
  compiled wrapper, and call that local on every call? Then patching the module
  attribute later changes nothing for wrappers that exist.
- ``holds_compiling_flag``: does ``torch/_dynamo/convert_frame.py`` hold
  ``torch.compiler._is_compiling_flag`` for the whole compilation
  (``_compile_session_context``)? Without it, thread A's compile (an FX trace) makes
  thread B's compiled call see ``is_fx_symbolic_tracing() == True``: the race is open.
- the source of ``is_fx_symbolic_tracing`` itself and the dynamo config defaults that
  decide what happens then (``error_on_nested_fx_trace``, the recompile limits).

``None`` means the sources did not say (an unknown layout), never a guess.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import ast
import os
import sys
from typing import Any

from . import _torch_build
from ._common import SOURCE_MAX, Context, ProbeFailure, TypedDict, read_capped
from ._torch_build import CONFIG_KEYS
from .pyenv import find_package, search_path

NAME = "torch_source"
TIMEOUT = 60.0


class Answer(TypedDict):
    value: bool | None
    evidence: list[str]  # "file:line: source", what the answer rests on
    note: str


class TorchSourceValue(TypedDict):
    torch_path: str
    binds_check_at_wrap: Answer
    holds_compiling_flag: Answer
    is_fx_symbolic_tracing: dict[str, Any]
    dynamo_config_defaults: dict[str, Any]
    build: dict[str, _torch_build.BuildAnswer]  # what this build does (_torch_build)
    files: dict[str, str | None]  # relative path -> error, None when parsed


def _parse(path: str) -> tuple[ast.Module | None, str, str | None]:
    try:
        data, truncated = read_capped(path, SOURCE_MAX)
        if truncated:
            return None, "", f"larger than {SOURCE_MAX} bytes; not parsed"
        source = data.decode("utf-8")
    except OSError as exc:  # FileRefused too: a FIFO, a device, a directory, a loop
        return None, "", exc.strerror or str(exc)
    except UnicodeDecodeError as exc:
        return None, "", f"not UTF-8: {exc}"
    try:
        return ast.parse(source, path), source, None
    except SyntaxError as exc:
        # An in-place edit gone wrong, or a torch newer than this interpreter's grammar.
        return None, source, f"does not parse: {exc.msg} (line {exc.lineno})"


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _segment(source: str, node: ast.AST) -> str:
    text = ast.get_source_segment(source, node) or ""
    return " ".join(text.split())[:200]


def _functions(tree: ast.AST) -> list[tuple[ast.AST, list[ast.AST]]]:
    """Every function with the list of functions nested inside it."""
    out: list[tuple[ast.AST, list[ast.AST]]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner: list[ast.AST] = [
                n
                for n in ast.walk(node)
                if n is not node and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
            out.append((node, inner))
    return out


def binds_check(tree: ast.Module, source: str, rel: str) -> Answer:
    evidence: list[str] = []
    call_time: list[str] = []
    for fn, inner in _functions(tree):
        local = None
        for stmt in ast.walk(fn):
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and _dotted(stmt.value).endswith("_symbolic_trace.is_fx_symbolic_tracing")
            ):
                local = stmt
        if local is None:
            continue
        name = local.targets[0].id  # type: ignore[attr-defined]
        for sub in inner:
            for call in ast.walk(sub):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Name)
                    and call.func.id == name
                ):
                    evidence.append(f"{rel}:{local.lineno}: {_segment(source, local)}")
                    where = getattr(sub, "name", "?")
                    evidence.append(f"{rel}:{call.lineno}: {name}() called in {where}()")
                    break
            if evidence:
                break
        if evidence:
            break
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _dotted(node.func).endswith(
            "_symbolic_trace.is_fx_symbolic_tracing"
        ):
            call_time.append(f"{rel}:{node.lineno}: {_segment(source, node)}")
    if evidence:
        return {
            "value": True,
            "evidence": evidence,
            "note": "compiled wrappers hold the check they were built with",
        }
    if call_time:
        return {
            "value": False,
            "evidence": call_time[:5],
            "note": "the check is looked up on each call: a module-level patch reaches it",
        }
    return {
        "value": None,
        "evidence": [],
        "note": f"no use of is_fx_symbolic_tracing found in {rel}",
    }


def holds_flag(
    cf: ast.Module | None,
    cf_src: str,
    cf_rel: str,
    comp: ast.Module | None,
    comp_src: str,
    comp_rel: str,
) -> Answer:
    if cf is None:
        return {"value": None, "evidence": [], "note": f"{cf_rel} not parsed"}
    uses: list[str] = []
    for node in ast.walk(cf):
        if isinstance(node, ast.Call) and _dotted(node.func).endswith("_compile_session_context"):
            uses.append(f"{cf_rel}:{node.lineno}: {_segment(cf_src, node)}")
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if _dotted(t).endswith("_is_compiling_flag"):
                    uses.append(f"{cf_rel}:{node.lineno}: {_segment(cf_src, node)}")
    sets: list[str] = []
    if comp is not None:
        for node in ast.walk(comp):
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.name == "_compile_session_context"
            ):
                for stmt in ast.walk(node):
                    if (
                        isinstance(stmt, ast.Assign)
                        and any(_dotted(t) == "_is_compiling_flag" for t in stmt.targets)
                        and isinstance(stmt.value, ast.Constant)
                        and stmt.value.value is True
                    ):
                        sets.append(f"{comp_rel}:{stmt.lineno}: {_segment(comp_src, stmt)}")
    if uses:
        return {
            "value": True,
            "evidence": uses[:5] + sets[:2],
            "note": "compilation holds torch.compiler._is_compiling_flag: "
            "is_fx_symbolic_tracing() is False while this build compiles",
        }
    return {
        "value": False,
        "evidence": [],
        "note": f"nothing in {cf_rel} sets _is_compiling_flag during compilation: a "
        "concurrent compile makes compiled calls see an FX trace",
    }


def fx_function(tree: ast.Module | None, source: str, rel: str) -> dict[str, Any]:
    if tree is None:
        return {"found": False}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "is_fx_symbolic_tracing":
            body = [
                s
                for s in node.body
                if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
            ]
            return {
                "found": True,
                "where": f"{rel}:{node.lineno}",
                "body": [_segment(source, s) for s in body][:5],
            }
    return {"found": False}


def config_defaults(tree: ast.Module | None, source: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if tree is None:
        return out
    for node in tree.body:
        target, value = None, None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and target.id in CONFIG_KEYS and value is not None:
            try:
                out[target.id] = ast.literal_eval(value)
            except ValueError:
                # e.g. ``cache_size_limit: int = Config(alias=...)``: say what it is.
                out[target.id] = {"expr": _segment(source, value), "line": node.lineno}
    return out


def collect(params: dict[str, Any], ctx: Context) -> TorchSourceValue:
    pkg = params.get("torch_path") or find_package("torch", search_path())
    if pkg is None:
        raise ProbeFailure("unavailable", f"torch is not installed for {sys.executable}")
    rels = {
        "eval_frame": "_dynamo/eval_frame.py",
        "convert_frame": "_dynamo/convert_frame.py",
        "compiler": "compiler/__init__.py",
        "symbolic_trace": "fx/_symbolic_trace.py",
        "config": "_dynamo/config.py",
        **{k: v for k, v in _torch_build.FILES.items() if k not in ("symbolic_trace", "config")},
    }
    parsed: dict[str, tuple[ast.Module | None, str, str | None]] = {}
    files: dict[str, str | None] = {}
    for key, rel in rels.items():
        parsed[key] = _parse(os.path.join(pkg, rel))
        files["torch/" + rel] = parsed[key][2]
    ef, ef_src, _ = parsed["eval_frame"]
    binds: Answer = (
        binds_check(ef, ef_src, "torch/" + rels["eval_frame"])
        if ef is not None
        else {"value": None, "evidence": [], "note": "eval_frame.py not parsed"}
    )
    cf, cf_src, _ = parsed["convert_frame"]
    comp, comp_src, _ = parsed["compiler"]
    st, st_src, _ = parsed["symbolic_trace"]
    cfg, cfg_src, _ = parsed["config"]
    return {
        "torch_path": pkg,
        "binds_check_at_wrap": binds,
        "holds_compiling_flag": holds_flag(
            cf,
            cf_src,
            "torch/" + rels["convert_frame"],
            comp,
            comp_src,
            "torch/" + rels["compiler"],
        ),
        "is_fx_symbolic_tracing": fx_function(st, st_src, "torch/" + rels["symbolic_trace"]),
        "dynamo_config_defaults": config_defaults(cfg, cfg_src),
        "build": _torch_build.read(
            {k: (*parsed[k][:2], "torch/" + rels[k]) for k in _torch_build.FILES}
        ),
        "files": files,
    }


VALUE = TorchSourceValue
