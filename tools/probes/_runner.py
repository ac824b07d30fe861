"""Runs the probes of one bundle on the target and prints one JSON document.

Shipped in the probe bundle: stdlib only, Python >= 3.8.

Each probe runs in a forked child: a hard time limit (SIGKILL), isolation (one probe's
``import torch`` or crash cannot touch another), and a few at a time in parallel. A
child writes its result to a pipe; stray prints go to stderr, so nothing a library
prints can corrupt the document. The document is the last stdout line that starts with
``SENTINEL``, so a login banner or a chatty hop in front of it does no harm. Nothing is
written on the target: no bytecode (``-B``, set by the bundle's bootstrap as well), no
core file when a probe crashes (``RLIMIT_CORE`` is 0 in each probe's child).

The plan the doctor sends (``main``'s argument)::

    {"probes": [{"name": "gpus", "module": "probes.gpus", "params": {...},
                 "timeout": 30.0}, ...],
     "parallel": 4}

The document it prints::

    {"format": 1, "python": {...}, "pid": ..., "started": epoch, "duration": s,
     "results": [{"probe", "ok", "value", "error": {kind, message, path} | null,
                  "duration", "commands": [{"argv", "rc"}]}, ...]}
"""

from __future__ import annotations

import json
import math
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from ._common import Context, ProbeFailure

__all__ = ["FORMAT", "SENTINEL", "main", "run_one"]

FORMAT = 1
SENTINEL = "@@dflash-doctor-bundle@@ "
MAX_RESULT = 8 << 20  # a probe's JSON beyond this is refused, not shipped
_GRACE = 1.0  # seconds between a probe's own deadline and its SIGKILL


def _jsonable(v: Any, depth: int = 0) -> Any:
    """Make a probe's value strict JSON: NaN/inf become strings, bytes are decoded,
    tuples become lists, keys become strings."""
    if depth > 64:
        return "<too deep>"
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, dict):
        return {str(k): _jsonable(x, depth + 1) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x, depth + 1) for x in v]
    return str(v)


def run_one(
    name: str,
    collect: Callable[[dict[str, Any], Context], Any],
    params: dict[str, Any],
    deadline: float | None = None,
) -> dict[str, Any]:
    """Run one probe in this process; every exception becomes a failed result."""
    ctx = Context(deadline)
    started = time.monotonic()
    value = None
    error = None
    try:
        value = _jsonable(collect(params, ctx))
    except ProbeFailure as exc:
        error = {"kind": exc.kind, "message": exc.message, "path": exc.path}
    except MemoryError:
        error = {"kind": "error", "message": "out of memory", "path": None}
    except Exception as exc:
        tb = traceback.format_exc(limit=-3)
        error = {"kind": "error", "message": f"{type(exc).__name__}: {exc}\n{tb}", "path": None}
    return {
        "probe": name,
        "ok": error is None,
        "value": value,
        "error": error,
        "duration": time.monotonic() - started,
        "commands": _jsonable(ctx.commands),
    }


def _failed(name: str, kind: str, message: str, duration: float = 0.0) -> dict[str, Any]:
    return {
        "probe": name,
        "ok": False,
        "value": None,
        "error": {"kind": kind, "message": message, "path": None},
        "duration": duration,
        "commands": [],
    }


def _collector(entry: dict[str, Any], package: str) -> Callable[[dict[str, Any], Context], Any]:
    module = sys.modules[package + "." + entry["module"]]
    return module.collect  # type: ignore[no-any-return]


def _die_with_parent() -> None:
    # If the bundle is killed (the transport's timeout, a dropped SSH channel), its
    # children must not keep reading multi-GB files on the trainer's machine.
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # not Linux, or no ctypes: the parent's own timeout still holds
        pass


def _no_core_files() -> None:
    # A probe that crashes (a native library's segfault in an import, say) is a result,
    # "crashed: killed by signal 11"; a core file it left in the working directory (the
    # login directory over SSH) would be a write on the target. The soft limit of the
    # forked child only: the hard one is the machine's. (The bundle never asks for the
    # inline mode; it is for where there is no fork, and no RLIMIT_CORE either.)
    try:
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_CORE)
        resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
    except (ImportError, ValueError, OSError):  # no resource module (not Unix): no limit
        pass


def _child(entry: dict[str, Any], package: str, wfd: int, deadline: float) -> None:
    try:
        _die_with_parent()
        _no_core_files()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(2, 1)  # a stray print must not land in the JSON document
        result = run_one(
            entry["name"], _collector(entry, package), entry.get("params", {}), deadline - _GRACE
        )
        data = json.dumps(result, allow_nan=False).encode()
        if len(data) > MAX_RESULT:
            data = _fitted(result, MAX_RESULT)
        if len(data) > MAX_RESULT:
            data = json.dumps(
                _failed(
                    entry["name"],
                    "error",
                    f"result of {len(data)} bytes is over the {MAX_RESULT}-byte limit",
                    result["duration"],
                )
            ).encode()
        view = memoryview(data)
        while view:
            n = os.write(wfd, view)
            view = view[n:]
    finally:
        os._exit(0)


def _size(v: Any) -> int:
    return len(json.dumps(v, allow_nan=False))


def _cut_one(value: Any, path: str) -> dict[str, Any] | None:
    """Halve the list or table that holds most of ``value``'s bytes spread over its
    entries (descending while one entry holds most of them); its head stays."""
    node, size = value, _size(value)
    while isinstance(node, (list, dict)) and node:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        sizes = {k: _size(node[k]) for k in keys}
        biggest = max(keys, key=lambda k: sizes[k])
        if sizes[biggest] * 2 > size or len(keys) == 1:
            node, size = node[biggest], sizes[biggest]
            path += f"[{biggest!r}]" if isinstance(biggest, str) else f"[{biggest}]"
            continue
        kept = len(keys) // 2
        for k in keys[kept:][::-1]:
            del node[k]
        return {"path": path, "kept": kept, "of": len(keys)}
    return None


def _fitted(result: dict[str, Any], limit: int) -> bytes:
    """A result over ``limit`` with its value's longest tails cut (the thousandth
    distinct traceback goes before the first, which is the fact), each cut named in the
    value's ``trimmed``; the same bytes back when nothing could be cut."""
    value = result.get("value")
    if not isinstance(value, dict):
        return json.dumps(result, allow_nan=False).encode()
    cuts: list[dict[str, Any]] = []
    for _ in range(64):
        data = json.dumps(result, allow_nan=False).encode()
        if len(data) <= limit:
            break
        cut = _cut_one(value, "value")
        if cut is None:
            break
        cuts.append(cut)
        value["trimmed"] = cuts
    return json.dumps(result, allow_nan=False).encode()


class _Running:
    __slots__ = ("chunks", "deadline", "entry", "eof", "pid", "rfd", "started")

    def __init__(self, entry: dict[str, Any], pid: int, rfd: int, deadline: float) -> None:
        self.entry = entry
        self.pid = pid
        self.rfd = rfd
        self.chunks: list[bytes] = []
        self.started = time.monotonic()
        self.deadline = deadline
        self.eof = False


def _finish(run: _Running, killed: bool) -> dict[str, Any]:
    name = run.entry["name"]
    elapsed = time.monotonic() - run.started
    if killed:
        os.kill(run.pid, signal.SIGKILL)
    _, status = os.waitpid(run.pid, 0)
    os.close(run.rfd)
    if killed:
        limit = float(run.entry["timeout"])
        return _failed(name, "timeout", f"no result after {limit:.1f}s; killed", elapsed)
    data = b"".join(run.chunks)
    try:
        result = json.loads(data.decode())
        if isinstance(result, dict) and result.get("probe") == name:
            return result
    except ValueError:
        pass
    if os.WIFSIGNALED(status):
        why = f"killed by signal {os.WTERMSIG(status)}"
    else:
        why = f"exited {os.WEXITSTATUS(status)}"
    return _failed(name, "crashed", f"probe process {why} without a result", elapsed)


def _run_forked(entries: list[dict[str, Any]], package: str, parallel: int) -> list[dict[str, Any]]:
    results: dict[int, dict[str, Any]] = {}
    queue = list(enumerate(entries))
    running: dict[int, tuple[int, _Running]] = {}  # rfd -> (index, _Running)
    while queue or running:
        while queue and len(running) < parallel:
            index, entry = queue.pop(0)
            rfd, wfd = os.pipe()
            deadline = time.monotonic() + float(entry["timeout"])
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                os.close(rfd)
                _child(entry, package, wfd, deadline)
            os.close(wfd)
            running[rfd] = (index, _Running(entry, pid, rfd, deadline))
        now = time.monotonic()
        wait = max(0.0, min(r.deadline for _, r in running.values()) - now)
        ready, _, _ = select.select(list(running), [], [], wait)
        for rfd in ready:
            index, run = running[rfd]
            chunk = os.read(rfd, 1 << 16)
            if chunk:
                run.chunks.append(chunk)
                continue
            del running[rfd]
            results[index] = _finish(run, killed=False)
        now = time.monotonic()
        for rfd in [fd for fd, (_, r) in running.items() if r.deadline <= now]:
            index, run = running.pop(rfd)
            results[index] = _finish(run, killed=True)
    return [results[i] for i in range(len(entries))]


def _run_inline(entries: list[dict[str, Any]], package: str) -> list[dict[str, Any]]:
    """Without fork there is no hard limit: probes only watch their own deadline."""
    out = []
    for entry in entries:
        deadline = time.monotonic() + float(entry["timeout"])
        out.append(
            run_one(entry["name"], _collector(entry, package), entry.get("params", {}), deadline)
        )
    return out


def main(plan: dict[str, Any], package: str, broken: dict[str, str] | None = None) -> None:
    """Run ``plan`` (see the module docstring) and print the document on stdout."""
    started = time.time()
    t0 = time.monotonic()
    broken = broken or {}
    runnable: list[dict[str, Any]] = []
    results: dict[str, dict[str, Any]] = {}
    for entry in plan["probes"]:
        missing = [m for m in entry.get("needs", [entry["module"]]) if m in broken]
        if missing:
            results[entry["name"]] = _failed(
                entry["name"],
                "bundle_failed",
                f"module {missing[0]} did not load on this interpreter: {broken[missing[0]]}",
            )
        else:
            runnable.append(entry)
    parallel = max(1, int(plan.get("parallel", 4)))
    if hasattr(os, "fork") and not plan.get("inline"):
        ran = _run_forked(runnable, package, parallel)
    else:
        ran = _run_inline(runnable, package)
    for r in ran:
        results[r["probe"]] = r
    doc = {
        "format": FORMAT,
        "python": {
            "executable": sys.executable,
            "version": ".".join(str(x) for x in sys.version_info[:3]),
            "implementation": sys.implementation.name,
        },
        "pid": os.getpid(),
        "started": started,
        "duration": time.monotonic() - t0,
        "results": [results[e["name"]] for e in plan["probes"]],
    }
    sys.stdout.write("\n" + SENTINEL + json.dumps(doc, allow_nan=False) + "\n")
    sys.stdout.flush()
