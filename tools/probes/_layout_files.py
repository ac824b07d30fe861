"""What the layout probe makes of a file: its role (training log, console log, script,
config, launch file, dataset...) told by its name and, where the name cannot tell, by
its first ``PEEK`` bytes (or its last ones); and the candidates kept by role, each with
the rank that orders them best first.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ..parsers.logformats import text_lines
from . import _canonical, _steps
from ._common import TypedDict, is_regular, loads_strict, open_regular, read_capped

PEEK = 64 << 10  # bytes read from a file to tell what it is
MAX_PEEKS = 300
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


class Files:
    """The walk's candidates by role, and how a file becomes one: the walk over the
    directories (``layout._Walk``) hands each regular file to ``_file``."""

    def __init__(self) -> None:
        self.peeks = 0
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
        # Sort keys kept beside the candidates, dropped before the value is returned.
        self.rank: dict[int, tuple[Any, ...]] = {}

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
        if self.peeks >= MAX_PEEKS or not is_regular(path):
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

    def _add(
        self, role: str, path: str, why: str, rank: tuple[Any, ...] | None = None, **extra: Any
    ) -> None:
        entry: dict[str, Any] = {"path": path, "why": why, **extra}
        self.out[role].append(entry)  # type: ignore[arg-type]
        self.rank[id(entry)] = rank if rank is not None else (len(self.out[role]),)
