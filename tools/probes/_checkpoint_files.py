"""Whether a checkpoint's file is whole, checked without loading it: a torch zip's
directory (and, deep, its CRCs), a safetensors header against the file's size, a JSON
file parsed; a special file is never opened.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import io
import json
import os
import stat
import struct
import zipfile
from typing import Any

from ._common import FileRefused, TypedDict, loads_strict, open_regular, read_capped

METADATA_MAX = 1 << 20  # bytes of a metadata record read; a larger one is a fact
TOO_DEEP = "nested too deep for a JSON parser"  # RecursionError: a fact, not a failure


class FileCheck(TypedDict, total=False):
    name: str
    size: int
    mtime: float
    format: str  # torch-zip | torch-legacy | safetensors | json | other
    ok: bool | None  # None: nothing to check
    problem: str
    members: int


def check_file(path: str, name: str, deep: bool) -> FileCheck:
    """What the file ``name`` at ``path`` is and whether it is whole; ``deep`` also
    checks a zip's CRCs (reading every member)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return {"name": name, "ok": False, "problem": refused(exc, path).reason}
    out: FileCheck = {"name": name, "size": st.st_size, "mtime": st.st_mtime, "ok": None}
    if stat.S_ISDIR(st.st_mode):
        out["format"] = "other"  # a directory inside a checkpoint (a shard, a state dir)
        return out
    if not stat.S_ISREG(st.st_mode):
        # A FIFO, a socket, a device (a link to /dev/zero): never opened, a problem.
        return {"name": name, "format": "other", "ok": False, "problem": _refused_mode(path)}
    lower = name.lower()
    try:
        if st.st_size == 0:
            out.update({"ok": False, "problem": "empty file"})
        elif lower.endswith((".pt", ".pth", ".bin", ".ckpt")):
            _check_torch(path, out, deep)
        elif lower.endswith(".safetensors"):
            _check_safetensors(path, st.st_size, out)
        elif lower.endswith(".json"):
            out["format"] = "json"
            if st.st_size > METADATA_MAX * 16:
                out["ok"] = None
            else:
                data, _ = read_capped(path, METADATA_MAX * 16)
                json.loads(data)
                out["ok"] = True
        else:
            out["format"] = "other"
    except OSError as exc:
        out.update({"ok": False, "problem": f"unreadable: {refused(exc, path).reason}"})
    except ValueError as exc:
        out.update({"ok": False, "problem": f"does not parse: {str(exc)[:200]}"})
    except RecursionError:
        out.update({"ok": False, "problem": f"does not parse: {TOO_DEEP}"})
    return out


def refused(exc: OSError, path: str) -> FileRefused:
    """``exc`` as the helper words it (a symlink loop says so)."""
    if isinstance(exc, FileRefused):
        return exc
    try:
        open_regular(path).close()
    except FileRefused as again:
        return again
    return FileRefused("io_error", exc.strerror or str(exc), path)


def _refused_mode(path: str) -> str:
    try:
        open_regular(path).close()
    except FileRefused as exc:
        return exc.reason
    return "not a regular file"


def _check_torch(path: str, out: FileCheck, deep: bool) -> None:
    with open_regular(path) as raw, io.BufferedReader(raw, 1 << 16) as f:
        magic = f.read(4)
        if magic[:2] == b"\x80\x02" or magic[:1] == b"\x80":
            # torch.save(..., _use_new_zipfile_serialization=False): a bare pickle stream.
            out.update({"format": "torch-legacy", "ok": None})
            return
        out["format"] = "torch-zip"
        f.seek(0)
        _check_zip(f, out, deep)


def _check_zip(f: Any, out: FileCheck, deep: bool) -> None:
    try:
        with zipfile.ZipFile(f) as z:
            members = z.infolist()
            out["members"] = len(members)
            if deep:
                bad = z.testzip()
                if bad is not None:
                    out.update({"ok": False, "problem": f"CRC mismatch in member {bad}"})
                    return
    except (zipfile.BadZipFile, EOFError) as exc:
        out.update({"ok": False, "problem": f"not a readable zip (truncated?): {exc}"})
        return
    out["ok"] = True


def _check_safetensors(path: str, size: int, out: FileCheck) -> None:
    out["format"] = "safetensors"
    with open_regular(path) as f:
        head = f.read(8)
        if len(head) < 8:
            out.update({"ok": False, "problem": "shorter than its 8-byte header length"})
            return
        (n,) = struct.unpack("<Q", head)
        if n > min(size - 8, 100 << 20):
            out.update({"ok": False, "problem": f"header length {n} past the end of the file"})
            return
        header = loads_strict(f.read(n))
    if not isinstance(header, dict):
        out.update({"ok": False, "problem": "header is not a JSON object"})
        return
    end = 0
    for k, v in header.items():
        if k != "__metadata__" and isinstance(v, dict):
            try:
                end = max(end, int(v.get("data_offsets", [0, 0])[1]))
            except (TypeError, ValueError, IndexError, KeyError):
                problem = f"tensor {str(k)[:60]!r}: data_offsets is not [begin, end]"
                out.update({"ok": False, "problem": problem})
                return
    if 8 + n + end > size:
        out.update(
            {
                "ok": False,
                "problem": f"tensor data ends at byte {8 + n + end}, file has {size} (truncated)",
            }
        )
        return
    out["ok"] = True
