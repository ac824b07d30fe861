"""Facts are frozen and content-addressed; the ledger only appends and survives a restart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from agent.model.facts import Fact, Ledger, latest, observed
from tools.errors import LedgerError


def fact(**kw: object) -> Fact:
    base: dict[str, object] = {
        "probe": "torch.version",
        "target": "local",
        "value": {"v": "2.13.0"},
    }
    base.update(kw)
    return Fact(**base)


def test_facts_are_frozen() -> None:
    """A fact cannot be edited once made: what was observed stays as observed."""
    with pytest.raises(ValidationError):
        fact().probe = "other"  # type: ignore[misc]


def test_same_observation_same_id_whenever_it_was_made() -> None:
    """Time and duration are not content: a replay reproduces the ids claims cite."""
    a = Ledger().append(fact(duration=1.0))
    b = Ledger().append(fact(duration=9.0))
    assert a.id == b.id
    assert a.id.startswith("F-") and len(a.id) == 6


def test_different_observation_different_id() -> None:
    """Two observations that differ in value get different ids, so a claim cites exactly one."""
    ledger = Ledger()
    assert ledger.append(fact()).id != ledger.append(fact(value={"v": "2.11.0"})).id


def test_identical_fact_is_stored_once() -> None:
    """The same observation appended twice is one entry: the ledger does not fill with repeats."""
    ledger = Ledger()
    ledger.append(fact())
    ledger.append(fact())
    assert len(ledger) == 1


def test_ids_grow_only_on_prefix_collision() -> None:
    """Like git's short hashes: at least 4 hex digits, longer only where two facts share them."""
    ledger = Ledger()
    ids = [ledger.append(fact(value=n)).id for n in range(1500)]
    assert len(set(ids)) == 1500
    assert min(len(i) for i in ids) == 6
    assert any(len(i) > 6 for i in ids)  # 1,500 facts in 65,536 prefixes: ~17 collisions expected
    for short in ids:
        assert ledger.get(short).digest.startswith(short[2:])


def test_ledger_persists_and_reloads(tmp_path: Path) -> None:
    """A ledger reopened from its file holds the same facts, in order, under the same ids."""
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path)
    stored = [ledger.append(fact(value=n)) for n in range(5)]
    again = Ledger(path)
    assert [f.id for f in again] == [f.id for f in stored]
    assert again.get(stored[3].id) == stored[3]


def test_edited_ledger_line_is_rejected(tmp_path: Path) -> None:
    """A fact edited on disk no longer matches its id: loading names the line."""
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path)
    ledger.append(fact(value=1))
    ledger.append(fact(value=2))
    rows = path.read_text().splitlines()
    edited = json.loads(rows[1])
    edited["value"] = 3
    rows[1] = json.dumps(edited)
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(LedgerError, match=r"ledger.jsonl:2: fact F-\w+ does not match its content"):
        Ledger(path)


def test_garbage_ledger_line_is_rejected(tmp_path: Path) -> None:
    """A line of the ledger file that is not a fact stops the load, naming the file and line."""
    path = tmp_path / "ledger.jsonl"
    path.write_text('{"probe": 1}\n')
    with pytest.raises(LedgerError, match=r"ledger.jsonl:1: not a fact"):
        Ledger(path)


def test_unknown_fact_id() -> None:
    """Asking for an id the ledger never stored is an error that names the id."""
    with pytest.raises(LedgerError, match="no fact 'F-0000'"):
        Ledger().get("F-0000")


def test_latest_is_the_newest_observation_failed_or_not() -> None:
    """One rule for "the current fact of a probe": a failed re-observation is what holds
    now; an older success is not returned in its place."""
    ledger = Ledger()
    old = ledger.append(fact(probe="trainlog", value={"steps": 1}))
    other = ledger.append(fact(probe="host", value={"now": 1.0}))
    failed = ledger.append(fact(probe="trainlog", value=None, rc=2, error="log truncated"))
    ids = [old.id, other.id, failed.id]
    assert latest(ledger, ids, "trainlog") == failed
    assert observed(latest(ledger, ids, "trainlog")) is None
    assert latest(ledger, ids[:2], "trainlog") == old
    assert observed(latest(ledger, ids[:2], "trainlog")) == old
    assert latest(ledger, ids, "pyenv") is None
    # Order is the order gathered, not the ledger's: only the ids given count.
    assert latest(ledger, [failed.id, old.id], "trainlog") == old
