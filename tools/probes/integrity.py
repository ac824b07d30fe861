"""Installed packages checked against their own ``*.dist-info/RECORD``.

pip writes the sha256 and size of every file it installs into ``RECORD``. A file whose
hash differs was changed after installation — an in-place edit of
``torch/fx/_symbolic_trace.py`` is then a fact, not a guess. Missing files and Python
files in the package that ``RECORD`` does not know (a dropped-in patch module) are
reported too.

``mode``: ``py`` (default) hashes every ``.py`` file and checks the size of all others
(seconds, even for a CUDA torch); ``all`` hashes everything (reads several GB for a
CUDA torch). Editable installs have no files to check and say so.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
from typing import Any

from ._common import Context, ProbeFailure, TypedDict, open_regular, read_text_capped
from .pyenv import _metadata, normalize, path_entries, search_path

NAME = "integrity"
TIMEOUT = 180.0
LIST_MAX = 50
RECORD_MAX = 64 << 20  # bytes of a RECORD read (torch's is a few MiB)


class Mismatch(TypedDict, total=False):
    path: str
    expected_size: int | None
    size: int
    mtime: float
    reason: str  # hash | size


class PackageIntegrity(TypedDict, total=False):
    package: str
    installed: bool  # False: no dist-info on sys.path (nothing else is set)
    version: str
    dist_info: str
    record_mtime: float
    files: int  # entries in RECORD
    hashed: int
    size_checked: int
    hashed_bytes: int
    mismatched: list[Mismatch]
    mismatched_count: int
    missing: list[str]
    missing_count: int
    unrecorded_py: list[str]
    ok: bool
    error: str


class IntegrityValue(TypedDict):
    mode: str
    packages: list[PackageIntegrity]


def find_dist_info(name: str, paths: list[str]) -> str | None:
    want = normalize(name)
    for entry, n in path_entries(paths):
        stem = n[: -len(".dist-info")].rsplit("-", 1)[0]
        if n.endswith(".dist-info") and normalize(stem) == want:
            full = os.path.join(entry, n)
            if normalize(_metadata(os.path.join(full, "METADATA")).get("Name", "")) == want:
                return full
    return None


def _sha256_b64(path: str) -> str:
    h = hashlib.sha256()
    with open_regular(path) as f:  # streamed: never the whole file in memory
        while True:
            buf = f.read(1 << 20)
            if not buf:
                break
            h.update(buf)
    return base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()


def _read_record(dist: str, out: PackageIntegrity) -> list[list[str]] | None:
    """The rows of the package's RECORD, and its mtime into ``out``; None, with why in
    ``out``, when it cannot be read whole."""
    record = os.path.join(dist, "RECORD")
    try:
        text, truncated = read_text_capped(record, RECORD_MAX)
        out["record_mtime"] = os.stat(record).st_mtime
    except OSError as exc:  # FileRefused too: a FIFO, a device, a directory, a loop
        out.update({"ok": False, "error": "RECORD unreadable: %s" % (exc.strerror or exc)})
        return None
    if truncated:
        out.update({"ok": False, "error": f"RECORD larger than {RECORD_MAX} bytes; not read"})
        return None
    return list(csv.reader(io.StringIO(text)))


def _mismatch(rel: str, expected_size: int | None, st: os.stat_result, reason: str) -> Mismatch:
    return {
        "path": rel,
        "expected_size": expected_size,
        "size": st.st_size,
        "mtime": st.st_mtime,
        "reason": reason,
    }


def _unrecorded_py(site: str, name: str, recorded: set[str]) -> list[str]:
    """Python files in the package's top directory that RECORD does not list (a
    dropped-in patch module), the first ``LIST_MAX``."""
    unrecorded: list[str] = []
    top = os.path.join(site, name.replace("-", "_"))
    if os.path.isdir(top):
        for root, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for fn in files:
                full = os.path.normpath(os.path.join(root, fn))
                if fn.endswith(".py") and full not in recorded and len(unrecorded) < LIST_MAX:
                    unrecorded.append(os.path.relpath(full, site))
    return unrecorded


def check(name: str, paths: list[str], mode: str, ctx: Context) -> PackageIntegrity:
    dist = find_dist_info(name, paths)
    if dist is None:
        return {"package": name, "installed": False}
    site = os.path.dirname(dist)
    meta = _metadata(os.path.join(dist, "METADATA"))
    out: PackageIntegrity = {
        "package": name,
        "installed": True,
        "version": meta.get("Version", ""),
        "dist_info": dist,
    }
    rows = _read_record(dist, out)
    if rows is None:
        return out
    mismatched: list[Mismatch] = []
    missing: list[str] = []
    hashed = size_checked = hashed_bytes = 0
    recorded: set[str] = set()
    for row in rows:
        if not row or len(row) < 3:
            continue
        rel, digest, size = row[0], row[1], row[2]
        full = os.path.normpath(os.path.join(site, rel))
        recorded.add(full)
        if not digest:
            continue  # RECORD itself, and files written at install time (.pyc)
        try:
            st = os.stat(full)
        except OSError:
            missing.append(rel)
            continue
        expected_size = int(size) if size.isdigit() else None
        if expected_size is not None and st.st_size != expected_size:
            mismatched.append(_mismatch(rel, expected_size, st, "size"))
            continue
        if mode == "all" or rel.endswith(".py"):
            algo, _, want = digest.partition("=")
            if algo != "sha256":
                continue
            try:
                got = _sha256_b64(full)
            except OSError:
                missing.append(rel)
                continue
            hashed += 1
            hashed_bytes += st.st_size
            if got != want:
                mismatched.append(_mismatch(rel, expected_size, st, "hash"))
        else:
            size_checked += 1
    unrecorded = _unrecorded_py(site, name, recorded)
    out.update(
        {
            "files": len(rows),
            "hashed": hashed,
            "size_checked": size_checked,
            "hashed_bytes": hashed_bytes,
            "mismatched": mismatched[:LIST_MAX],
            "mismatched_count": len(mismatched),
            "missing": missing[:LIST_MAX],
            "missing_count": len(missing),
            "unrecorded_py": sorted(unrecorded),
            "ok": not mismatched and not missing and not unrecorded,
        }
    )
    return out


def collect(params: dict[str, Any], ctx: Context) -> IntegrityValue:
    mode = params.get("mode", "py")
    if mode not in ("py", "all"):
        raise ProbeFailure("bad_params", f"integrity mode must be 'py' or 'all', not {mode!r}")
    paths = search_path()
    names = params.get("packages", ["torch", "triton"])
    return {"mode": mode, "packages": [check(n, paths, mode, ctx) for n in names]}


VALUE = IntegrityValue
