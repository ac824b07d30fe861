"""The host's CPU and memory as ``/proc`` states them, for the live probe: CPU ticks per
thread and per process (read before and after its sampling window, so that their
difference is the CPU each used over it), how busy the cores were, how many threads
queued for them, the memory and its pressure, and the other processes that used the
trainer's cores.

Shipped in the probe bundle: stdlib only, Python >= 3.8. Linux only.
"""

from __future__ import annotations

import os
from typing import Any

TOP_OTHERS = 5  # other processes listed, the busiest first


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


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (those its main thread started)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        return []


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


def _used(
    before: dict[int, tuple[int, str]], after: dict[int, tuple[int, str]], pid: int
) -> int | None:
    """The ticks ``pid`` used between the two reads; None where they are not of one
    process: it is missing from a read, or its pid was taken by another during the
    window (the name changed, or the ticks went down: a new process's count starts at 0)."""
    if pid not in before or pid not in after:
        return None
    (was, name), (now, name_now) = before[pid], after[pid]
    return now - was if name_now == name and now >= was else None


def share(
    before: dict[int, tuple[int, str]],
    after: dict[int, tuple[int, str]],
    pids: list[int],
    seconds: float,
    tick: float,
) -> float | None:
    """Cores ``pids`` used together over the window (None: none of them read as one
    process both times)."""
    ticks = [_used(before, after, p) for p in pids]
    used = [t / tick for t in ticks if t is not None]
    if not used or seconds <= 0:
        return None
    return round(sum(used) / seconds, 3)


def cores(
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


def host_load(
    before: dict[int, tuple[int, str]],
    after: dict[int, tuple[int, str]],
    trainer: set[int],
    seconds: float,
    tick: float,
) -> dict[str, Any]:
    """The host's load against its cores, and the other processes that used the most CPU
    over the window (the trainer's own children are the trainer's; the probe and the
    processes that started it are the doctor's)."""
    kids = {c for p in trainer for c in children(p)}
    skip = trainer | kids | _ancestry()
    used: list[tuple[float, int, str]] = []
    for pid, (_ticks, name) in after.items():
        ticks = _used(before, after, pid)
        if ticks is not None and pid not in skip:
            used.append((ticks / tick, pid, name))
    used.sort(reverse=True)
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
