"""What the running trainer is doing right now: its threads' stacks sampled with py-spy
(never pausing it: ``--nonblocking``), each thread's CPU over the same window, the
process's resident memory, its children and the cores they used, the host's load, how
busy its cores were and how many threads queued for them, its memory and memory pressure,
the other processes that used its cores, and
whether the stacks could be read at all (the permission preflight).

Which processes: given a workspace, those that work there (``processes.works_in``) and
those whose command line holds one of ``match`` while their working directory cannot be
read (another user's); without one, those that match; at most ``MAX_PROCS``, the oldest
first.

Each thread's samples are classified (``_activities``); the fact keeps, per thread, how
many samples fell in each activity, its CPU share, and a representative stack (the first
sample of its most frequent activity) with the innermost frame's source line. py-spy is
looked for at the path the doctor names, on the probe's PATH, beside the target's Python,
then in the trainer's own environment (its PATH, the directory of the Python its command
line names). Where there is none, or it may not attach, the fact says so with the remedy
for the kind of host it is; the CPU and host figures are still read. (A diagnosis then
carries the controller's own py-spy there and runs this probe again: ``tools.carry``.)

``_stacks`` reads the dumps and their threads; ``_host_cpu``, the CPU and memory figures.

Shipped in the probe bundle: stdlib only, Python >= 3.8. Linux only.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import Any, NamedTuple

from . import _host_cpu, _stacks, processes
from ._common import Context, ProbeFailure

NAME = "live"
TIMEOUT = 60.0

MAX_PROCS = 4
MAX_THREADS = 64  # per process, the busiest first
SAMPLES, SPACING = 15, 0.15  # stack samples, seconds apart (the CPU window is theirs)
CAP_SYS_PTRACE = 19


def _status_number(pid: int | str, field: str, base: int = 10) -> int | None:
    """The number ``field`` of ``/proc/PID/status`` starts with (None: no such field, or
    the file cannot be read)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1], base)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cap_ptrace() -> bool | None:
    caps = _status_number("self", "CapEff", base=16)
    return None if caps is None else bool(caps >> CAP_SYS_PTRACE & 1)


def container_kind() -> tuple[str | None, str]:
    """docker, podman, kubernetes or lxc, and what said so (None: none seen)."""
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes", "KUBERNETES_SERVICE_HOST is set"
    if os.path.exists("/.dockerenv"):
        return "docker", "/.dockerenv exists"
    if os.path.exists("/run/.containerenv"):
        return "podman", "/run/.containerenv exists"
    try:
        with open("/proc/1/environ", "rb") as f:
            if b"container=lxc" in f.read(65536):
                return "lxc", "pid 1's environment has container=lxc"
    except OSError:
        pass
    try:
        with open("/proc/1/cgroup") as f:
            text = f.read(65536)
    except OSError:
        return None, "no marker of a container"
    for kind, mark in (("kubernetes", "kubepods"), ("docker", "docker"), ("lxc", "lxc")):
        if mark in text:
            return kind, f"/proc/1/cgroup names {mark}"
    return None, "no marker of a container"


REMEDY = {
    "docker": "run the trainer's container with --cap-add=SYS_PTRACE (or probe from the host)",
    "podman": "run the trainer's container with --cap-add=SYS_PTRACE",
    "kubernetes": "kubectl debug -it POD --image=python --target=CONTAINER --profile=general",
    "lxc": "probe from the Proxmox host (pct exec) as root, or add lxc.cap.keep sys_ptrace",
    None: "sysctl kernel.yama.ptrace_scope=0, or probe as root (or as the trainer's user)",
}


def preflight() -> dict[str, Any]:
    """May this process read another's memory: the yama scope, CAP_SYS_PTRACE, the user,
    the kind of container, and the remedy for that kind where it may not."""
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            scope: int | None = int(f.read().strip())
    except (OSError, ValueError):
        scope = None  # no yama: classic ptrace rules (same user, or the capability)
    kind, why = container_kind()
    return {
        "ptrace_scope": scope,
        "cap_sys_ptrace": _cap_ptrace(),
        "euid": os.geteuid(),
        "container": kind,
        "container_why": why,
        "remedy_if_denied": REMEDY[kind],
    }


def find_py_spy(given: str | None) -> tuple[str | None, str]:
    """py-spy's path and where it was found."""
    if given:
        return (given, "the path the doctor gave") if os.access(given, os.X_OK) else (None, "")
    found = shutil.which("py-spy")
    if found:
        return found, "the target's PATH"
    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    if os.access(beside, os.X_OK):
        return beside, "beside the target's Python"
    return None, ""


def trainer_py_spy(pids: list[int]) -> tuple[str | None, str]:
    """py-spy in a trainer process's own environment: a directory of its PATH, or the
    directory of the Python its command line names (its virtualenv's ``bin``)."""
    for pid in pids:
        dirs = []
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv0 = f.read(4096).split(b"\0", 1)[0].decode("utf-8", "replace")
            if os.path.isabs(argv0):
                dirs.append((os.path.dirname(argv0), f"beside the trainer's Python (pid {pid})"))
        except OSError:
            pass
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read(1 << 20).split(b"\0")
        except OSError:
            env = []
        for entry in env:
            if entry.startswith(b"PATH="):
                path = entry[5:].decode("utf-8", "replace")
                dirs += [(d, f"the trainer's PATH (pid {pid})") for d in path.split(":") if d]
        for directory, where in dirs:
            candidate = os.path.join(directory, "py-spy")
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate, where
    return None, ""


def _targets(params: dict[str, Any]) -> list[int]:
    """The trainer's processes: given a workspace, those that work there, and those whose
    command line matches while their working directory cannot be read (another user's);
    never a process that works elsewhere."""
    workspace = params.get("workspace")
    pids = processes.matching_pids(list(params.get("match") or []), workspace)
    if not workspace:
        return sorted(pids)[:MAX_PROCS]
    # Those seen working there first, then those whose working directory is unreadable.
    where = {p: _works_there(workspace, p) for p in pids}
    ranked = sorted((p for p in pids if where[p] is not False), key=lambda p: (not where[p], p))
    return ranked[:MAX_PROCS]


def _works_there(workspace: str, pid: int) -> bool | None:
    """True: it works in the workspace; False: elsewhere; None: its working directory
    cannot be read (another user's)."""
    cwd = processes._link(f"/proc/{pid}/cwd")
    return None if cwd is None else processes.works_in(workspace, cwd, _cmd(pid))


def _cmd(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read(65536).replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def collect(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    match = params.get("match") or []
    if not isinstance(match, list) or not all(isinstance(m, str) for m in match):
        raise ProbeFailure("bad_params", "live: match must be a list of strings")
    samples = int(params.get("samples", SAMPLES))
    spacing = float(params.get("spacing", SPACING))
    if not 1 <= samples <= 50 or not 0 <= spacing <= 5:
        raise ProbeFailure("bad_params", "live: samples 1..50, spacing 0..5 s")
    if not os.path.isdir("/proc"):
        raise ProbeFailure("unavailable", "live: no /proc (not Linux)")
    py_spy, found_in = find_py_spy(params.get("py_spy"))
    if py_spy is not None and params.get("py_spy_carried"):
        found_in = "carried over the transport to a private temporary file, removed after"
    pids = _targets(params)
    if py_spy is None and not params.get("py_spy"):
        # A path the doctor named is the only one tried: the user said where it is.
        py_spy, found_in = trainer_py_spy(pids)
    if not pids:
        samples = 0  # nothing runs: no window to wait for
    tick = float(os.sysconf("SC_CLK_TCK"))
    before_host, before = _host_cpu.host_ticks(), {p: _host_cpu.thread_ticks(p) for p in pids}
    before_cpu, ready = _host_cpu.cpu_times(), []
    start = time.monotonic()
    stacks = _stacks.Stacks(pids)
    for n in range(samples):
        if py_spy is not None:
            for pid in pids:
                stacks.sample(py_spy, pid)
        ready.append(_host_cpu.runnable())
        if n + 1 < samples:
            time.sleep(spacing)
    seconds = time.monotonic() - start
    after_host, after_cpu = _host_cpu.host_ticks(), _host_cpu.cpu_times()
    window = _Window(before_host, after_host, seconds, tick)
    procs = [_process(pid, stacks, before[pid], window) for pid in pids]
    return {
        "seconds": round(seconds, 3),
        "samples": samples,
        "py_spy": py_spy,
        "py_spy_from": found_in or None,
        "preflight": preflight(),
        "processes": procs,
        "host": {
            **_host_cpu.host_load(before_host, after_host, set(pids), seconds, tick),
            **_host_cpu.cores(before_cpu, after_cpu, ready),
            "memory": _host_cpu.memory(),
        },
    }


class _Window(NamedTuple):
    """The sampling window: every process's CPU ticks before and after it, its length."""

    before_host: dict[int, tuple[int, str]]
    after_host: dict[int, tuple[int, str]]
    seconds: float
    tick: float  # clock ticks a second


def _process(
    pid: int, stacks: _stacks.Stacks, before: dict[int, tuple[int, str]], window: _Window
) -> dict[str, Any]:
    """One trainer process over the window: its threads (busiest first) with their
    stacks and CPU, its children's CPU, and what kept its stacks from being read."""
    seconds, tick = window.seconds, window.tick
    after = _host_cpu.thread_ticks(pid)
    kids = _host_cpu.children(pid)
    cpu = {
        tid: (ticks - before[tid][0]) / tick
        for tid, (ticks, _name) in after.items()
        if tid in before
    }
    threads = stacks.threads[pid]
    rows = [t.summary(cpu.get(tid), seconds) for tid, t in threads.items()] or [
        {"tid": tid, "name": name, "cpu_s": cpu.get(tid), "samples": 0}
        for tid, (_t, name) in after.items()
    ]
    rows.sort(key=lambda r: -(r.get("cpu_s") or 0))
    for row in rows:
        if not row.get("name"):
            row["name"] = after.get(row["tid"], (0, "?"))[1]
    return {
        "pid": pid,
        "cmdline": _cmd(pid)[:500],
        "state": _state(pid),
        "uid": _status_number(pid, "Uid"),
        "torch_loaded": _torch_loaded(pid),
        "rss_bytes": _rss(pid),
        "children": kids,
        # The data-loader workers' (and any other child's) CPU over the window.
        "children_cpu_share": _host_cpu.share(
            window.before_host, window.after_host, kids, seconds, tick
        ),
        "cpu_s": round(sum(cpu.values()), 3),
        "cpu_share": round(sum(cpu.values()) / seconds, 3) if seconds > 0 else None,
        "threads": rows[:MAX_THREADS],
        "threads_total": len(rows),
        # Set when no sample could be read; ``failed_samples`` counts the others.
        "stacks_error": stacks.errors.get(pid) if not threads else None,
        "failed_samples": stacks.failed[pid],
        # Samples in which one thread FX-traced while another was inside a
        # compiled function: the incident's race, caught in the act.
        "fx_trace_overlaps": stacks.overlaps.get(pid, {"samples": 0}),
    }


def _torch_loaded(pid: int) -> bool | None:
    """Whether torch's libraries are mapped into ``pid`` (a trainer, not a launcher
    that waits on one); None where its maps cannot be read (another user's)."""
    try:
        with open(f"/proc/{pid}/maps", "rb") as f:
            for line in f:
                if b"/libtorch" in line or b"/torch/_C" in line:
                    return True
    except OSError:
        return None
    return False


def _rss(pid: int) -> int | None:
    """Resident memory of ``pid`` in bytes (VmRSS)."""
    kib = _status_number(pid, "VmRSS")
    return None if kib is None else kib * 1024


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            raw = f.read(4096)
        return raw[raw.rfind(")") + 2 :].split()[0]
    except (OSError, IndexError):
        return None


VALUE = dict  # documented above
