"""Baselines: the facts of a known good state, and the fact-by-fact diff against now.

Two sources, as the incident needed both:
- a **snapshot** taken while things worked (``dflash-doctor snapshot --name NAME``): the
  facts themselves, stored under the state directory and imported into a session's ledger
  when used, so a diff entry cites baseline facts by the same ids they had then;
- a **derived** baseline, when nobody took one: the last good checkpoint's metadata
  (versions, script md5, dataset size it recorded) and the good window of
  ``train_log.jsonl``. That is the question the incident turned on: "what was different
  when it worked?" A derived entry cites the current checkpoint/log facts it reads.

A diff entry is a pair of references into facts, so it becomes a claim without any prose.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, JsonValue

from agent.model.claims import MISSING, Ref, resolve
from agent.model.facts import Fact, Ledger, latest, observed
from tools.errors import ConfigError, LedgerUnreadable
from tools.localfile import read_state
from tools.text import model_from_json, model_json

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")


class DiffEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    label: str
    baseline: Ref
    current: Ref
    baseline_value: JsonValue
    current_value: JsonValue

    @property
    def differs(self) -> bool:
        return self.baseline_value != self.current_value


@dataclass(frozen=True)
class Comparable:
    """One quantity compared between baseline and now.

    ``probe``/``path`` locate it in a current (or snapshot) fact; ``derived`` locates
    the same quantity in what the last good checkpoint or log recorded, when it does.
    """

    key: str
    label: str
    probe: str
    path: tuple[str | int, ...]
    derived: tuple[str, tuple[str | int, ...]] | None = None
    # What the derived baseline is, where it is not the same figure taken earlier ("the
    # early windows' median" against the recent records'): the entry names both.
    derived_is: str | None = None


class Snapshot(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    target: str
    created_at: datetime
    facts: list[Fact]


class Baselines(Protocol):
    def load(self, name: str) -> Snapshot: ...


class BaselineStore:
    """Named snapshots, one JSON file each, under ``<state>/dflash-doctor/baselines/``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, name: str) -> Path:
        if not _NAME.match(name):
            raise ConfigError(
                f"bad baseline name {name!r}: use letters, digits, '.', '_' or '-' (≤ 64)"
            )
        return self.root / f"{name}.json"

    def save(self, name: str, target: str, facts: Iterable[Fact]) -> Path:
        """Keep ``facts`` as ``name``; ``target``'s host is written as its pseudonym
        (``tools.pseudonym``), as every file that outlives a session names it."""
        from tools.pseudonym import host_names

        path = self.path(name)
        snapshot = Snapshot(
            name=name,
            target=host_names().uri(target),
            created_at=datetime.now(UTC),
            facts=list(facts),
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(model_json(snapshot, indent=1))
        tmp.replace(path)  # atomic: a crash never leaves half a baseline
        return path

    def load(self, name: str) -> Snapshot:
        path = self.path(name)
        if not os.path.lexists(path):
            known = ", ".join(sorted(p.stem for p in self.root.glob("*.json"))) or "none"
            raise ConfigError(f"no baseline named {name!r} (known: {known})")
        try:
            snapshot = model_from_json(Snapshot, read_state(path, "the baseline"))
        except (ValueError, RecursionError) as exc:  # ValidationError, JSONDecodeError
            raise ConfigError(f"{path}: unreadable baseline: {str(exc).splitlines()[0]}") from None
        for fact in snapshot.facts:
            if fact.content_digest() != fact.digest:
                raise LedgerUnreadable(
                    f"{path}: baseline fact {fact.id} does not match its content"
                )
        return snapshot

    def names(self) -> list[str]:
        return sorted(p.stem for p in self.root.glob("*.json"))


def baseline_store() -> BaselineStore:
    """The snapshots of this installation, under its state directory."""
    from tools.statedir import ensure_app_state_dir

    return BaselineStore(ensure_app_state_dir() / "baselines")


def import_snapshot(
    snapshot: Snapshot, ledger: Ledger, sanitize: Callable[[Fact], Fact] | None = None
) -> list[str]:
    """Put the snapshot's facts into the session ledger; returns their ids there.
    ``sanitize`` redacts them as the session redacts everything it records, so the
    ledger and the transcript hold the same facts under the same ids."""
    clean = sanitize or (lambda fact: fact)
    return [ledger.append(clean(fact)).id for fact in snapshot.facts]


def diff(
    table: Sequence[Comparable],
    ledger: Ledger,
    current_ids: Sequence[str],
    baseline_ids: Sequence[str] | None,
) -> list[DiffEntry]:
    """Compare every quantity in ``table`` that both sides have.

    With ``baseline_ids`` (a snapshot), baseline values come from those facts; without,
    from the ``derived`` locations in the current facts (checkpoint metadata, log window).
    A quantity missing on either side is left out, not guessed.
    """
    entries: list[DiffEntry] = []
    for item in table:
        label, then_label = item.label, f"{item.label} (baseline)"
        now = observed(latest(ledger, current_ids, item.probe))
        if now is None:
            continue
        current_value = resolve(now, item.path)
        if current_value is MISSING:
            continue
        if baseline_ids is not None:
            then = observed(latest(ledger, baseline_ids, item.probe))
            then_path = item.path
        elif item.derived is not None:
            then = observed(latest(ledger, current_ids, item.derived[0]))
            then_path = item.derived[1]
            if item.derived_is:
                name, _, how = item.label.partition(" (")
                label = f"{name} ({item.derived_is} → {how.rstrip(')') or 'now'})"
                then_label = f"{name} ({item.derived_is})"
        else:
            continue
        if then is None:
            continue
        baseline_value = resolve(then, then_path)
        if baseline_value is MISSING:
            continue
        entries.append(
            DiffEntry(
                key=item.key,
                label=label,
                baseline=Ref(fact=then.id, path=then_path, label=then_label),
                current=Ref(fact=now.id, path=item.path, label=f"{item.label} (now)"),
                baseline_value=_storable(baseline_value),
                current_value=_storable(current_value),
            )
        )
    return entries


def _storable(value: object) -> object:
    """``value`` with every integer past 64 bits as its exact decimal text. A diff entry
    lives in the graph's state, which the checkpointer writes with msgpack (64-bit
    integers at most), so a 400-digit figure a file recorded would end the session; as
    text it still compares exactly, and no ratio or threshold takes it for a number."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if -(1 << 63) <= value < (1 << 64):
            return value
        try:
            return str(value)
        except ValueError:  # past Python's digit limit for str()
            return f"<an integer of {value.bit_length()} bits>"
    if isinstance(value, list):
        return [_storable(v) for v in value]
    if isinstance(value, dict):
        return {k: _storable(v) for k, v in value.items()}
    return value
