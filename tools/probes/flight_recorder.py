"""torch's Flight Recorder dumps: per rank, the collectives it enqueued, started and
completed, and across ranks the first collective some rank never reached.

With ``TORCH_FR_BUFFER_SIZE`` (``TORCH_NCCL_TRACE_BUFFER_SIZE`` before) set, every
process group keeps a ring of its last collectives; on a timeout
(``TORCH_FR_DUMP_ON_TIMEOUT`` / ``TORCH_NCCL_DUMP_ON_TIMEOUT``) or when code calls
``torch._C._distributed_c10d._dump_fr_trace()``, each rank writes it as a pickle to
``<prefix><rank>`` (``TORCH_FR_DUMP_TEMP_FILE``, ``TORCH_NCCL_DEBUG_INFO_TEMP_FILE``;
torch's default prefix ``/tmp/nccl_trace_rank_``). torch 2.13's dump holds ``version``,
``pg_config``, ``pg_status`` (per group: ``last_enqueued_collective``,
``last_started_collective``, ``last_completed_collective``) and ``entries`` (each with
``collective_seq_id``, ``profiling_name`` such as ``gloo:all_reduce``, ``state``,
``process_group``, ``thread_name``, sizes, ``timeout_ms``).

The dumps are read with ``tools.parsers.plain_pickle`` (plain data only, never
``pickle.load``). Where they are: the profile's ``paths`` (globs); the prefixes the
trainer's processes in the workspace set in their environment (torch's default prefix
where they turn dumping on without one); files in the workspace named ``…rank<N>`` or
``…rank_<N>`` whose first byte is a pickle's.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ..parsers import plain_pickle
from . import _workspace_env
from ._common import Context, expand_globs, is_regular, profile_places, read_capped, walk_shallow

NAME = "flight_recorder"
TIMEOUT = 30.0

MAX_DUMPS = 64
MAX_BYTES = 64 << 20
MAX_WALK = 5000  # directory entries looked at in the workspace
WALK_DEPTH = 4
LAST_ENTRIES = 8
PREFIX_VARS = ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
DUMP_ON_VARS = ("TORCH_FR_DUMP_ON_TIMEOUT", "TORCH_NCCL_DUMP_ON_TIMEOUT")
DEFAULT_PREFIX = "/tmp/nccl_trace_rank_"
_RANKED = re.compile(r"rank_?(\d+)$")
_STATUS = ("last_enqueued_collective", "last_started_collective", "last_completed_collective")


def _prefixes_from_trainers(workspace: str) -> list[tuple[str, str]]:
    """(prefix, why) for each live process working in ``workspace`` that names one, or
    that turns dumping on (torch's default prefix then)."""
    found: dict[str, str] = {}
    for pid, env in _workspace_env.in_workspace(workspace, PREFIX_VARS + DUMP_ON_VARS):
        for var in PREFIX_VARS:
            if env.get(var):
                found.setdefault(env[var], f"{var} of pid {pid}")
        dumps_on = any(env.get(v) not in (None, "", "0") for v in DUMP_ON_VARS)
        if dumps_on and not any(env.get(v) for v in PREFIX_VARS):
            found.setdefault(DEFAULT_PREFIX, f"torch's default prefix (pid {pid} dumps)")
    return list(found.items())


def _in_workspace(workspace: str) -> list[str]:
    """Files under ``workspace`` named with a rank whose first byte opens a pickle."""
    out: list[str] = []
    seen = 0
    for top, files in walk_shallow(workspace, WALK_DEPTH):
        for name in files:
            seen += 1
            if seen > MAX_WALK:
                return out
            if _RANKED.search(name):
                path = os.path.join(top, name)
                # A FIFO or device named like a dump must not block or be read.
                if not is_regular(path, follow_symlinks=False):
                    continue
                try:
                    with open(path, "rb") as fh:
                        if fh.read(1) == b"\x80":
                            out.append(path)
                except OSError:
                    continue
    return out


def _rank_of(path: str) -> int | None:
    found = _RANKED.search(os.path.basename(path))
    return int(found.group(1)) if found else None


def _entry(raw: Any) -> dict[str, Any]:
    """The fields of one ring entry a reader of collectives needs, typed or None."""
    e = raw if isinstance(raw, dict) else {}

    def pick(key: str, kinds: tuple[type, ...]) -> Any:
        value = e.get(key)
        return value if isinstance(value, kinds) and not isinstance(value, bool) else None

    group = e.get("process_group")
    return {
        "collective_seq_id": pick("collective_seq_id", (int,)),
        "op": pick("profiling_name", (str,)),
        "state": pick("state", (str,)),
        "pg_id": pick("pg_id", (int,)),
        "process_group": list(group)[:2] if isinstance(group, (list, tuple)) else None,
        "thread_name": pick("thread_name", (str,)),
        "input_sizes": e.get("input_sizes") if isinstance(e.get("input_sizes"), list) else None,
        "timeout_ms": pick("timeout_ms", (int,)),
        "time_created_ns": pick("time_created_ns", (int,)),
    }


def read_dump(path: str) -> dict[str, Any]:
    """One rank's dump, summarised; ``error`` (one line) where it cannot be read."""
    out: dict[str, Any] = {"path": path, "rank": _rank_of(path)}
    try:
        data, truncated = read_capped(path, MAX_BYTES)
    except OSError as exc:
        out["error"] = f"{exc.strerror or exc}"
        return out
    if truncated:
        out["error"] = f"larger than {MAX_BYTES} bytes; not read"
        return out
    try:
        dump = plain_pickle.loads(data)
    except plain_pickle.Refused as exc:
        out["error"] = f"not a plain-data pickle: {exc}"
        return out
    if not isinstance(dump, dict) or not isinstance(dump.get("entries"), list):
        out["error"] = "not a Flight Recorder dump (no 'entries' list)"
        return out
    status: dict[str, dict[str, int | None]] = {}
    for pg, values in (dump.get("pg_status") or {}).items():
        if isinstance(values, dict):
            status[str(pg)] = {
                k: values.get(k) if isinstance(values.get(k), int) else None for k in _STATUS
            }
    entries = [_entry(e) for e in dump["entries"]]
    out.update(
        version=dump.get("version") if isinstance(dump.get("version"), str) else None,
        pg_status=status,
        entries=len(entries),
        last=entries[-LAST_ENTRIES:],
        ops={
            str(e["collective_seq_id"]): e["op"]
            for e in entries
            if e["collective_seq_id"] is not None and e["op"]
        },
    )
    return out


def across(dumps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per process group, the first collective some rank never enqueued: the ranks that
    reached it, those that did not, and its op as a rank that reached it recorded it."""
    read = [d for d in dumps if "error" not in d and d.get("rank") is not None]
    groups = sorted({pg for d in read for pg in d["pg_status"]})
    out = []
    for pg in groups:
        enqueued = {
            d["rank"]: d["pg_status"][pg]["last_enqueued_collective"]
            for d in read
            if pg in d["pg_status"]
            and isinstance(d["pg_status"][pg]["last_enqueued_collective"], int)
        }
        if len(enqueued) < 2 or min(enqueued.values()) == max(enqueued.values()):
            continue
        seq = min(enqueued.values()) + 1
        behind = sorted(r for r, n in enqueued.items() if n < seq)
        ahead = sorted(r for r, n in enqueued.items() if n >= seq)
        op = next(
            (d["ops"].get(str(seq)) for d in read if d["rank"] in ahead and d["ops"].get(str(seq))),
            None,
        )
        out.append(
            {
                "pg": pg,
                "collective_seq_id": seq,
                "op": op,
                "not_reached_by": behind,
                "reached_by": ahead,
                "last_enqueued": {str(r): n for r, n in sorted(enqueued.items())},
            }
        )
    return out


def collect(params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    workspace = params.get("workspace")
    where = profile_places(params, "dump")
    if workspace:
        where += [(p + "*", why) for p, why in _prefixes_from_trainers(str(workspace))]
        where += [(p, "in the workspace, named with a rank") for p in _in_workspace(str(workspace))]
    paths: dict[str, str] = {}
    for pattern, why in where:
        for path, _ in expand_globs([pattern])[0]:
            if len(paths) < MAX_DUMPS and is_regular(path):
                paths.setdefault(path, why)
    dumps = [dict(read_dump(p), why=why) for p, why in paths.items()]
    dumps.sort(key=lambda d: (d.get("rank") is None, d.get("rank") or 0, d["path"]))
    return {
        "looked": [{"where": p, "why": why} for p, why in where],
        "dumps": dumps,
        "unread": sum(1 for d in dumps if "error" in d),
        "first_missing": across(dumps),
    }


VALUE = dict
