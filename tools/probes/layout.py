"""What a workspace holds, found by looking: checkpoint directories, training and console
logs, scripts, configs, launch files, Python environments, saved environment lists and
prompt files, each with the reason it was taken for what it is.

No trainer's layout is assumed. The walk is breadth-first (what lies near the top is
found first), read-only and bounded: ``MAX_DEPTH`` levels, ``MAX_ENTRIES`` entries, a
deadline; it skips version control, caches and installed packages, never follows a
symlinked directory out of the root (nor into a directory it has seen: no loops), and
never opens anything but a regular file (a FIFO would block, a device could be
anything). A file is opened only to peek at its first ``PEEK`` bytes, and only when its
name alone cannot tell a training log from a prompt file. Whatever the walk saw and could
not place is listed in ``unrecognised`` with the reason; what it did not enter, in
``skipped``.

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

from ..parsers.logformats import text_lines
from . import _canonical, _steps
from ._common import (
    Context,
    ProbeFailure,
    TypedDict,
    failure_from_oserror,
    loads_strict,
    open_regular,
    read_capped,
)

NAME = "layout"
TIMEOUT = 60.0

MAX_DEPTH = 4
MAX_ENTRIES = 20000
# Entries of one directory looked at: a folder of 20,000 shards or images must not spend
# the whole walk before its siblings (checkpoints/, the train log) are seen. The rest are
# counted, in ``skipped``.
MAX_DIR_ENTRIES = 2000
PEEK = 64 << 10  # bytes read from a file to tell what it is
MAX_PEEKS = 300
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

STEP_KEYS = ("step", "global_step", "_step", "iter", "iteration", "train/global_step", "steps")
METRIC_HINTS = ("loss", "tok", "throughput", "lr", "learning_rate", "perf/", "train/")
TEXT_KEYS = (
    "prompt",
    "text",
    "messages",
    "conversations",
    "conversation",
    "input",
    "instruction",
    "question",
    "input_ids",
    "token_ids",
    "tokens",
)
DATA_DIRS = ("data", "dataset", "datasets", "prompts")
SCRIPT_DEPTH = 3  # a repository checkout as the workspace holds its package deeper down
TEXT_STEP = re.compile(
    r"(?:^|[\s|,\[{(])(?:'step'|\"step\"|global_step|step|iter(?:ation)?)\s*[=:]?\s*\d+", re.I
)
# The step at the start of a structured line: torchtune's DiskLogger ``Step N | k:v``,
# SpecForge's ``Train - Step N [...]`` (after a logging prefix), ``step=N`` key=value.
STDOUT_NAMES = re.compile(r"(^nohup\.out$)|stdout|(^|[._-])(out|console)([._-]|$)", re.I)
LAUNCH_EXTENSIONS = (".sh", ".bash", ".slurm", ".sbatch", ".job")
LAUNCH_NAMES = ("launch", "run", "train", "start", "submit", "job")
CONFIG_EXTENSIONS = (".yaml", ".yml", ".toml", ".cfg", ".ini")
CONFIG_JSON_HINTS = ("config", "args", "hparams", "params", "settings")


class Candidate(TypedDict, total=False):
    path: str
    why: str
    kind: str  # train_logs: jsonl | csv | trainer_state | text; dataset: its format
    entries: int  # checkpoint_dirs: how many step-named entries it holds
    examples: list[str]  # checkpoint_dirs: a few of their names
    python: str  # envs: the interpreter in it
    mtime: float


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


def _is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


class _Walk:
    def __init__(
        self, root: str, real: str, max_depth: int, max_entries: int, deadline: float | None
    ) -> None:
        self.root = root.rstrip("/") or "/"
        self.real = real
        self.max_depth = max_depth
        self.max_entries = max_entries
        self.deadline = deadline
        self.seen_dirs: set[tuple[int, int]] = set()
        self.entries = 0
        self.peeks = 0
        self.truncated = False
        self.out: dict[str, list[Candidate]] = {
            k: []
            for k in (
                "checkpoint_dirs",
                "train_logs",
                "stdout_logs",
                "scripts",
                "configs",
                "launch_files",
                "envs",
                "env_files",
                "dataset",
                "caches",
                "unrecognised",
                "skipped",
            )
        }
        self.step_entries: set[str] = set()  # paths of step-named checkpoints
        # Sort keys kept beside the candidates, dropped before the value is returned.
        self.rank: dict[int, tuple[Any, ...]] = {}

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

    # -- files ------------------------------------------------------------------------

    def _file(self, path: str, name: str, depth: int, in_ckpt: bool, st: os.stat_result) -> None:
        lower = name.lower()
        parent = os.path.basename(os.path.dirname(path)).lower()
        placed = False
        if lower.endswith(".wandb"):
            self._add("skipped", path, "a wandb run blob: not read")
            return
        if lower == "trainer_state.json":
            # Hugging Face's Trainer: the output dir's own copy is the whole run, each
            # checkpoint's the run up to its step; the newest checkpoint's comes next.
            read = _steps.read_step(os.path.basename(os.path.dirname(path)), True)
            step = read["step"] if read and read["step"] is not None else None
            why = "Hugging Face Trainer state (log_history)" + (
                f", as of checkpoint step {step}" if step is not None else ", the run's own"
            )
            self._add(
                "train_logs",
                path,
                why,
                rank=(0 if step is None else 1, -(step or 0), path),
                kind="trainer_state",
                mtime=st.st_mtime,
            )
            return
        if in_ckpt:
            return  # a checkpoint's own files are the checkpoints probe's to read
        if _canonical.is_env_file(name):
            self._add("env_files", path, "named like a saved environment list", rank=(depth, path))
            return
        if lower.endswith(".py"):
            if depth <= SCRIPT_DEPTH:
                self._add(
                    "scripts",
                    path,
                    "a Python file {} level{} down".format(depth, "" if depth == 1 else "s"),
                    rank=(depth, "train" not in lower, path),
                )
            return
        if lower.endswith(LAUNCH_EXTENSIONS):
            self._add(
                "launch_files",
                path,
                "a shell/batch script",
                rank=(not lower.startswith(LAUNCH_NAMES), depth, path),
            )
            return
        if lower.endswith(CONFIG_EXTENSIONS):
            self._add("configs", path, "a configuration file", rank=(depth, path))
            return
        if lower.endswith((".jsonl", ".ndjson")):
            placed = self._json_lines(path, name, parent, depth, st)
        elif lower.endswith(".csv"):
            placed = self._csv(path, parent, depth, st)
        elif lower.endswith(".json"):
            if any(h in lower for h in CONFIG_JSON_HINTS):
                self._add(
                    "configs", path, "a JSON file named like a configuration", rank=(depth, path)
                )
                placed = True
            elif parent in DATA_DIRS:
                self._add(
                    "dataset", path, f"a JSON file in {parent}/", rank=(depth, path), kind="json"
                )
                placed = True
        elif lower.endswith((".parquet", ".arrow")):
            self._add(
                "dataset",
                path,
                "a columnar data file",
                rank=(depth, path),
                kind=lower.rsplit(".", 1)[1],
            )
            placed = True
        if lower.endswith((".log", ".txt", ".out", ".err")) or lower == "nohup.out":
            placed = self._text(path, name, parent, depth, st) or placed
        if not placed and depth <= 2:
            self._add("unrecognised", path, "no known role", rank=(depth, path))

    def _peek(self, path: str) -> bytes | None:
        if self.peeks >= MAX_PEEKS or not _is_regular(path):
            return None
        self.peeks += 1
        try:
            return read_capped(path, PEEK)[0]
        except OSError:  # FileRefused too: what is no regular file is not peeked at
            return None

    def _peek_tail(self, path: str) -> bytes | None:
        """The last ``PEEK`` bytes' whole lines (the first, cut, dropped)."""
        try:
            with open_regular(path) as f:
                size = os.fstat(f.fileno()).st_size
                if size <= PEEK:
                    return None  # the head held the whole file
                f.seek(size - PEEK)
                data = f.read(PEEK) or b""
        except OSError:
            return None
        return data.split(b"\n", 1)[1] if b"\n" in data else None

    def _json_lines(
        self, path: str, name: str, parent: str, depth: int, st: os.stat_result
    ) -> bool:
        record = _first_object(self._peek(path), cut=st.st_size > PEEK)
        if record is None and st.st_size > PEEK:
            # A first record past the peek (a config dump, a 64 KB prompt), or a head
            # of NULs a crash left: the file's last lines are records too.
            record = _first_object(self._peek_tail(path), cut=False)
        keys = {str(k).lower() for k in record} if isinstance(record, dict) else set()
        step = sorted(keys & set(STEP_KEYS))
        text = sorted(keys & set(TEXT_KEYS))
        if step or (not text and any(h in k for k in keys for h in METRIC_HINTS)):
            why = "JSON lines with " + (f"a step field ({step[0]})" if step else "metric fields")
            self._add(
                "train_logs",
                path,
                why,
                rank=(2, "log" not in name.lower(), depth, path),
                kind="jsonl",
                mtime=st.st_mtime,
            )
            return True
        if text or parent in DATA_DIRS:
            why = (
                f"JSON lines with a text field ({text[0]})" if text else f"JSON lines in {parent}/"
            )
            self._add("dataset", path, why, rank=(not text, depth, path), kind="jsonl")
            return True
        return False

    def _csv(self, path: str, parent: str, depth: int, st: os.stat_result) -> bool:
        data = self._peek(path) or b""
        header = (text_lines(data) or [b""])[0].decode("utf-8").lower()
        columns = [c.strip().strip('"') for c in header.split(",")]
        step = [c for c in columns if c in STEP_KEYS] or [c for c in columns if c == "epoch"]
        if step:
            self._add(
                "train_logs",
                path,
                f"CSV with a step column ({step[0]})",
                rank=(3, depth, path),
                kind="csv",
                mtime=st.st_mtime,
            )
            return True
        if parent in DATA_DIRS:
            self._add("dataset", path, f"a CSV file in {parent}/", rank=(depth, path), kind="csv")
            return True
        return False

    def _text(self, path: str, name: str, parent: str, depth: int, st: os.stat_result) -> bool:
        lower = name.lower()
        placed = False
        stdout_named = bool(STDOUT_NAMES.search(lower))
        if stdout_named or lower.endswith((".log", ".out", ".err")):
            why = "named like a console log" if stdout_named else "a .log/.out file"
            self._add(
                "stdout_logs",
                path,
                why,
                rank=(
                    0 if stdout_named else 1,
                    "train" not in lower,
                    -st.st_mtime,
                    path,
                ),
                mtime=st.st_mtime,
            )
            placed = True
        data = self._peek(path) or b""
        text = data.decode("utf-8", "replace")
        hits = sum(1 for line in text.splitlines()[:400] if TEXT_STEP.search(line))
        if hits:
            self._add(
                "train_logs",
                path,
                f"text lines with a step ({hits} in its first {len(data)} bytes)",
                rank=(4, -hits, depth, path),
                kind="text",
                mtime=st.st_mtime,
            )
            placed = True
        elif parent in DATA_DIRS and lower.endswith(".txt"):
            self._add("dataset", path, f"a text file in {parent}/", rank=(depth, path), kind="txt")
            placed = True
        return placed

    # -- the value ----------------------------------------------------------------------

    def _add(
        self, role: str, path: str, why: str, rank: tuple[Any, ...] | None = None, **extra: Any
    ) -> None:
        entry: dict[str, Any] = {"path": path, "why": why, **extra}
        self.out[role].append(entry)  # type: ignore[arg-type]
        self.rank[id(entry)] = rank if rank is not None else (len(self.out[role]),)

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


def _first_object(data: bytes | None, cut: bool) -> dict[str, Any] | None:
    """The first of ``data``'s lines that is a JSON object (its last line left out where
    the peek ``cut`` it), past any number of blank, binary or non-JSON lines."""
    lines = (data or b"").split(b"\n")
    for line in lines[:-1] if cut else lines:
        if not line.strip().startswith(b"{"):
            continue
        try:
            record = loads_strict(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict):
            return record
    return None


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
