"""Monkeypatches and compile/thread sites in the training scripts, read with ``ast``.

The incident's spiral included patching ``is_fx_symbolic_tracing`` to always return
False: that only changes the module attribute, while every compiled wrapper already
built keeps the function it bound (see ``torch_source``). This probe finds such
patches in the scripts without running them: assignments to (and ``setattr`` of) the
names that steer the race, ``torch._dynamo.config`` changes, ``config.patch(...)``;
and it counts the places that matter for the race — ``torch.compile`` calls,
``flex_attention``/``create_block_mask`` uses, thread and process creation. The scripts'
own local imports are followed (a package beside them, or one they put on ``sys.path``
with a literal), so the run's own code is read, not only its top-level scripts.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import ast
import glob
import os
from typing import Any

from . import layout
from ._common import Context, TypedDict, expand_globs, read_capped
from ._torch_build import CONFIG_KEYS

NAME = "script_patches"
TIMEOUT = 60.0

# The names of torch's FX check itself. Replacing one of them is the incident's
# monkeypatch; the other WATCHED names are dynamo configuration, which steers the race
# but patches no check (a trainer raising recompile_limit monkeypatches nothing).
FX_CHECK = ("is_fx_symbolic_tracing", "_is_fx_tracing_flag", "_is_compiling_flag", "is_compiling")
WATCHED = FX_CHECK + CONFIG_KEYS
MARKERS = {
    "torch.compile": ("compile",),
    "flex_attention": ("flex_attention",),
    "create_block_mask": ("create_block_mask",),
    "thread": ("Thread", "ThreadPoolExecutor"),
    "process": ("Process", "ProcessPoolExecutor", "spawn", "start_processes"),
    "dynamo_reset": ("reset",),
}
MAX_FILES = 200
MAX_BYTES = 4 << 20


class _PatchBase(TypedDict):
    file: str
    line: int
    target: str
    code: str


class Patch(_PatchBase, total=False):
    # The value set, where it is a literal number, truth value or string (a recompile
    # limit of 64): what a family can compare with the value torch reports.
    value: int | float | bool | str


class ScriptReport(TypedDict, total=False):
    path: str
    error: str
    patches: list[Patch]
    markers: dict[str, list[int]]  # marker -> line numbers (first 20)


class ScriptPatchesValue(TypedDict, total=False):
    files: list[ScriptReport]
    patches: int
    fx_check_patches: int  # those that replace a name of the FX check (FX_CHECK)
    # Places that compile: torch.compile calls and decorators, torch_compile= keywords
    # (the first 20 of each file); files that could not be read are in ``unread``.
    compile_sites: int
    unread: int  # files that could not be read, or were not for the bound (MAX_FILES)
    followed_imports: int  # local modules read because a scanned file imports them
    imported: list[dict[str, Any]]  # those modules: their torch.compile lines, or an error
    unmatched: list[str]
    source: dict[str, Any]  # the profile's paths, or the workspace layout's scripts


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):
        parts.append(_dotted(node.func) + "()")
    return ".".join(reversed(parts))


def _literal(node: ast.AST | None) -> int | float | bool | str | None:
    """A number, truth value or string written as such (``64``, ``-1``, ``"eager"``)."""
    if node is None:
        return None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, (int, float, bool, str)) else None


def _code(source: str, node: ast.AST) -> str:
    return " ".join((ast.get_source_segment(source, node) or "").split())[:200]


def _marker(call: ast.Call) -> list[str]:
    """The ``MARKERS`` a call is (a compile, a dynamo reset...)."""
    name = _dotted(call.func)
    last = name.rsplit(".", 1)[-1]
    found = []
    for marker, names in MARKERS.items():
        if last not in names:
            continue
        # ``compile`` and ``reset`` are common names: count only torch's.
        if marker == "torch.compile" and not name.endswith("torch.compile"):
            continue
        if marker == "dynamo_reset" and "_dynamo" not in name:
            continue
        found.append(marker)
    # Trainer's ``TrainingArguments(torch_compile=True)`` compiles the model
    # with no torch.compile call in the script.
    if any(
        k.arg == "torch_compile" and not (isinstance(k.value, ast.Constant) and not k.value.value)
        for k in call.keywords
    ):
        found.append("torch.compile")
    return found


def _mark(markers: dict[str, list[int]], marker: str, line: int) -> None:
    """Note ``line`` as a place of ``marker``; the first 20 are enough to show it."""
    lines = markers.setdefault(marker, [])
    if len(lines) < 20:
        lines.append(line)


def _literal_paths(tree: ast.Module) -> list[str]:
    """Directories a script puts on its own import path with a literal:
    ``sys.path.insert(0, "/repo")``, ``sys.path.append("/repo")``."""
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and _dotted(node.func) in ("sys.path.insert", "sys.path.append")
            and node.args
            and isinstance(node.args[-1], ast.Constant)
            and isinstance(node.args[-1].value, str)
        ):
            found.append(node.args[-1].value)
    return found


def _module_files(name: str, roots: list[str]) -> list[str]:
    """The source files ``import name`` (dotted) reads under ``roots``: each package's
    ``__init__.py`` on the way and the module itself; none for what is not there (the
    standard library and installed packages are not the run's own code)."""
    parts = name.split(".")
    for root in roots:
        files = []
        for i in range(1, len(parts) + 1):
            base = os.path.join(root, *parts[:i])
            if os.path.isfile(base + ".py"):
                files.append(base + ".py")
                break
            if os.path.isfile(os.path.join(base, "__init__.py")):
                files.append(os.path.join(base, "__init__.py"))
            else:
                break
        if files:
            return files
    return []


def local_imports(tree: ast.Module, path: str, roots: list[str]) -> list[str]:
    """The run's own modules a script imports: files found beside it, in ``roots`` or in
    a directory it adds to ``sys.path`` with a literal; relative imports from its package."""
    here = os.path.dirname(os.path.abspath(path))
    search = [here, *_literal_paths(tree), *roots]
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out += _module_files(alias.name, search)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here
                for _ in range(node.level - 1):
                    base = os.path.dirname(base)
                mod = node.module or ""
                names = [f"{mod}.{a.name}" if mod else a.name for a in node.names]
                for name in [mod] if mod else []:
                    out += _module_files(name, [base])
                for name in names:
                    out += _module_files(name, [base])
            elif node.module:
                out += _module_files(node.module, search)
                for alias in node.names:
                    out += _module_files(f"{node.module}.{alias.name}", search)
    return list(dict.fromkeys(out))


def scan_source(source: str, path: str) -> ScriptReport:
    try:
        tree = ast.parse(source, path)
    except SyntaxError as exc:
        return {"path": path, "error": f"does not parse: {exc.msg} (line {exc.lineno})"}
    patches: list[Patch] = []
    markers: dict[str, list[int]] = {}

    def patch(node: ast.AST, target: str, value: ast.AST | None = None) -> None:
        found: Patch = {
            "file": path,
            "line": getattr(node, "lineno", 0),
            "target": target,
            "code": _code(source, node),
        }
        literal = _literal(value)
        if literal is not None:
            found["value"] = literal
        patches.append(found)

    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                name = _dotted(t)
                attribute = isinstance(t, ast.Attribute) and t.attr in WATCHED
                # A bare name counts only at module level (a ``global`` rebinding).
                bare = (
                    isinstance(t, ast.Name)
                    and t.id in WATCHED
                    and isinstance(node, ast.Assign)
                    and node in tree.body
                )
                if attribute or bare:
                    patch(node, name, None if isinstance(node, ast.AugAssign) else node.value)
        elif isinstance(node, ast.Call):
            fname = _dotted(node.func)
            if (
                fname.endswith("setattr")
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in WATCHED
            ):
                patch(node, f"{_dotted(node.args[0])}.{node.args[1].value}")
            elif fname.endswith("config.patch"):
                for kw in node.keywords:
                    if kw.arg in WATCHED:
                        patch(node, f"{fname}({kw.arg})", kw.value)
                named = [a for a in node.args if isinstance(a, ast.Constant)]
                if named and named[0].value in WATCHED:
                    value = node.args[1] if len(node.args) > 1 else None
                    patch(node, f"{fname}({named[0].value})", value)
            for m in _marker(node):
                _mark(markers, m, node.lineno)
        if isinstance(node, ast.Constant) and node.value == "flex_attention":
            # transformers' attn_implementation="flex_attention" compiles flex_attention
            # inside the library: the run compiles with no call in its own code.
            _mark(markers, "torch.compile", node.lineno)
        if isinstance(node, ast.FunctionDef):
            # ``@torch.compile`` without arguments is a decorator, not a call.
            for dec in node.decorator_list:
                if not isinstance(dec, ast.Call) and _dotted(dec).endswith("torch.compile"):
                    _mark(markers, "torch.compile", dec.lineno)
    # ast.walk is breadth-first; facts read better in source order.
    patches.sort(key=lambda x: x["line"])
    return {
        "path": path,
        "patches": patches,
        "markers": {k: sorted(v) for k, v in sorted(markers.items())},
    }


def _patches_check(target: str) -> bool:
    """Whether a patch's target (``a.b.name`` or ``…config.patch(name)``) is the check."""
    name = target.rstrip(")").replace("(", ".").rsplit(".", 1)[-1]
    return name in FX_CHECK


def expand(paths: list[str]) -> tuple[list[str], list[str]]:
    found, unmatched = expand_globs(paths)
    files: list[str] = []
    for path, pattern in found:
        if pattern is not None:
            if path.endswith(".py") or os.path.isfile(path):
                files.append(path)
        elif os.path.isdir(path):
            files.extend(sorted(glob.glob(os.path.join(path, "*.py"))))
        else:
            files.append(path)
    return files[:MAX_FILES], unmatched


def collect(params: dict[str, Any], ctx: Context) -> ScriptPatchesValue:
    paths, chosen = layout.chosen_many(params, ("scripts",))
    files, unmatched = expand(paths)
    roots = [str(params["workspace"])] if params.get("workspace") else []
    reports: list[ScriptReport] = []
    queue, seen = list(files), set(files)
    followed = 0
    while queue and len(reports) < MAX_FILES:
        path = queue.pop(0)
        try:
            data, truncated = read_capped(path, MAX_BYTES)
            if truncated:
                reports.append({"path": path, "error": f"larger than {MAX_BYTES} bytes"})
                continue
            source = data.decode("utf-8", "replace")
        except OSError as exc:  # FileRefused too: a FIFO, a device, a directory, a loop
            reports.append({"path": path, "error": exc.strerror or str(exc)})
            continue
        report = scan_source(source, path)
        reports.append(report)
        # The run's own code is more than its top-level scripts: follow their imports of
        # local modules (a package beside them, or one they add to sys.path), bounded.
        try:
            tree = ast.parse(source, path)
        except SyntaxError:
            continue
        for found in local_imports(tree, path, roots):
            if found not in seen:
                seen.add(found)
                queue.append(found)
                followed += 1
    # The scripts themselves stay the facts of the patch families (a patch in a module
    # they import may sit in a function the run never calls); the imported modules
    # count where the question is whether anything in the run compiles at all.
    own, imported = reports[: len(files)], reports[len(files) :]
    return {
        "files": own,
        "imported": [
            {"path": r["path"], "compile_lines": r.get("markers", {}).get("torch.compile", [])}
            if "error" not in r
            else {"path": r["path"], "error": r["error"]}
            for r in imported
        ],
        "patches": sum(len(r.get("patches", [])) for r in own),
        "fx_check_patches": sum(
            1 for r in own for p in r.get("patches", []) if _patches_check(p["target"])
        ),
        "compile_sites": sum(len(r.get("markers", {}).get("torch.compile", [])) for r in reports),
        "unread": sum(1 for r in reports if "error" in r) + len(queue),
        "followed_imports": followed,
        "unmatched": unmatched,
        "source": chosen,
    }


VALUE = ScriptPatchesValue
