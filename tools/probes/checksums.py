# Shipped to targets running Python 3.8: zip(strict=) and itertools.pairwise are 3.10+.
# ruff: noqa: B905
"""md5 (as engineers run ``md5sum``) and sha256 of the scripts and configs a profile
lists, streamed in large chunks; globs are expanded on the target.

Shipped in the probe bundle: stdlib only, Python >= 3.8.

The two digests are computed in one read of the file: md5 in this thread, sha256 in a
helper thread (hashlib releases the GIL on large buffers), so both cost about what
``md5sum`` alone costs. A file that cannot be read is an entry with ``error``; the probe
fails only when its parameters are wrong.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Sequence
from typing import Any

from . import layout
from ._common import Context, ProbeFailure, TypedDict, expand_globs, file_entry, open_regular

try:
    from queue import SimpleQueue as _Queue
except ImportError:  # pragma: no cover - 3.7 and older
    from queue import Queue as _Queue  # type: ignore[assignment]

NAME = "checksums"
TIMEOUT = 120.0
CHUNK = 1 << 20


class FileDigest(TypedDict, total=False):
    path: str
    kind: str
    size: int
    mtime: float
    mode: str
    md5: str
    sha256: str
    error: str
    error_kind: str
    pattern: str  # the glob it came from, when it came from one


class ChecksumsValue(TypedDict, total=False):
    files: list[FileDigest]
    unmatched: list[str]  # globs that matched nothing
    source: dict[str, Any]  # the profile's paths, or what the workspace's layout offered


def digest_file(
    path: str, algorithms: Sequence[str] = ("md5", "sha256"), chunk: int = CHUNK
) -> dict[str, str]:
    """Hex digests of ``path`` in one streamed read; the first algorithm is hashed in
    this thread, the others each in a thread of their own."""
    hashers = [hashlib.new(a) for a in algorithms]
    helpers: list[threading.Thread] = []
    queues: list[Any] = []
    for h in hashers[1:]:
        q: Any = _Queue()

        def work(h: Any = h, q: Any = q) -> None:
            while True:
                buf = q.get()
                if buf is None:
                    return
                h.update(buf)

        t = threading.Thread(target=work, daemon=True)
        t.start()
        helpers.append(t)
        queues.append(q)
    f = open_regular(path)
    try:
        with contextlib.suppress(AttributeError, OSError):
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
        first = hashers[0]
        # Fresh bytes objects per read (no reused buffer): the helper threads may still
        # be hashing the previous chunk.
        read = f.read
        while True:
            buf = read(chunk)
            if not buf:
                break
            for q in queues:
                q.put(buf)
            first.update(buf)
    finally:
        for q in queues:
            q.put(None)
        for t in helpers:
            t.join()
        f.close()
    return {a: h.hexdigest() for a, h in zip(algorithms, hashers)}


def _one(path: str, algorithms: Sequence[str], pattern: str | None) -> FileDigest:
    entry: FileDigest = dict(file_entry(path))  # type: ignore[assignment]
    if pattern is not None:
        entry["pattern"] = pattern
    if "error" in entry:
        return entry
    try:
        entry.update(digest_file(path, algorithms))  # type: ignore[typeddict-item]
    except ProbeFailure as exc:
        entry["error"] = exc.message
        entry["error_kind"] = exc.kind
    except OSError as exc:
        entry["error"] = exc.strerror or str(exc)
        entry["error_kind"] = "io_error"
    return entry


def collect(params: dict[str, Any], ctx: Context) -> ChecksumsValue:
    paths, source = layout.chosen_many(params, ("scripts", "configs", "launch_files"))
    algorithms = params.get("algorithms", ["md5", "sha256"])
    for a in algorithms:
        if a not in hashlib.algorithms_available:
            raise ProbeFailure("bad_params", f"unknown hash algorithm {a!r}")
    found, unmatched = expand_globs(paths)
    files = [_one(path, algorithms, pattern) for path, pattern in found]
    return {"files": files, "unmatched": unmatched, "source": source}


VALUE = ChecksumsValue
