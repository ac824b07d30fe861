"""Trainer processes, from /proc: pid, command line, threads (and their names), start
time, memory, and the environment variables that steer compilation.

A process matches when its command line contains one of ``match`` (default: ``train``),
or, given a ``workspace``, when it works there: its working directory is in it or its
command line names it (``torchrun main.py`` run from the workspace holds no "train").
Those that work there and are not zombies are listed again in ``in_workspace`` (pid and
state): whether the run has a live process at all is a fact of its own.
The environment is the one the process was started with (``/proc/PID/environ``); what
the trainer later sets in ``os.environ`` itself is not visible from outside — the
reference trainer, for one, sets ``TORCHINDUCTOR_CACHE_DIR`` in code. Another user's
process whose environment cannot be read is listed with ``env_error``.

Shipped in the probe bundle: stdlib only, Python >= 3.8. Linux only.
"""

from __future__ import annotations

import os
import time
from typing import Any

from ._common import Context, ProbeFailure, TypedDict, classify_oserror, read_capped

NAME = "processes"
TIMEOUT = 30.0

ENV_PREFIXES = (
    "TORCHINDUCTOR_",
    "TORCH_COMPILE",
    "TORCHDYNAMO_",
    "TORCH_LOGS",
    "TORCH_",
    "TRITON_",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "NCCL_",
    "PYTORCH_",
    "OMP_NUM_THREADS",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "LD_LIBRARY_PATH",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
)
SECRET_HINTS = ("TOKEN", "SECRET", "PASSWORD", "KEY")
MAX_PROCS = 64


class Proc(TypedDict, total=False):
    pid: int
    ppid: int
    uid: int
    state: str
    cmdline: list[str]
    exe: str | None
    cwd: str | None
    threads: int
    thread_names: dict[str, int]
    start_time: float | None
    age_s: float | None
    rss_bytes: int | None
    env: dict[str, str]
    env_error: str


class Working(TypedDict):
    pid: int
    state: str


class ProcessesValue(TypedDict, total=False):
    match: list[str]
    processes: list[Proc]
    truncated: bool
    workspace: str
    in_workspace: list[Working]


GONE = "ZX"  # zombie, dead: a process that no longer runs anything


PROC_MAX = 4 << 20  # bytes of one /proc file read (a cmdline, an environ, a status)


def _read(path: str, binary: bool = False) -> Any:
    data = read_capped(path, PROC_MAX)[0]  # an OSError (FileRefused too) to the caller
    return data if binary else data.decode("utf-8", "replace")


def _boot_time() -> float | None:
    try:
        for line in _read("/proc/stat").splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except OSError:
        pass
    return None


def _link(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def describe(
    pid: int, boot: float | None, ticks: int, now: float, max_threads: int = 1024
) -> Proc | None:
    base = f"/proc/{pid}"
    try:
        raw = _read(base + "/cmdline", binary=True)
        stat_line = _read(base + "/stat")
        status = _read(base + "/status")
    except OSError:
        return None  # it exited while we looked
    cmd = [a.decode("utf-8", "replace")[:500] for a in raw.split(b"\0") if a][:64]
    # The command name in /proc/PID/stat is parenthesised and may hold spaces.
    rest = stat_line[stat_line.rfind(")") + 2 :].split()
    p: Proc = {
        "pid": pid,
        "state": rest[0],
        "ppid": int(rest[1]),
        "cmdline": cmd,
        "exe": _link(base + "/exe"),
        "cwd": _link(base + "/cwd"),
    }
    start = int(rest[19]) / float(ticks)
    p["start_time"] = boot + start if boot is not None else None
    p["age_s"] = now - p["start_time"] if p["start_time"] is not None else None
    for line in status.splitlines():
        key, _, val = line.partition(":")
        if key == "Threads":
            p["threads"] = int(val.strip())
        elif key == "Uid":
            p["uid"] = int(val.split()[0])
        elif key == "VmRSS":
            p["rss_bytes"] = int(val.split()[0]) * 1024
    names: dict[str, int] = {}
    try:
        for tid in sorted(os.listdir(base + "/task"))[:max_threads]:
            try:
                name = _read(f"{base}/task/{tid}/comm").strip()
            except OSError:
                continue
            names[name] = names.get(name, 0) + 1
    except OSError:
        pass
    p["thread_names"] = names
    try:
        env = _read(base + "/environ", binary=True)
        picked = {}
        for item in env.split(b"\0"):
            k, sep, v = item.decode("utf-8", "replace").partition("=")
            if sep and k.startswith(ENV_PREFIXES):
                if any(h in k for h in SECRET_HINTS):
                    v = "<redacted>"  # never ship a credential back as a fact
                picked[k] = v[:500]
        p["env"] = dict(sorted(picked.items()))
    except OSError as exc:
        p["env_error"] = f"{classify_oserror(exc)}: {exc.strerror or exc}"
    return p


def _roots(workspace: str) -> tuple[str, ...]:
    """The workspace as given (``~`` expanded) and as /proc shows a working directory
    (symlinks resolved)."""
    given = os.path.expanduser(workspace).rstrip("/") or "/"
    real = os.path.realpath(given).rstrip("/") or "/"
    return (given,) if real == given else (given, real)


def works_in(workspace: str, cwd: str | None, cmd: str) -> bool:
    """The process's working directory is ``workspace`` or under it, or its command line
    names it."""
    for root in _roots(workspace):
        if cwd is not None and (cwd == root or cwd.startswith(root.rstrip("/") + "/")):
            return True
        if root != "/" and root in cmd:
            return True
    return False


def matching_pids(match: list[str], workspace: str | None = None) -> list[int]:
    """The pids whose command line holds one of ``match``, or that work in
    ``workspace``: the trainer's candidates (the caches probe reads their environment
    too)."""
    try:
        pids = sorted(int(n) for n in os.listdir("/proc") if n.isdigit())
    except OSError as exc:
        raise ProbeFailure("unavailable", f"/proc unreadable: {exc.strerror}") from None
    me = {os.getpid(), os.getppid()}
    found = []
    for pid in pids:
        if pid in me:
            continue
        try:
            raw = _read(f"/proc/{pid}/cmdline", binary=True)
        except OSError:
            continue
        cmd = raw.replace(b"\0", b" ").decode("utf-8", "replace")
        # The bundle itself (``python3 -``) and the tools around it are not the trainer.
        if "dflash-doctor" in cmd:
            continue
        if any(m in cmd for m in match) or (
            workspace and works_in(workspace, _link(f"/proc/{pid}/cwd"), cmd)
        ):
            found.append(pid)
    return found


def collect(params: dict[str, Any], ctx: Context) -> ProcessesValue:
    match = params.get("match") or ["train"]
    if not isinstance(match, list) or not all(isinstance(m, str) and m for m in match):
        raise ProbeFailure("bad_params", "processes: match must be a list of strings")
    workspace = params.get("workspace")
    if workspace is not None and not (isinstance(workspace, str) and workspace):
        raise ProbeFailure("bad_params", "processes: workspace must be a path")
    boot = _boot_time()
    ticks = os.sysconf("SC_CLK_TCK")
    now = time.time()
    found: list[Proc] = []
    pids = matching_pids(match, workspace)
    for pid in pids[:MAX_PROCS]:
        p = describe(pid, boot, ticks, now)
        if p is not None:
            found.append(p)
    out: ProcessesValue = {"match": match, "processes": found, "truncated": len(pids) > MAX_PROCS}
    if workspace:
        out["workspace"] = workspace
        out["in_workspace"] = [
            {"pid": p["pid"], "state": p["state"]}
            for p in found
            if p["state"] not in GONE
            and works_in(workspace, p.get("cwd"), " ".join(p.get("cmdline") or []))
        ]
    return out


VALUE = ProcessesValue
