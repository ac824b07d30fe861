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

Shipped in the probe bundle: stdlib only, Python >= 3.8. Linux only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any

from . import _activities, processes
from ._common import Context, ProbeFailure

NAME = "live"
TIMEOUT = 60.0

MAX_PROCS = 4
MAX_THREADS = 64  # per process, the busiest first
MAX_FRAMES = 24  # per representative stack
SAMPLES, SPACING = 15, 0.15  # stack samples, seconds apart (the CPU window is theirs)
# Samples that must fail, none read, before a process is given up on: a nonblocking dump
# can fail twice in a row on a busy process (py-spy panicked, its backtrace ending
# "10: main"), while a refusal (no permission, not Python) fails every time. A
# clean-clone run lost a live Trainer's whole window to one bad first sample when one
# failure was enough. A dump that timed out is not tried again: each costs DUMP_TIMEOUT.
GIVE_UP_AFTER = 4
DUMP_TIMEOUT = 10.0
NOT_RUN = "py-spy did not run"
TOP_OTHERS = 5
CAP_SYS_PTRACE = 19
LINE_MAX = 200


def _ticks(path: str) -> int | None:
    """utime + stime of a /proc stat file (clock ticks)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(4096).decode("utf-8", "replace")
    except OSError:
        return None
    rest = raw[raw.rfind(")") + 2 :].split()
    return int(rest[11]) + int(rest[12]) if len(rest) > 12 else None


def thread_ticks(pid: int) -> dict[int, tuple[int, str]]:
    """Per thread id: its CPU ticks and name."""
    out: dict[int, tuple[int, str]] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        ticks = _ticks(f"/proc/{pid}/task/{tid}/stat")
        try:
            with open(f"/proc/{pid}/task/{tid}/comm", "rb") as f:
                name = f.read(64).decode("utf-8", "replace").strip()
        except OSError:
            name = "?"
        if ticks is not None:
            out[int(tid)] = (ticks, name)
    return out


def host_ticks() -> dict[int, tuple[int, str]]:
    """Per process on the host: its CPU ticks and command name."""
    out: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                raw = f.read(4096).decode("utf-8", "replace")
        except OSError:
            continue
        name = raw[raw.find("(") + 1 : raw.rfind(")")]
        rest = raw[raw.rfind(")") + 2 :].split()
        if len(rest) > 12:
            out[int(entry)] = (int(rest[11]) + int(rest[12]), name[:64])
    return out


def cpu_times() -> tuple[int, int] | None:
    """The host's busy and total CPU ticks since boot, all cores (/proc/stat's cpu line:
    busy is all but idle and iowait)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        ticks = [int(x) for x in fields[1:9]]
    except (OSError, ValueError):
        return None
    if fields[0] != "cpu" or len(ticks) < 8:
        return None
    total = sum(ticks)
    return total - ticks[3] - ticks[4], total


def runnable() -> int | None:
    """Threads running or ready to run on the host now, this probe's own not counted
    (/proc/stat's procs_running)."""
    try:
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("procs_running "):
                    return max(0, int(line.split()[1]) - 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cap_ptrace() -> bool | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> CAP_SYS_PTRACE & 1)
    except (OSError, ValueError):
        pass
    return None


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


def dump(py_spy: str, pid: int) -> tuple[list[Any] | None, str | None]:
    """One nonblocking dump of ``pid``'s threads, or why there is none."""
    try:
        run = subprocess.run(
            [py_spy, "dump", "--pid", str(pid), "--json", "--nonblocking"],
            capture_output=True,
            timeout=DUMP_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{NOT_RUN}: {exc}"
    if run.returncode != 0:
        said = (run.stderr or run.stdout).decode("utf-8", "replace").strip().splitlines()
        # Its error line, or a panic's first line: not the last line of a backtrace.
        told = [t for t in said if t.startswith(("Error", "error")) or "panicked" in t]
        line = (told or said or [f"py-spy exited {run.returncode}"])[0]
        return None, line.strip()[:300]
    try:
        threads = json.loads(run.stdout)
    except ValueError:
        return None, "py-spy printed no JSON"
    return (threads if isinstance(threads, list) else None), None


_LINES: dict[tuple[str, int], str | None] = {}


def source_line(filename: str, line: int) -> str | None:
    """The line as the target's file has it (None: unreadable)."""
    key = (filename, line)
    if key not in _LINES:
        text = None
        try:
            with open(filename, "rb") as f:
                for i, raw in enumerate(f, 1):
                    if i == line:
                        text = raw[:LINE_MAX].decode("utf-8", "replace").strip()
                        break
                    if i > 100_000:
                        break
        except OSError:
            pass
        _LINES[key] = text
    return _LINES[key]


class _Thread:
    def __init__(self, tid: int, name: str) -> None:
        self.tid, self.name = tid, name
        self.samples = 0
        self.active = 0
        self.gil = 0
        self.activities: dict[str, int] = {}
        self.first: dict[str, list[Any]] = {}  # activity -> its first sample's frames
        self.own: dict[str, int] = {}  # "file:line function" of the innermost own frame
        self.own_innermost = 0  # samples whose innermost frame is the trainer's own code

    def add(self, thread: dict[str, Any]) -> str:
        """Count one sample of this thread; its activity."""
        frames = [f for f in thread.get("frames") or [] if isinstance(f, dict)]
        top = frames[0] if frames else {}
        text = source_line(str(top.get("filename") or ""), int(top.get("line") or 0))
        active = thread.get("active")
        activity = _activities.classify(frames, text, active if isinstance(active, bool) else None)
        self.samples += 1
        self.active += bool(active)
        self.gil += bool(thread.get("owns_gil"))
        self.activities[activity] = self.activities.get(activity, 0) + 1
        if activity not in self.first:
            self.first[activity] = [
                _frame(f, i == 0, text) for i, f in enumerate(frames[:MAX_FRAMES])
            ]
        own = next(
            (f for f in frames if not _activities.is_library(str(f.get("filename") or ""))), None
        )
        self.own_innermost += own is not None and own is top
        if own is not None:
            where = f"{own.get('filename')}:{own.get('line')} {own.get('name')}"
            self.own[where] = self.own.get(where, 0) + 1
        return activity

    def summary(self, cpu_s: float | None, seconds: float) -> dict[str, Any]:
        main = (
            max(self.activities, key=lambda a: (self.activities[a], a)) if self.activities else None
        )
        own = max(self.own, key=lambda k: (self.own[k], k)) if self.own else None
        return {
            "tid": self.tid,
            "name": self.name,
            "samples": self.samples,
            "active_samples": self.active,
            "gil_samples": self.gil,
            "activities": dict(sorted(self.activities.items())),
            "activity": main,
            "activity_share": round(self.activities[main] / self.samples, 3) if main else None,
            "own_frame": own,
            "own_frame_samples": self.own.get(own, 0) if own else 0,
            "own_innermost_samples": self.own_innermost,
            "stack": self.first.get(main, []) if main else [],
            "cpu_s": cpu_s,
            "cpu_share": round(cpu_s / seconds, 3) if cpu_s is not None and seconds > 0 else None,
        }


def _frame(frame: dict[str, Any], innermost: bool, text: str | None) -> dict[str, Any]:
    out = {
        "function": str(frame.get("name") or "?")[:120],
        "file": str(frame.get("filename") or "?")[:300],
        "line": frame.get("line"),
    }
    if innermost:
        out["text"] = text
    return out


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


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        return []


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
    before_host, before = host_ticks(), {p: thread_ticks(p) for p in pids}
    before_cpu, ready = cpu_times(), []
    start = time.monotonic()
    threads: dict[int, dict[int, _Thread]] = {p: {} for p in pids}
    errors: dict[int, str] = {}  # the last refusal, per process
    failed: dict[int, int] = {p: 0 for p in pids}
    gave_up: set[int] = set()
    overlaps: dict[int, dict[str, Any]] = {}
    for n in range(samples):
        for pid in pids:
            if py_spy is None or (pid in gave_up and not threads[pid]):
                continue  # never read, every time asked: a refusal, not bad luck
            dumped, why = dump(py_spy, pid)
            if dumped is None:
                # A nonblocking dump can catch the interpreter mid-update and fail; one more
                # try, then the sample is lost, not the process.
                dumped, why = dump(py_spy, pid)
            if dumped is None:
                errors[pid] = why or "no dump"
                failed[pid] += 1
                if failed[pid] >= GIVE_UP_AFTER or errors[pid].startswith(NOT_RUN):
                    gave_up.add(pid)
                continue
            now: dict[int, str] = {}  # this dump: each thread's activity
            for t in dumped:
                if not isinstance(t, dict):
                    continue
                tid = int(t.get("os_thread_id") or 0)
                seen = threads[pid].setdefault(tid, _Thread(tid, str(t.get("thread_name") or "")))
                now[tid] = seen.add(t)
            _overlap(overlaps.setdefault(pid, {"samples": 0}), now)
        ready.append(runnable())
        if n + 1 < samples:
            time.sleep(spacing)
    seconds = time.monotonic() - start
    after_host, after_cpu = host_ticks(), cpu_times()
    out_procs = []
    for pid in pids:
        after = thread_ticks(pid)
        kids = _children(pid)
        cpu = {
            tid: (ticks - before[pid][tid][0]) / tick
            for tid, (ticks, _name) in after.items()
            if tid in before[pid]
        }
        rows = [t.summary(cpu.get(tid), seconds) for tid, t in threads[pid].items()] or [
            {"tid": tid, "name": name, "cpu_s": cpu.get(tid), "samples": 0}
            for tid, (_t, name) in after.items()
        ]
        rows.sort(key=lambda r: -(r.get("cpu_s") or 0))
        for row in rows:
            if not row.get("name"):
                row["name"] = after.get(row["tid"], (0, "?"))[1]
        out_procs.append(
            {
                "pid": pid,
                "cmdline": _cmd(pid)[:500],
                "state": _state(pid),
                "uid": _uid(pid),
                "torch_loaded": _torch_loaded(pid),
                "rss_bytes": _rss(pid),
                "children": kids,
                # The data-loader workers' (and any other child's) CPU over the window.
                "children_cpu_share": _share(before_host, after_host, kids, seconds, tick),
                "cpu_s": round(sum(cpu.values()), 3),
                "cpu_share": round(sum(cpu.values()) / seconds, 3) if seconds > 0 else None,
                "threads": rows[:MAX_THREADS],
                "threads_total": len(rows),
                # Set when no sample could be read; ``failed_samples`` counts the others.
                "stacks_error": errors.get(pid) if not threads[pid] else None,
                "failed_samples": failed[pid],
                # Samples in which one thread FX-traced while another was inside a
                # compiled function: the incident's race, caught in the act.
                "fx_trace_overlaps": overlaps.get(pid, {"samples": 0}),
            }
        )
    return {
        "seconds": round(seconds, 3),
        "samples": samples,
        "py_spy": py_spy,
        "py_spy_from": found_in or None,
        "preflight": preflight(),
        "processes": out_procs,
        "host": {
            **_host(before_host, after_host, set(pids), seconds, tick),
            **_cores(before_cpu, after_cpu, ready),
            "memory": memory(),
        },
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
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def memory() -> dict[str, Any]:
    """The host's memory: total and available (/proc/meminfo), and the pressure stall
    information where the kernel keeps it (/proc/pressure/memory: the share of the last
    10 s some or all tasks waited on memory, in percent)."""
    out: dict[str, Any] = {"total_bytes": None, "available_bytes": None, "pressure": None}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("MemTotal", "MemAvailable"):
                    name = "total_bytes" if key == "MemTotal" else "available_bytes"
                    out[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/proc/pressure/memory") as f:
            pressure = {}
            for line in f:
                kind, *fields = line.split()
                values = dict(x.split("=", 1) for x in fields if "=" in x)
                pressure[f"{kind}_avg10"] = float(values["avg10"])
            out["pressure"] = pressure
    except (OSError, ValueError, KeyError):
        pass
    return out


CALLING_COMPILED = ("compiled_code", "eager_attention")


def _overlap(found: dict[str, Any], now: dict[int, str]) -> None:
    """Count a dump in which a thread was FX tracing while another was inside a compiled
    function (running it, or its eager fallback), and keep the first such pair."""
    tracers = sorted(tid for tid, a in now.items() if a == "fx_tracing")
    callers = sorted(tid for tid, a in now.items() if a in CALLING_COMPILED)
    pair = next(((t, c) for t in tracers for c in callers if c != t), None)
    if pair is None:
        return
    found["samples"] += 1
    if "tracer" not in found:
        found["tracer"], found["caller"] = pair
        found["caller_activity"] = now[pair[1]]


def _uid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            raw = f.read(4096)
        return raw[raw.rfind(")") + 2 :].split()[0]
    except (OSError, IndexError):
        return None


def _ancestry() -> set[int]:
    """This probe and the processes above it (the shell and the doctor, or the SSH
    session, that started it): the doctor's own work, not a neighbour's."""
    out, pid = set(), os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                raw = f.read(4096)
            pid = int(raw[raw.rfind(")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def _share(
    before: dict[int, tuple[int, str]],
    after: dict[int, tuple[int, str]],
    pids: list[int],
    seconds: float,
    tick: float,
) -> float | None:
    """Cores ``pids`` used together over the window (None: none of them)."""
    used = [(after[p][0] - before[p][0]) / tick for p in pids if p in before and p in after]
    if not used or seconds <= 0:
        return None
    return round(sum(used) / seconds, 3)


def _cores(
    before: tuple[int, int] | None, after: tuple[int, int] | None, ready: list[int | None]
) -> dict[str, Any]:
    """How busy the host's cores were over the window (busy ticks over all ticks, every
    core), and the threads that were running or ready to run at each sample (their
    median): more than the cores is a queue for them."""
    busy = None
    if before is not None and after is not None and after[1] > before[1]:
        busy = round((after[0] - before[0]) / (after[1] - before[1]), 3)
    counts = sorted(r for r in ready if r is not None)
    return {
        "cores_busy": busy,
        "runnable": counts,
        "runnable_median": counts[len(counts) // 2] if counts else None,
    }


def _host(
    before: dict[int, tuple[int, str]],
    after: dict[int, tuple[int, str]],
    trainer: set[int],
    seconds: float,
    tick: float,
) -> dict[str, Any]:
    """The host's load against its cores, and the other processes that used the most CPU
    over the window (the trainer's own children are the trainer's; the probe and the
    processes that started it are the doctor's)."""
    mine = _ancestry()
    kids = {c for p in trainer for c in _children(p)}
    used = sorted(
        (
            ((ticks - before[pid][0]) / tick, pid, name)
            for pid, (ticks, name) in after.items()
            if pid in before and pid not in trainer | kids | mine
        ),
        reverse=True,
    )
    try:
        load = list(os.getloadavg())
    except OSError:
        load = None
    return {
        "cpus": os.cpu_count(),
        "load": load,
        "others": [
            {"pid": pid, "name": name, "cpu_s": round(c, 3), "cpu_share": round(c / seconds, 3)}
            for c, pid, name in used[:TOP_OTHERS]
            if c > 0 and seconds > 0
        ],
        "others_cpu_share": round(sum(c for c, _, _ in used) / seconds, 3) if seconds > 0 else None,
    }


VALUE = dict  # documented above
