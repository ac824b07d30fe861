"""The compile caches torch.compile warms: inductor's and triton's.

Where they are, as torch and triton decide it for the user running the bundle:
inductor: ``TORCHINDUCTOR_CACHE_DIR``, else ``<tempdir>/torchinductor_<user>``;
triton: ``TRITON_CACHE_DIR``, else ``$TRITON_HOME/.triton/cache`` (``TRITON_HOME``
defaulting to the home directory). Kernels that inductor compiles through triton land in
``<inductor>/triton/<device>`` unless ``TRITON_CACHE_DIR`` is set (torch's
``triton_cache_dir``), so the inductor entry's ``top`` list shows them too. The trainer
may run with other variables than the
bundle's login shell: a profile can name the directories; else the variables as the
trainer sets them win over the bundle's own: the running trainer's environment (the
processes the profile's ``process_match`` picks, those in the workspace when one is
named) and the launch files (the profile's, the workspace's ``*.sh``/``*.slurm``…, an
``export VAR=/path`` line). Every such declaration is listed in ``declared``; the
``source`` of each cache says where its path came from (``param``, ``process:PID``,
``launch:FILE``, ``env:VAR`` for the bundle's own environment, ``default``).

For each: exists, what it is (a file where a directory belongs is a fact), files,
bytes, oldest and newest mtime, the top-level entries with their counts. Nothing is
created: the probe only stats and lists. The walk stops at ``max_entries`` and says so.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import getpass
import os
import re
import stat
import tempfile
from typing import Any

from . import layout, processes
from ._common import Context, ProbeFailure, TypedDict, classify_oserror, file_kind, read_capped

NAME = "caches"
TIMEOUT = 60.0


class TopEntry(TypedDict):
    name: str
    kind: str
    files: int
    bytes: int


class CacheValue(TypedDict, total=False):
    cache: str  # inductor | triton | extra
    path: str
    source: str  # param | env:VAR | default
    exists: bool
    kind: str  # dir | file | symlink-to-... | other
    files: int
    dirs: int
    bytes: int
    oldest_mtime: float | None
    newest_mtime: float | None
    top: list[TopEntry]
    unreadable: list[str]  # subdirectories the walk could not list
    truncated: bool
    error: str
    error_kind: str


class Declared(TypedDict, total=False):
    var: str
    path: str
    source: str  # process:PID | launch:FILE
    line: int


class CachesValue(TypedDict, total=False):
    caches: list[CacheValue]
    declared: list[Declared]  # the trainer's own settings of the cache variables
    declared_problems: list[str]  # settings that name no usable path (``$VAR``, relative)


VARS = {"inductor": "TORCHINDUCTOR_CACHE_DIR", "triton": "TRITON_CACHE_DIR"}
_ASSIGN = re.compile(
    r"^\s*(?:export\s+|env\s+)?(?P<var>TORCHINDUCTOR_CACHE_DIR|TRITON_CACHE_DIR)="
    r"(?P<value>\"[^\"]*\"|'[^']*'|\S*)"
)
MAX_LAUNCH_BYTES = 1 << 20
PROC_MAX = 4 << 20  # bytes of a process's cmdline or environ read


def inductor_default() -> str:
    # Mirrors torch/_inductor/runtime/cache_dir_utils.py: default_cache_dir().
    try:
        user = getpass.getuser()
    except Exception:
        user = f"uid_{os.getuid()}"
    safe = re.sub(r'[\\/:*?"<>|]', "_", user)
    return os.path.join(tempfile.gettempdir(), "torchinductor_" + safe)


def triton_default() -> str:
    home = os.environ.get("TRITON_HOME") or os.path.expanduser("~")
    return os.path.join(home, ".triton", "cache")


def locate(name: str, given: str | None, declared: list[Declared] | None = None) -> tuple[str, str]:
    if given:
        return given, "param"
    var = VARS[name]
    for d in declared or []:
        if d.get("var") == var:
            return str(d["path"]), str(d["source"])
    if os.environ.get(var):
        return os.environ[var], "env:" + var
    return (inductor_default() if name == "inductor" else triton_default()), "default"


def _in_workspace(pid: int, workspace: str | None) -> bool:
    if not workspace:
        return True
    root = os.path.realpath(workspace).rstrip("/") + "/"
    try:
        cwd = os.path.realpath(os.readlink(f"/proc/{pid}/cwd")) + "/"
        cmd = read_capped(f"/proc/{pid}/cmdline", PROC_MAX)[0].decode("utf-8", "replace")
    except OSError:
        return False
    return cwd.startswith(root) or workspace in cmd


def from_processes(match: list[str], workspace: str | None) -> list[Declared]:
    """The cache variables the trainer processes were started with."""
    out: list[Declared] = []
    for pid in processes.matching_pids(match)[: processes.MAX_PROCS]:
        if not _in_workspace(pid, workspace):
            continue
        try:
            items = read_capped(f"/proc/{pid}/environ", PROC_MAX)[0].split(b"\0")
        except OSError:
            continue  # another user's process: the processes probe says so
        for item in items:
            key, sep, value = item.decode("utf-8", "replace").partition("=")
            if sep and key in VARS.values() and value:
                out.append({"var": key, "path": value, "source": f"process:{pid}"})
    return out


def from_launch_files(paths: list[str], problems: list[str]) -> list[Declared]:
    """``VAR=/path`` settings of the cache variables in the launch files."""
    out: list[Declared] = []
    for path in paths:
        try:
            text = read_capped(path, MAX_LAUNCH_BYTES)[0].decode("utf-8", "replace")
        except OSError as exc:  # FileRefused too: a FIFO, a device, a directory, a loop
            if classify_oserror(exc) != "not_found":
                problems.append(f"{path}: {exc.strerror or exc}; its cache settings not read")
            continue
        for number, line in enumerate(text.splitlines(), 1):
            m = _ASSIGN.match(line)
            if m is None:
                continue
            value = m.group("value").strip("\"'")
            if not os.path.isabs(value) or "$" in value:
                problems.append(f"{path}:{number}: {m.group('var')}={value}: not an absolute path")
                continue
            out.append(
                {"var": m.group("var"), "path": value, "source": f"launch:{path}", "line": number}
            )
    return out


def declared_caches(params: dict[str, Any], problems: list[str]) -> list[Declared]:
    """Where the trainer itself says its caches are: its processes first (what it runs
    with now), then its launch files."""
    workspace = params.get("workspace")
    found = (
        from_processes(list(params.get("match") or []), workspace) if params.get("match") else []
    )
    launch = [str(p) for p in params.get("launch_files") or []]
    if workspace:
        layout_files = layout.discover(str(workspace))["launch_files"]
        launch += [str(c["path"]) for c in layout_files if c.get("path")]
    return found + from_launch_files(list(dict.fromkeys(launch)), problems)


def _kind(mode: int) -> str:
    # The cache fact names four kinds: a FIFO, a socket or a device is "other" there.
    kind = file_kind(mode)
    return kind if kind in ("dir", "file", "symlink") else "other"


def walk(path: str, max_entries: int) -> dict[str, Any]:
    """Count files and bytes under ``path`` without following symlinks."""
    out: dict[str, Any] = {
        "files": 0,
        "dirs": 0,
        "bytes": 0,
        "oldest_mtime": None,
        "newest_mtime": None,
        "unreadable": [],
        "truncated": False,
    }
    tops: dict[str, dict[str, Any]] = {}
    seen = 0
    stack: list[tuple[str, str | None]] = [(path, None)]
    oldest = newest = None
    while stack:
        d, top = stack.pop()
        try:
            it = os.scandir(d)
        except OSError as exc:
            if len(out["unreadable"]) < 20:
                out["unreadable"].append(f"{d}: {exc.strerror or exc}")
            continue
        with it:
            for e in it:
                seen += 1
                if seen > max_entries:
                    out["truncated"] = True
                    stack = []
                    break
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                name = top if top is not None else e.name
                if top is None:
                    tops[name] = {"name": name, "kind": _kind(st.st_mode), "files": 0, "bytes": 0}
                m = st.st_mtime
                oldest = m if oldest is None or m < oldest else oldest
                newest = m if newest is None or m > newest else newest
                if stat.S_ISDIR(st.st_mode):
                    out["dirs"] += 1
                    stack.append((e.path, name))
                else:
                    out["files"] += 1
                    out["bytes"] += st.st_size
                    tops[name]["files"] += 1
                    tops[name]["bytes"] += st.st_size
    out["oldest_mtime"], out["newest_mtime"] = oldest, newest
    out["top"] = sorted(tops.values(), key=lambda t: (-t["bytes"], t["name"]))[:50]
    return out


def one(
    name: str, given: str | None, max_entries: int, declared: list[Declared] | None = None
) -> CacheValue:
    path, source = locate(name, given, declared)
    v: CacheValue = {"cache": name, "path": path, "source": source}
    try:
        lst = os.lstat(path)
    except OSError as exc:
        v["exists"] = False
        if classify_oserror(exc) != "not_found":
            v["error"] = exc.strerror or str(exc)
            v["error_kind"] = classify_oserror(exc)
        else:
            # Zero files: what a baseline that saw it warm is compared with.
            v["files"] = 0
        return v
    v["exists"] = True
    kind = _kind(lst.st_mode)
    if kind == "symlink":
        try:
            kind = "symlink-to-" + _kind(os.stat(path).st_mode)
        except OSError:
            kind = "symlink-broken"
    v["kind"] = kind
    if not kind.endswith("dir"):
        # A file where the cache directory belongs: torch cannot write its cache there.
        v["bytes"] = lst.st_size
        v["newest_mtime"] = v["oldest_mtime"] = lst.st_mtime
        return v
    v.update(walk(path, max_entries))  # type: ignore[typeddict-item]
    return v


def collect(params: dict[str, Any], ctx: Context) -> CachesValue:
    max_entries = int(params.get("max_entries", 200000))
    problems: list[str] = []
    try:
        declared = declared_caches(params, problems)
    except ProbeFailure as exc:  # no workspace to look in: the caches are still read
        declared = []
        problems.append(exc.message)
    caches = [
        one("inductor", params.get("inductor"), max_entries, declared),
        one("triton", params.get("triton"), max_entries, declared),
    ]
    # Directories a profile names as caches besides the two torch would pick itself (a
    # trainer may point TORCHINDUCTOR_CACHE_DIR somewhere in code, out of sight).
    caches.extend(one("extra", p, max_entries) for p in params.get("extra", []))
    return {"caches": caches, "declared": declared, "declared_problems": problems}


VALUE = CachesValue
