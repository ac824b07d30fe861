"""The compile caches torch.compile warms: inductor's and triton's.

Where they are, as torch and triton decide it for the user running the bundle:
inductor: ``TORCHINDUCTOR_CACHE_DIR``, else ``<tempdir>/torchinductor_<user>``;
triton: ``TRITON_CACHE_DIR``, else ``$TRITON_HOME/.triton/cache`` (``TRITON_HOME``
defaulting to the home directory). Kernels that inductor compiles through triton land in
``<inductor>/triton/<device>`` unless ``TRITON_CACHE_DIR`` is set (torch's
``triton_cache_dir``), so the inductor entry's ``top`` list shows them too. The trainer
may run with other variables than the
bundle's login shell: a profile can name the directories, and the ``processes`` probe
reports the trainer's own ``TORCHINDUCTOR_*``/``TRITON_*`` variables.

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

from ._common import Context, TypedDict, classify_oserror

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


class CachesValue(TypedDict):
    caches: list[CacheValue]


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


def locate(name: str, given: str | None) -> tuple[str, str]:
    if given:
        return given, "param"
    var = {"inductor": "TORCHINDUCTOR_CACHE_DIR", "triton": "TRITON_CACHE_DIR"}[name]
    if os.environ.get(var):
        return os.environ[var], "env:" + var
    return (inductor_default() if name == "inductor" else triton_default()), "default"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


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


def one(name: str, given: str | None, max_entries: int) -> CacheValue:
    path, source = locate(name, given)
    v: CacheValue = {"cache": name, "path": path, "source": source}
    try:
        lst = os.lstat(path)
    except OSError as exc:
        v["exists"] = False
        if classify_oserror(exc) != "not_found":
            v["error"] = exc.strerror or str(exc)
            v["error_kind"] = classify_oserror(exc)
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
    caches = [
        one("inductor", params.get("inductor"), max_entries),
        one("triton", params.get("triton"), max_entries),
    ]
    # Directories a profile names as caches besides the two torch would pick itself (the
    # reference trainer points TORCHINDUCTOR_CACHE_DIR at its workspace in code).
    caches.extend(one("extra", p, max_entries) for p in params.get("extra", []))
    return {"caches": caches}


VALUE = CachesValue
