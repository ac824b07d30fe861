"""Facts and the append-only fact ledger.

A ``Fact`` is one observation made on a target. Its id is content-addressed: the same
observation (probe, target, argv, exit code, output digests, parsed value, error) always
gets the same id, so a replay of a recorded session reproduces the ids its claims cite.
When and how long it took are kept but not hashed, for the same reason.

Ids are the shortest unique prefix of the content digest, at least four hex digits
(``F-3a9c``), as git abbreviates commits: short enough to read in a sentence, and
lengthened only when two different facts in one ledger would share a prefix.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator

from tools.errors import LedgerError, LedgerUnreadable
from tools.localfile import read_regular
from tools.text import model_from_json, model_json, writable_json

_MIN_ID = 4


# One step of a path into a fact's value: a dict key, a list index, or a selector.
PathPart = str | int


class Fact(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = ""
    digest: str = ""
    probe: str
    target: str
    argv: tuple[str, ...] = ()
    rc: int | None = None
    stdout_digest: str = ""
    stderr_digest: str = ""
    value: JsonValue = None
    error: str | None = None
    collected_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    duration: float = 0.0

    @field_validator("target", "argv", "value", "error", mode="before")
    @classmethod
    def _writable(cls, given: Any) -> Any:
        """A lone surrogate (a ``\\ud800`` escape in a log line, a file name that is not
        UTF-8) escaped where it stands: one fact must not make the ledger unwritable."""
        return writable_json(given)

    @property
    def ok(self) -> bool:
        return self.error is None

    def content_digest(self) -> str:
        content = self.model_dump(mode="json", exclude={"id", "digest", "collected_at", "duration"})
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


class Ledger:
    """The facts of one session. Facts are only ever appended, never edited; with a path,
    each is written to disk (JSON lines, flushed) before ``append`` returns."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._facts: dict[str, Fact] = {}
        self._by_digest: dict[str, Fact] = {}
        self._by_prefix: dict[str, list[str]] = {}
        # lexists: a dangling link or a link loop is there too, and refused as no ledger.
        if path is not None and os.path.lexists(path):
            self._load(path)

    def append(self, fact: Fact) -> Fact:
        """Store ``fact`` and return it with its id; an identical fact is stored once."""
        full = fact.content_digest()
        if full in self._by_digest:
            return self._by_digest[full]
        stored = fact.model_copy(update={"digest": full, "id": self._short_id(full)})
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write(model_json(stored) + "\n")
            except OSError as exc:
                raise LedgerError(f"{self.path}: cannot append fact: {exc.strerror}") from exc
        self._index(stored)
        return stored

    def get(self, fact_id: str) -> Fact:
        try:
            return self._facts[fact_id]
        except KeyError:
            raise LedgerError(f"no fact {fact_id!r} in this ledger") from None

    def __contains__(self, fact_id: object) -> bool:
        return fact_id in self._facts

    def __iter__(self) -> Iterator[Fact]:
        return iter(self._facts.values())

    def __len__(self) -> int:
        return len(self._facts)

    def _short_id(self, full: str) -> str:
        length = _MIN_ID
        rivals = self._by_prefix.get(full[:_MIN_ID], [])
        while any(d.startswith(full[:length]) for d in rivals if d != full):
            length += 1
        return f"F-{full[:length]}"

    def _index(self, fact: Fact) -> None:
        self._facts[fact.id] = fact
        self._by_digest[fact.digest] = fact
        self._by_prefix.setdefault(fact.digest[:_MIN_ID], []).append(fact.digest)

    def _load(self, path: Path) -> None:
        try:
            lines = read_regular(path).decode("utf-8").split("\n")
            if lines[-1] == "":
                lines.pop()  # the newline that ends the last fact
        except OSError as exc:
            raise LedgerUnreadable(f"{path}: cannot read ledger: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise LedgerUnreadable(f"{path}: ledger is not UTF-8 text (byte {exc.start})") from None
        for number, line in enumerate(lines, start=1):
            try:
                fact = model_from_json(Fact, line)
            except ValidationError as exc:
                reason = exc.errors()[0]["msg"] if exc.errors() else "invalid"
                raise LedgerUnreadable(f"{path}:{number}: not a fact ({reason})") from None
            except (ValueError, RecursionError) as exc:
                raise LedgerUnreadable(f"{path}:{number}: not a fact ({exc})") from None
            if fact.content_digest() != fact.digest or not fact.digest.startswith(fact.id[2:]):
                raise LedgerUnreadable(
                    f"{path}:{number}: fact {fact.id} does not match its content"
                )
            self._index(fact)


def latest(ledger: Ledger, ids: Sequence[str], probe: str) -> Fact | None:
    """The newest fact of ``probe`` among ``ids`` (in the order they were gathered).

    The one rule for "the current fact of a probe", used by rules, the diff, the symptom
    layer, health and every renderer. A failed newest fact is returned, not skipped for an
    older success: after a re-gather, an old observation is not evidence of what holds now,
    and a caller that reads values must treat a failed fact as "not observed" (``observed``).
    """
    found = None
    for fact_id in ids:
        fact = ledger.get(fact_id)
        if fact.probe == probe:
            found = fact
    return found


def observed(fact: Fact | None) -> Fact | None:
    """``fact`` when it holds an observation, None when it is absent or failed."""
    return fact if fact is not None and fact.ok else None


def as_dict(value: object) -> dict[str, Any]:
    """A part of a fact's value read as a mapping: the dict itself, else empty. Probe
    values are JSON a target produced, so any part may have another shape than the probe
    meant; a reader that needs a mapping asks here and finds nothing rather than failing."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    """A part of a fact's value read as a list: the list itself, else empty (as
    ``as_dict`` reads a mapping)."""
    return value if isinstance(value, list) else []
