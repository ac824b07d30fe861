"""What a workspace holds, found by looking: checkpoint directories, training and console
logs, scripts, configs, launch files, Python environments, saved environment lists and
prompt files, each with the reason it was taken for what it is.

No trainer's layout is assumed. The walk is breadth-first (what lies near the top is
found first), read-only and bounded: ``MAX_DEPTH`` levels, ``MAX_ENTRIES`` entries, a
deadline; it skips version control, caches and installed packages, never follows a
symlinked directory out of the root (nor into a directory it has seen: no loops), and
never opens anything but a regular file (a FIFO would block, a device could be
anything). A file is opened only to peek at its first ``PEEK`` bytes, and only when its
name alone cannot tell a training log from a prompt file (``_layout_files`` tells what a
file is). Whatever the walk saw and could not place is listed in ``unrecognised`` with
the reason; what it did not enter, in ``skipped``.

Other probes import ``discover`` to find their input when the profile names only a
workspace: each probe runs in a forked child of the bundle (``probes._runner``), so the
memo below serves the calls within one process (threads included: it is locked); forked
children each walk for themselves, within their own time limits, and see the same tree.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import os
import re
import stat
import threading
import time
from typing import Any

from . import _steps
from ._common import Context, ProbeFailure, TypedDict, failure_from_oserror
from ._layout_files import Candidate, Files

NAME = "layout"
TIMEOUT = 60.0

MAX_DEPTH = 4
MAX_ENTRIES = 20000
# Entries of one directory looked at: a folder of 20,000 shards or images must not spend
# the whole walk before its siblings (checkpoints/, the train log) are seen. The rest are
# counted, in ``skipped``.
MAX_DIR_ENTRIES = 2000
MAX_LISTED = 50  # candidates kept per kind

SKIP_DIRS = {
    ".git": "version control",
    ".hg": "version control",
    ".svn": "version control",
    "node_modules": "installed packages",
    "site-packages": "installed packages",
    "dist-packages": "installed packages",
    "__pycache__": "bytecode",
    ".mypy_cache": "tool cache",
    ".pytest_cache": "tool cache",
    ".ruff_cache": "tool cache",
    ".tox": "tool environments",
    ".ipynb_checkpoints": "notebook autosaves",
}
# Inductor's and triton's cache directories hold thousands of files and nothing else.
CACHE_MARKERS = ("fxgraph", "aotautograd", "triton", "locks", "fxgraph_cache")


class LayoutValue(TypedDict):
    root: str
    checkpoint_dirs: list[Candidate]
    train_logs: list[Candidate]
    stdout_logs: list[Candidate]
    scripts: list[Candidate]
    configs: list[Candidate]
    launch_files: list[Candidate]
    envs: list[Candidate]
    env_files: list[Candidate]
    dataset: list[Candidate]
    caches: list[Candidate]
    unrecognised: list[Candidate]
    skipped: list[Candidate]
    entries: int
    truncated: bool


_MEMO: dict[tuple[str, int, int], LayoutValue] = {}
_LOCK = threading.Lock()


def discover(
    root: str,
    max_depth: int = MAX_DEPTH,
    max_entries: int = MAX_ENTRIES,
    deadline: float | None = None,
) -> LayoutValue:
    """The candidates under ``root``, best first (see the module docstring); a
    ProbeFailure when ``root`` itself is missing or no directory. Memoized per process."""
    try:
        real = os.path.realpath(root)
        st = os.stat(root)
    except OSError as exc:
        raise failure_from_oserror(exc, root) from None
    if not stat.S_ISDIR(st.st_mode):
        raise ProbeFailure("not_a_directory", f"{root}: not a directory", root)
    key = (real, max_depth, max_entries)
    with _LOCK:
        if key in _MEMO:
            return _MEMO[key]
        value = _Walk(root, real, max_depth, max_entries, deadline).run()
        _MEMO[key] = value
        return value


def first_path(value: LayoutValue, role: str) -> tuple[str, str] | None:
    """The best candidate for ``role`` (``train_logs``, ``stdout_logs``…) as (path, why)."""
    found: list[dict[str, Any]] = dict(value).get(role) or []  # type: ignore[assignment]
    if not found or not found[0].get("path"):
        return None
    return str(found[0]["path"]), str(found[0].get("why", ""))


def chosen(params: dict[str, Any], role: str, what: str) -> tuple[str, dict[str, Any]]:
    """The one file or directory a probe reads: ``params["path"]`` when the profile names
    it, else the workspace's best candidate for ``role``; and a ``source`` record saying
    which and why. None found: a ProbeFailure of kind ``skipped`` naming what was looked
    for (a path the profile names and is missing stays ``not_found``, in the probe)."""
    if params.get("path"):
        return str(params["path"]), {"path": params["path"], "why": "named by the profile"}
    workspace = params.get("workspace")
    if not workspace:
        raise ProbeFailure("bad_params", f"needs a path or a workspace to find {what} in")
    value = discover(str(workspace))
    best = first_path(value, role)
    if best is None:
        # Nothing said there would be one: the probe had nothing to look at (skipped,
        # no fact), not a failed observation that would leave claims unverifiable.
        raise ProbeFailure(
            "skipped",
            f"no {what} found under {workspace} ({value['entries']} entries looked at"
            + (", walk truncated" if value["truncated"] else "")
            + ")"
            + _one_level_up(str(workspace))
            + "; name it in the profile",
            str(workspace),
        )
    return best[0], {"path": best[0], "why": best[1], "workspace": workspace}


# Names a run's own logs take beside an output directory (Trainer's output_dir inside a
# run directory whose launcher wrote ``train.log`` next to it).
_LOG_NAME = re.compile(r"(?i).*\.(?:log|out|err|txt|jsonl|csv)\Z")
_UP_LISTED = 5


def _one_level_up(workspace: str) -> str:
    """The log-like files beside the workspace, in its parent directory (not walked
    further), where a user pointed at an output directory: where else to look."""
    parent = os.path.dirname(os.path.abspath(workspace))
    try:
        with os.scandir(parent) as entries:
            names = sorted(
                e.name
                for e in entries
                if _LOG_NAME.match(e.name) and e.is_file(follow_symlinks=False)
            )
    except OSError:
        return ""
    if not names:
        return ""
    shown = ", ".join(names[:_UP_LISTED]) + (
        f" and {len(names) - _UP_LISTED} more" if len(names) > _UP_LISTED else ""
    )
    return f"; one level up, in {parent}: {shown} (give --workspace that directory)"


def chosen_many(
    params: dict[str, Any], roles: tuple[str, ...], limit: int = MAX_LISTED
) -> tuple[list[str], dict[str, Any]]:
    """The paths (globs allowed) a probe reads: ``params["paths"]`` when the profile names
    them, else the workspace's candidates for ``roles``; and the ``source`` record."""
    given = params.get("paths")
    if isinstance(given, list) and given:
        return [str(p) for p in given], {"paths": given, "why": "named by the profile"}
    workspace = params.get("workspace")
    if not workspace:
        raise ProbeFailure("bad_params", "needs a list of paths or a workspace")
    value: dict[str, Any] = dict(discover(str(workspace)))
    found: list[str] = []
    for role in roles:
        found += [str(c["path"]) for c in value.get(role) or [] if c.get("path")]
    found = list(dict.fromkeys(found))[:limit]
    why = "the workspace's " + " and ".join(r.replace("_", " ") for r in roles)
    return found, {"workspace": workspace, "why": why, "roles": list(roles)}


def _form(name: str) -> str:
    read = _steps.read_step(name, True) or _steps.read_step(name, False)
    return read["form"] if read else "None"


def _order(name: str) -> tuple[int, int, str]:
    read = _steps.read_step(name, True) or _steps.read_step(name, False)
    if read is None:
        return (-1, -1, name)
    step, epoch = read["step"], read["epoch"]
    return (-1 if step is None else step, -1 if epoch is None else epoch, name)


class _Walk(Files):
    """One breadth-first walk of a workspace's directories (see the module docstring)."""

    def __init__(
        self, root: str, real: str, max_depth: int, max_entries: int, deadline: float | None
    ) -> None:
        super().__init__()
        self.root = root.rstrip("/") or "/"
        self.real = real
        self.max_depth = max_depth
        self.max_entries = max_entries
        self.deadline = deadline
        self.seen_dirs: set[tuple[int, int]] = set()
        self.entries = 0
        self.truncated = False
        self.step_entries: set[str] = set()  # paths of step-named checkpoints

    # -- walking ----------------------------------------------------------------------

    def run(self) -> LayoutValue:
        try:
            st = os.stat(self.root)
            self.seen_dirs.add((st.st_dev, st.st_ino))
        except OSError:
            pass
        # The workspace may itself be an environment (a conda prefix used as one).
        if os.path.isfile(os.path.join(self.root, "pyvenv.cfg")):
            self._env(self.root, "venv", "the workspace holds pyvenv.cfg (a virtualenv)", 0)
        elif os.path.isdir(os.path.join(self.root, "conda-meta")):
            self._env(self.root, "conda", "the workspace holds conda-meta/ (a conda env)", 0)
        level: list[tuple[str, int, bool]] = [(self.root, 0, False)]  # path, depth, in_ckpt
        while level and not self.truncated:
            nxt: list[tuple[str, int, bool]] = []
            for d, depth, in_ckpt in level:
                if self.truncated:
                    break
                nxt.extend(self._visit(d, depth, in_ckpt))
            level = nxt
        return self._value()

    def _over(self) -> bool:
        if self.entries >= self.max_entries or (
            self.deadline is not None and time.monotonic() > self.deadline
        ):
            self.truncated = True
        return self.truncated

    def _visit(self, d: str, depth: int, in_ckpt: bool) -> list[tuple[str, int, bool]]:
        try:
            with os.scandir(d) as it:
                listing = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            self._add("unrecognised", d, f"cannot list: {exc.strerror or exc}")
            return []
        if len(listing) > MAX_DIR_ENTRIES:
            self._add(
                "skipped",
                d,
                f"{len(listing) - MAX_DIR_ENTRIES} of its {len(listing)} entries not looked at"
                f" (the first {MAX_DIR_ENTRIES} by name were)",
            )
            listing = listing[:MAX_DIR_ENTRIES]
        subdirs: list[tuple[str, int, bool]] = []
        dirs: list[tuple[os.DirEntry[str], os.stat_result]] = []
        steps: list[tuple[str, float]] = []
        for e in listing:
            if self._over():
                break
            self.entries += 1
            try:
                lst = e.stat(follow_symlinks=False)
            except OSError as exc:
                self._add("unrecognised", e.path, f"cannot stat: {exc.strerror or exc}")
                continue
            if stat.S_ISLNK(lst.st_mode):
                try:
                    st = os.stat(e.path)
                except OSError:
                    self._add("unrecognised", e.path, "broken symlink")
                    continue
                if stat.S_ISDIR(st.st_mode) and not self._inside(e.path):
                    self._add(
                        "skipped",
                        e.path,
                        "symlink to a directory outside the workspace: not followed "
                        "(name it in the profile to read it)",
                    )
                    continue
            else:
                st = lst
            if stat.S_ISDIR(st.st_mode):
                dirs.append((e, st))
            elif stat.S_ISREG(st.st_mode):
                if not in_ckpt and self._step_entry(e.name, False, e.path):
                    steps.append((e.name, st.st_mtime))  # a whole checkpoint in one file
                else:
                    self._file(e.path, e.name, depth + 1, in_ckpt, st)
            else:
                kind = "fifo" if stat.S_ISFIFO(st.st_mode) else "special file"
                self._add("unrecognised", e.path, f"{kind}: not opened")
        for e, st in dirs:
            verdict = self._dir(e.path, e.name, depth + 1, in_ckpt, st)
            if verdict == "step":
                steps.append((e.name, st.st_mtime))
            if verdict in ("step", "descend") and depth + 1 < self.max_depth:
                subdirs.append((e.path, depth + 1, in_ckpt or verdict == "step"))
        if steps and not in_ckpt:
            names = sorted((n for n, _ in steps), key=_order)  # by step, then epoch
            newest = max(m for _, m in steps)
            forms = sorted({_form(n) for n in names})
            self._add(
                "checkpoint_dirs",
                d,
                "{} entr{} named with a step or epoch ({}: {})".format(
                    len(names),
                    "y" if len(names) == 1 else "ies",
                    ", ".join(f for f in forms if f != "None") or "files",
                    ", ".join(names[:3]) + (", ..." if len(names) > 3 else ""),
                ),
                rank=(-newest, -len(names), d),
                entries=len(names),
                examples=names[:5],
                mtime=newest,
            )
        return subdirs

    def _inside(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real == self.real or real.startswith(self.real.rstrip("/") + "/")

    def _step_entry(self, name: str, is_dir: bool, path: str) -> bool:
        read = _steps.read_step(name, is_dir)
        if read is None:
            return False
        if read["form"] == "epoch" and is_dir and not _steps.holds_state(path):
            return False
        self.step_entries.add(path)
        return True

    def _dir(self, path: str, name: str, depth: int, in_ckpt: bool, st: os.stat_result) -> str:
        """What to do with a directory: ``step`` (a checkpoint), ``descend`` or ``stop``."""
        ident = (st.st_dev, st.st_ino)
        if ident in self.seen_dirs:
            self._add("skipped", path, "already seen (a symlink loop or a second link)")
            return "stop"
        self.seen_dirs.add(ident)
        if name in SKIP_DIRS:
            self._add("skipped", path, SKIP_DIRS[name] + ": not searched")
            return "stop"
        if os.path.isfile(os.path.join(path, "pyvenv.cfg")):
            self._env(path, "venv", "holds pyvenv.cfg (a virtualenv)", depth)
            return "stop"
        if os.path.isdir(os.path.join(path, "conda-meta")):
            self._env(path, "conda", "holds conda-meta/ (a conda environment)", depth)
            return "stop"
        if not in_ckpt and self._step_entry(name, True, path):
            return "step"
        try:
            names = set(os.listdir(path)[:64])
        except OSError:
            names = set()
        if len(names & set(CACHE_MARKERS)) >= 2:
            self._add(
                "caches",
                path,
                "holds a compile cache's directories ({})".format(
                    ", ".join(sorted(names & set(CACHE_MARKERS)))
                ),
                kind="compile",
            )
            return "stop"
        return "descend"

    def _env(self, path: str, kind: str, why: str, depth: int) -> None:
        for rel in ("bin/python", "bin/python3", "Scripts/python.exe"):
            python = os.path.join(path, rel)
            if os.path.exists(python):
                self._add("envs", path, why, rank=(depth, path), kind=kind, python=python)
                return
        self._add(
            "envs", path, why + ", but no bin/python in it", rank=(depth + 10, path), kind=kind
        )

    # -- the value ----------------------------------------------------------------------

    def _value(self) -> LayoutValue:
        value: dict[str, Any] = {"root": self.root}
        for kind, found in self.out.items():
            ordered = sorted(found, key=lambda c: self.rank[id(c)])
            value[kind] = ordered[:MAX_LISTED]
            if len(ordered) > MAX_LISTED:
                value[kind].append(
                    {"path": "", "why": f"{len(ordered) - MAX_LISTED} more not listed"}
                )
        value["entries"] = self.entries
        value["truncated"] = self.truncated
        return value  # type: ignore[return-value]


def collect(params: dict[str, Any], ctx: Context) -> LayoutValue:
    root = params.get("workspace") or params.get("root")
    if not root:
        raise ProbeFailure("bad_params", "layout needs a workspace")
    return discover(
        str(root),
        max_depth=int(params.get("max_depth", MAX_DEPTH)),
        max_entries=int(params.get("max_entries", MAX_ENTRIES)),
        deadline=ctx.deadline,
    )


VALUE = LayoutValue
