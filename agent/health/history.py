"""Every health run, kept, so that "since when?" has an answer.

Under ``$XDG_STATE_HOME/dflash-doctor/health/``:

- ``runs/<run>.json``   the whole run, as ``--format json`` prints it;
- ``history.jsonl``     one line per target per run (status, tokens/s, last step age,
  regressed families): what the "since" columns and the throughput trends are read from.

A target's history is its lines with the same key (``HistoryKey``): the label, the URI,
the workspace and the profile file. ``local`` checked in two workspaces is two targets,
and so is one profile name in two doctor.toml files: neither's trend or streak is the
other's.

"Since" is the first run of the current unbroken streak. A run that could not check a
target neither extends nor breaks that target's healthy or regressed streak (nothing was
learnt about it), unless the target still cannot be checked: then the streak is of
could-not-check runs. A history line that cannot be read is skipped with a warning:
yesterday's damaged line must not stop tonight's check.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.health.model import HealthRun, Status, TargetResult, TrendPoint
from tools.localfile import read_state, refuse_special
from tools.log import get_logger
from tools.pseudonym import HostNames
from tools.text import model_from_json, model_json

log = get_logger(__name__)


class HistoryKey(NamedTuple):
    """Whose history a line is. ``recorded`` is False for a line written before lines
    named their workspace: which workspace it was is unknown, so it is a key of its own
    (read, listed by ``entries``, and never matched by a run now, which always knows its
    workspace, even when it is none) rather than mixed into some workspace's trend."""

    target: str
    uri: str
    workspace: str | None
    profile: str | None
    recorded: bool = True

    @classmethod
    def of(cls, result: TargetResult) -> HistoryKey:
        return cls(result.target, result.uri, result.workspace, result.profile)


class HistoryEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    run: str
    at: datetime
    target: str
    uri: str
    workspace: str | None = None
    profile: str | None = None
    baseline: str | None = None
    """The snapshot's name; None when derived."""
    status: Status
    tokens_per_s: float | None = None
    last_step_age_s: float | None = None
    regressions: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, run: str, result: TargetResult) -> HistoryEntry:
        tps = result.metrics.get("tokens_per_s")
        age = result.metrics.get("last_step_age_s")
        return cls(
            run=run,
            at=result.started_at,
            target=result.target,
            uri=result.uri,
            workspace=result.workspace,
            profile=result.profile,
            baseline=result.baseline,
            status=result.status,
            tokens_per_s=tps.value if tps else None,
            last_step_age_s=age.value if age else None,
            regressions=result.regressions,
        )

    @property
    def key(self) -> HistoryKey:
        # A line that names no workspace (the field is absent, not null) predates keys.
        recorded = "workspace" in self.model_fields_set
        return HistoryKey(self.target, self.uri, self.workspace, self.profile, recorded)

    def point(self) -> TrendPoint:
        return TrendPoint(
            run=self.run,
            at=self.at,
            status=self.status,
            tokens_per_s=self.tokens_per_s,
            regressions=self.regressions,
        )


class HealthHistory:
    """``names``: read a line written before hosts were pseudonyms as its pseudonym's
    (its trend goes on), and write the history again without the name at the next run."""

    def __init__(self, root: Path, names: HostNames | None = None) -> None:
        self.root = root
        self.names = names

    @property
    def history_path(self) -> Path:
        return self.root / "history.jsonl"

    def run_path(self, run: str) -> Path:
        return self.root / "runs" / f"{run}.json"

    def entries(self, target: str | None = None) -> list[HistoryEntry]:
        """Past entries, oldest first (for ``target`` only, when given)."""
        if not os.path.lexists(self.history_path):
            return []
        text = read_state(self.history_path, "the health history")
        out = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                entry = model_from_json(HistoryEntry, line)
            except ValidationError as exc:
                log.warning(
                    "health_history_line_skipped",
                    path=str(self.history_path),
                    line=number,
                    error=exc.errors()[0]["msg"] if exc.errors() else "invalid",
                )
                continue
            entry = self._named(entry)
            if target is None or entry.target == target:
                out.append(entry)
        return sorted(out, key=lambda e: e.at)

    def annotate_all(
        self, results: list[TargetResult], run: str, trend: int = 30
    ) -> list[TargetResult]:
        """``annotate`` for a whole run, reading the history once."""
        by_key: dict[HistoryKey, list[HistoryEntry]] = {}
        for entry in self.entries():
            by_key.setdefault(entry.key, []).append(entry)
        return [
            self.annotate(r, run, trend, past=by_key.get(HistoryKey.of(r), [])) for r in results
        ]

    def annotate(
        self,
        result: TargetResult,
        run: str,
        trend: int = 30,
        *,
        past: list[HistoryEntry] | None = None,
    ) -> TargetResult:
        """``result`` with ``since``, ``since_runs``, each failed check's ``since`` and
        the throughput trend, from the runs before this one (``past``, oldest first:
        read from the history when not given, the lines of ``result``'s key)."""
        if past is None:
            key = HistoryKey.of(result)
            past = [e for e in self.entries(result.target) if e.key == key]
        since, count = _streak(past, result.status, result.started_at)
        checks = []
        for check in result.checks:
            if check.status == "failed":
                first, _ = _family_streak(past, check.name, result.started_at)
                check = check.model_copy(update={"since": first})
            checks.append(check)
        recent = past[-(trend - 1) :] if trend > 1 else []
        points = [e.point() for e in [*recent, HistoryEntry.of(run, result)]]
        return result.model_copy(
            update={"since": since, "since_runs": count, "checks": checks, "trend": points}
        )

    def record(self, run: HealthRun) -> Path:
        """Keep ``run``: its document under ``runs/`` and its lines in the history."""
        path = self.run_path(run.run)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(model_json(run, indent=1), encoding="utf-8")
        tmp.replace(path)
        lines = "".join(model_json(HistoryEntry.of(run.run, r)) + "\n" for r in run.targets)
        refuse_special(self.history_path, "the health history")
        with self._locked():
            renamed = self._renamed_history()
            if renamed is not None:
                tmp = self.history_path.with_suffix(".tmp")
                tmp.write_text(renamed + lines, encoding="utf-8")
                tmp.replace(self.history_path)
                return path
            with self.history_path.open("a", encoding="utf-8") as fh:
                fh.write(lines)
                fh.flush()
                os.fsync(fh.fileno())
        return path

    def _named(self, entry: HistoryEntry) -> HistoryEntry:
        if self.names is None:
            return entry
        target, uri = self.names.uri(entry.target), self.names.uri(entry.uri)
        if (target, uri) == (entry.target, entry.uri):
            return entry
        return entry.model_copy(update={"target": target, "uri": uri})

    def _renamed_history(self) -> str | None:
        """The history with each line that names a host in clear written with its
        pseudonym (a line that cannot be read is kept as it is); None when none does."""
        if self.names is None or not os.path.lexists(self.history_path):
            return None
        out, changed = [], False
        for line in read_state(self.history_path, "the health history").splitlines():
            try:
                entry = model_from_json(HistoryEntry, line)
            except ValidationError:
                out.append(line)
                continue
            named = self._named(entry)
            if named is not entry:
                # Only the fields the line had: one without a workspace stays one.
                line, changed = model_json(named, include=set(named.model_fields_set)), True
            out.append(line)
        return "".join(f"{line}\n" for line in out) if changed else None

    @contextmanager
    def _locked(self) -> Iterator[None]:
        # Two runs can overlap (a slow night and the next timer): keep lines whole.
        self.root.mkdir(parents=True, exist_ok=True)
        refuse_special(self.root / "history.lock", "the health history's lock")
        with (self.root / "history.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _streak(past: list[HistoryEntry], status: Status, now: datetime) -> tuple[datetime, int]:
    first, count = now, 1
    for entry in reversed(past):
        if entry.status == status:
            first, count = entry.at, count + 1
        elif entry.status == "could_not_check":
            continue  # unknown: neither extends nor breaks the streak
        else:
            break
    return first, count


def _family_streak(past: list[HistoryEntry], family: str, now: datetime) -> tuple[datetime, int]:
    first, count = now, 1
    for entry in reversed(past):
        if family in entry.regressions:
            first, count = entry.at, count + 1
        elif entry.status == "could_not_check":
            continue
        else:
            break
    return first, count
