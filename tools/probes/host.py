"""Host facts: name, kernel, uptime, load, memory, CPUs, and disk free on the paths
that matter (the workspace, the checkpoint directory).

Shipped in the probe bundle: stdlib only, Python >= 3.8. Reads /proc; writes nothing.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from ._common import Context, TypedDict, classify_oserror, read_text_capped

NAME = "host"
TIMEOUT = 15.0


class Disk(TypedDict, total=False):
    path: str
    total_bytes: int
    free_bytes: int  # available to an unprivileged user, as `df` shows
    used_fraction: float
    error: str
    error_kind: str


class HostValue(TypedDict, total=False):
    hostname: str
    kernel: str
    machine: str
    uid: int
    now: float  # epoch seconds on the target's clock
    boot_time: float | None
    uptime_s: float | None
    loadavg: list[float] | None
    cpu_count: int | None
    mem_total_bytes: int | None
    mem_available_bytes: int | None
    disks: list[Disk]


def _read(path: str) -> str | None:
    try:
        return read_text_capped(path, 1 << 20)[0]
    except OSError:  # FileRefused too
        return None


def disk(path: str) -> Disk:
    try:
        st = os.statvfs(path)
    except OSError as exc:
        return {
            "path": path,
            "error": exc.strerror or str(exc),
            "error_kind": classify_oserror(exc),
        }
    total = st.f_blocks * st.f_frsize
    free = st.f_bavail * st.f_frsize
    used = total - st.f_bfree * st.f_frsize
    return {
        "path": path,
        "total_bytes": total,
        "free_bytes": free,
        "used_fraction": (used / total) if total else 0.0,
    }


def collect(params: dict[str, Any], ctx: Context) -> HostValue:
    uptime = _read("/proc/uptime")
    up = float(uptime.split()[0]) if uptime else None
    load = _read("/proc/loadavg")
    meminfo: dict[str, int] = {}
    for line in (_read("/proc/meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            meminfo[key] = int(parts[0]) * 1024
    boot = None
    for line in (_read("/proc/stat") or "").splitlines():
        if line.startswith("btime "):
            boot = float(line.split()[1])
    u = os.uname()
    return {
        "hostname": socket.gethostname(),
        "kernel": u.release,
        "machine": u.machine,
        "uid": os.getuid(),
        "now": time.time(),
        "boot_time": boot,
        "uptime_s": up,
        "loadavg": [float(x) for x in load.split()[:3]] if load else None,
        "cpu_count": os.cpu_count(),
        "mem_total_bytes": meminfo.get("MemTotal"),
        "mem_available_bytes": meminfo.get("MemAvailable"),
        "disks": [disk(p) for p in params.get("paths", [])],
    }


VALUE = HostValue
