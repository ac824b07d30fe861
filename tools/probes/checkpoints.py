# Shipped to targets running Python 3.8: zip(strict=) and itertools.pairwise are 3.10+.
# ruff: noqa: B905, RUF007
"""The checkpoint directory: its checkpoints (any entry whose name carries a step or
an epoch, see ``_steps``: ``step_N/``, ``checkpoint-N/``, ``epoch_E_step_S/``,
``epoch=E-step=S.ckpt``…), their files and the metadata record a checkpoint carries,
gaps between steps, and damage. Entries not taken for a checkpoint are listed with why.
Given only a workspace, the directory is the layout's best candidate (``source``).

Every file is checked for what can be checked without torch: a torch ``.pt`` (a zip
since torch 1.6) must have a readable central directory at its end, which a truncated
copy lacks; a ``.safetensors`` file must be as long as its header says; JSON must parse.
``deep`` also verifies every zip member's CRC (reads all the bytes). A half-written save
(``step_N.tmp``) and an unreadable file are facts, not failures.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from typing import Any

from . import _canonical, _steps, layout
from ._checkpoint_files import METADATA_MAX, TOO_DEEP, FileCheck, check_file, refused
from ._common import (
    Context,
    ProbeFailure,
    TypedDict,
    expand_globs,
    failure_from_oserror,
    loads_strict,
    read_capped,
)

NAME = "checkpoints"
TIMEOUT = 120.0

METADATA_NAMES = ("metadata.json", "meta.json", "checkpoint_meta.json", "trainer_state.json")
VALUE_MAX = 64 << 10  # bytes of metadata shipped back


class StepDir(TypedDict, total=False):
    name: str
    step: int | None  # None: the name carries only an epoch (``epoch_3/``)
    epoch: int | None
    form: str  # the naming it follows (tools.probes._steps)
    incomplete: bool  # a .tmp/.partial suffix: a save that never finished
    mtime: float
    bytes: int
    files: list[FileCheck]
    metadata_file: str | None
    metadata: Any
    metadata_error: str
    # What the checkpoint records, as canonical quantities (see _canonical): the values,
    # "file:key" each came from, the quantities no file recorded, what could not be read.
    canonical: dict[str, Any]
    canonical_from: dict[str, str]
    not_recorded: list[str]
    canonical_notes: list[str]
    problems: list[str]
    error: str
    error_kind: str


class _CheckpointsSince24(TypedDict, total=False):
    # The profile's checkpoint_pattern, when a name made it overrun its bound
    # (``_steps.Watched``): which name, after how long, and that built-in namings were read.
    # Optional: a sweep recorded before it was added still replays.
    pattern_abandoned: dict[str, Any] | None


class CheckpointsValue(_CheckpointsSince24):
    path: str
    empty: bool
    steps: list[StepDir]
    step_numbers: list[int]
    latest_step: int | None
    typical_interval: int | None
    gaps: list[dict[str, int]]
    problems: int  # files or dirs with a problem
    other_entries: list[dict[str, Any]]  # not taken for a checkpoint, each with ``why``
    source: dict[str, Any]  # which directory was read and why (the profile's, the layout's)
    epoch_numbers: list[int]
    # Saved environment files of the workspace (the profile's, the checkpoint directory's).
    environment: dict[str, Any]
    # The baseline a diff derives: per quantity, the newest finished checkpoint recording
    # it, else the workspace's environment files; ``recorded_from`` says which, per quantity.
    recorded: dict[str, Any]
    recorded_from: dict[str, str]
    # Steps over the checkpoints' modification times: the run's pace where nothing else
    # states one (``pace``).
    pace: dict[str, Any]


def _records_in(names: list[str], listing: list[str]) -> list[str]:
    """The files of ``listing`` the normaliser reads, metadata records first."""
    first = [n for n in names if n in listing]
    rest = [n for n in listing if n not in first and _canonical.is_record_file(n)]
    return first + rest


def canonical_of(files: list[tuple[str, str]], key_map: dict[str, str]) -> dict[str, Any]:
    """Canonical quantities over ``files`` ((path, name to cite) pairs), first found wins.
    A quantity the profile maps that no file holds is a note, not a silent skip."""
    notes: list[str] = []
    parts = [_canonical.read(path, name, key_map, notes) for path, name in files]
    out = _canonical.merge(parts)
    if "config" in out["canonical"]:
        out["canonical"]["config"] = _clip(out["canonical"]["config"])  # as the record is
    for quantity, key in sorted(key_map.items()):
        if quantity not in out["canonical"]:
            notes.append(f"the profile maps {quantity} to {key!r}; no record holds it")
    out["canonical_notes"] = notes
    return out


def saved_environment(
    params: dict[str, Any], path: str, listing: list[str]
) -> list[tuple[str, str]]:
    """The saved environment files to read, as (path, name to cite): the profile's
    ``env_files`` (globs expanded here), else those the workspace's layout found; and
    the ones in the checkpoint directory itself."""
    given = params.get("env_files") or ()
    files = [f for f, _ in expand_globs(given)[0]]
    if not given and params.get("workspace"):
        try:
            found = layout.discover(str(params["workspace"]))["env_files"]
        except ProbeFailure:
            found = []  # the workspace's own failure is the layout probe's fact
        files = [str(c["path"]) for c in found if c.get("path")]
    beside = [
        os.path.join(path, n)
        for n in listing
        if _canonical.is_env_file(n) or n in ("hparams.yaml", "hparams.yml")
    ]
    out = [(f, f) for f in files]
    out += [(f, os.path.basename(f)) for f in beside if f not in files]
    return out


def records_a_finished_save(step: Mapping[str, Any]) -> bool:
    """A step entry whose save finished and whose records were read: what the derived
    baseline may come from (here, and in the controller's choice of the checkpoint before
    a drop, ``agent.diff_keys.checkpoint_before``)."""
    return (
        bool(step.get("canonical"))
        and not step.get("incomplete")
        and not step.get("metadata_error")
    )


def recorded(
    steps: list[StepDir], environment: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The newest finished checkpoint that records anything, its gaps filled from the
    saved environment files. Older checkpoints are not mixed in: a torch version from one
    save beside a git hash from another would describe no run at all."""
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    finished = [s for s in steps if records_a_finished_save(s)]
    if finished:
        newest = finished[-1]
        for quantity, value in newest["canonical"].items():
            values[quantity] = value
            origin[quantity] = f"{newest['name']}/{newest['canonical_from'][quantity]}"
    for quantity, value in environment["canonical"].items():
        if quantity not in values:
            values[quantity] = value
            origin[quantity] = environment["canonical_from"][quantity]
    return values, origin


def _clip(value: Any) -> Any:
    """The metadata record as a fact, cut to its scalar top level when it is huge (or
    nested too deep to write out again)."""
    try:
        text = json.dumps(value, default=str)
        size = f"record of {len(text)} bytes"
    except (RecursionError, ValueError):
        text, size = "", f"record {TOO_DEEP} to write"
    if text and len(text) <= VALUE_MAX:
        return value
    if isinstance(value, dict):
        small = {
            k: v for k, v in value.items() if isinstance(v, (str, int, float, bool)) or v is None
        }
        small["_clipped"] = f"{size}; nested values left out"
        return small
    return {"_clipped": size}


def read_metadata(d: str, names: list[str], entry: StepDir) -> None:
    for name in names:
        p = os.path.join(d, name)
        if not os.path.lexists(p):
            continue
        entry["metadata_file"] = name
        try:
            data, truncated = read_capped(p, METADATA_MAX)
            if truncated:
                entry["metadata_error"] = f"larger than {METADATA_MAX} bytes; not read"
                return
            entry["metadata"] = _clip(loads_strict(data))
        except OSError as exc:
            entry["metadata_error"] = f"unreadable: {refused(exc, p).reason}"
        except ValueError as exc:
            entry["metadata_error"] = f"does not parse (truncated?): {str(exc)[:200]}"
        except RecursionError:
            entry["metadata_error"] = f"does not parse: {TOO_DEEP}"
        return
    entry["metadata_file"] = None


def one_step(
    d: str,
    name: str,
    step: int,
    incomplete: bool,
    names: list[str],
    deep: bool,
    key_map: dict[str, str] | None = None,
) -> StepDir:
    entry: StepDir = {"name": name, "step": step, "incomplete": incomplete, "problems": []}
    try:
        st = os.stat(d)
        entry["mtime"] = st.st_mtime
        listing = sorted(os.listdir(d))
    except OSError as exc:
        fail = failure_from_oserror(exc, d)
        entry["error"], entry["error_kind"] = fail.message, fail.kind
        entry["problems"].append(fail.message)
        return entry
    files = [check_file(os.path.join(d, n), n, deep) for n in listing]
    entry["files"] = files
    entry["bytes"] = sum(f.get("size", 0) for f in files)
    for f in files:
        if f.get("ok") is False:
            entry["problems"].append("{}: {}".format(f["name"], f.get("problem", "")))
    if not files:
        entry["problems"].append("no files")
    if incomplete:
        entry["problems"].append(f"unfinished save ({name})")
    read_metadata(d, names, entry)
    records = _records_in(names, listing)
    canon = canonical_of([(os.path.join(d, n), n) for n in records], key_map or {})
    entry["canonical"], entry["canonical_from"] = canon["canonical"], canon["canonical_from"]
    entry["not_recorded"], entry["canonical_notes"] = (
        canon["not_recorded"],
        canon["canonical_notes"],
    )
    if entry.get("metadata_error"):
        problem = f"{entry.get('metadata_file')}: {entry['metadata_error']}"
        if not any(problem.endswith(p.split(": ", 1)[-1]) for p in entry["problems"]):
            entry["problems"].append(problem)
    return entry


def sort_entries(
    path: str, listing: list[str], pattern: Any
) -> tuple[list[tuple[tuple[Any, ...], _steps.StepName]], list[dict[str, Any]]]:
    """The entries of ``path`` named like checkpoints, oldest first, and the others, each
    with why it was not taken: nothing in the directory goes unmentioned."""
    found: list[tuple[tuple[Any, ...], _steps.StepName]] = []
    other: list[dict[str, Any]] = []
    for n in listing:
        p = os.path.join(path, n)
        try:
            s = os.stat(p)
        except OSError as exc:
            other.append({"name": n, "error": exc.strerror or str(exc), "why": "cannot stat"})
            continue
        is_dir = stat.S_ISDIR(s.st_mode)
        read = _steps.read_step(n, is_dir, pattern)
        why = ""
        if read is None:
            why = (
                "name does not match the profile's checkpoint_pattern"
                if pattern
                else (
                    "name carries no step"
                    if is_dir or n.lower().endswith(_steps.CHECKPOINT_EXTENSIONS)
                    else "not a checkpoint (directory or checkpoint file)"
                )
            )
        elif not is_dir and not stat.S_ISREG(s.st_mode):
            why = "named like a checkpoint, but not a regular file"
        elif read["step"] is None and is_dir and not _steps.holds_state(p):
            why = "an epoch-numbered directory without a state file in it"
        if why:
            other.append(
                {"name": n, "size": s.st_size, "mtime": s.st_mtime, "dir": is_dir, "why": why}
            )
            continue
        assert read is not None
        step = read["step"] if read["step"] is not None else -1
        epoch = read["epoch"] if read["epoch"] is not None else -1
        found.append(((step, epoch, read["incomplete"], n, p, is_dir), read))
    # Ordered by step, then epoch: an epoch-only name sorts by its epoch.
    found.sort(key=lambda f: (f[0][0], f[0][1], f[0][3]))
    return found, other


def one_file(
    p: str, name: str, step: int, incomplete: bool, deep: bool, key_map: dict[str, str]
) -> StepDir:
    """A checkpoint that is one file (Lightning's ``epoch=E-step=S.ckpt``)."""
    check = check_file(p, name, deep)
    entry: StepDir = {
        "name": name,
        "step": step if step >= 0 else None,
        "incomplete": incomplete,
        "problems": [],
        "files": [check],
        "bytes": check.get("size", 0),
        "mtime": check.get("mtime", 0.0),
        "metadata_file": None,
    }
    if check.get("ok") is False:
        entry["problems"].append("{}: {}".format(name, check.get("problem", "")))
    if incomplete:
        entry["problems"].append(f"unfinished save ({name})")
    canon = canonical_of([(p, name)], key_map)
    entry["canonical"], entry["canonical_from"] = canon["canonical"], canon["canonical_from"]
    entry["not_recorded"], entry["canonical_notes"] = (
        canon["not_recorded"],
        canon["canonical_notes"],
    )
    return entry


PACE_MIN_SECONDS = 1.0  # an interval shorter than this is no pace (a copy's timestamps)


def pace(steps: list[StepDir]) -> dict[str, Any]:
    """Steps per second between consecutive finished checkpoints, by their modification
    times (a save's end): the run's pace as its saves show it, the last resort where no
    log states a speed. Each interval includes one save. Withheld where the times do not
    rise with the steps (a copy that did not keep them, a checkpoint touched later), and
    for an interval under ``PACE_MIN_SECONDS``."""
    saved = sorted(
        (
            e
            for e in steps
            if isinstance(e.get("step"), int) and "mtime" in e and not e.get("incomplete")
        ),
        key=lambda e: e["step"] or 0,
    )
    out: dict[str, Any] = {
        "how": "(step - previous step) / (mtime - previous mtime),"
        " consecutive finished checkpoints",
        "unit": "steps/s",
        "ordered": all(a["mtime"] < b["mtime"] for a, b in zip(saved, saved[1:])),
        "windows": [],
    }
    if not out["ordered"]:
        return out
    for a, b in zip(saved, saved[1:]):
        seconds = b["mtime"] - a["mtime"]
        window: dict[str, Any] = {
            "first_step": a["step"],
            "last_step": b["step"],
            "from": a["name"],
            "to": b["name"],
            "seconds": seconds,
        }
        if seconds >= PACE_MIN_SECONDS:
            window["speed"] = ((b["step"] or 0) - (a["step"] or 0)) / seconds
        out["windows"].append(window)
    return out


def collect(params: dict[str, Any], ctx: Context) -> CheckpointsValue:
    path, source = layout.chosen(
        params, "checkpoint_dirs", "directory holding checkpoints named with a step or epoch"
    )
    names = list(params.get("metadata_names") or METADATA_NAMES)
    key_map = dict(params.get("metadata_keys") or {})
    unknown = sorted(set(key_map) - set(_canonical.QUANTITIES))
    if unknown:
        raise ProbeFailure("bad_params", "metadata_keys: unknown quantity " + ", ".join(unknown))
    deep = bool(params.get("deep", False))
    max_steps = int(params.get("max_steps", 100))
    try:
        pattern = _steps.compile_pattern(params.get("pattern"))
    except ValueError as exc:
        raise ProbeFailure("bad_params", str(exc)) from None
    try:
        st = os.stat(path)
    except OSError as exc:
        raise failure_from_oserror(exc, path) from None
    if not stat.S_ISDIR(st.st_mode):
        raise ProbeFailure("not_a_directory", f"{path}: not a directory", path)
    try:
        listing = sorted(os.listdir(path))
    except OSError as exc:
        raise failure_from_oserror(exc, path) from None
    watched = _steps.Watched(pattern) if pattern is not None else None
    found, other = sort_entries(path, listing, watched)
    if watched is not None and watched.abandoned is not None:
        found, other = sort_entries(path, listing, None)
    # Keep the newest max_steps in full; the numbers of all of them are still listed.
    steps = [
        one_step(p, n, s, inc, names, deep, key_map)
        if is_dir
        else one_file(p, n, s, inc, deep, key_map)
        for (s, _e, inc, n, p, is_dir), _read in found[-max_steps:]
    ]
    for entry, (_key, read) in zip(steps, found[-max_steps:]):
        entry["step"], entry["epoch"], entry["form"] = read["step"], read["epoch"], read["form"]
    env_files = saved_environment(params, path, listing)
    environment = canonical_of(env_files, key_map)
    environment["files"] = [name for _, name in env_files]
    baseline, baseline_from = recorded(steps, environment)
    numbers = sorted({key[0] for key, read in found if not key[2] and read["step"] is not None})
    diffs = [b - a for a, b in zip(numbers, numbers[1:])]
    typical = max(set(diffs), key=lambda d: (diffs.count(d), -d)) if diffs else None
    gaps = [
        {"after": a, "before": b, "missing_intervals": (b - a) // typical - 1}
        for a, b in zip(numbers, numbers[1:])
        if typical and b - a > typical
    ]
    return {
        "path": path,
        "empty": not listing,
        "steps": steps,
        "step_numbers": numbers,
        "latest_step": numbers[-1] if numbers else None,
        "typical_interval": typical,
        "gaps": gaps[:50],
        "problems": sum(1 for s in steps if s["problems"]),
        "other_entries": other[:100],
        "source": source,
        "epoch_numbers": sorted({r["epoch"] for _, r in found if r["epoch"] is not None}),
        "environment": environment,
        "recorded": baseline,
        "recorded_from": baseline_from,
        "pace": pace(steps),
        "pattern_abandoned": watched.abandoned if watched is not None else None,
    }


VALUE = CheckpointsValue
