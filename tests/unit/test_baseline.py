"""agent.analysis.baseline: the known good state a run is compared with (a named snapshot
of facts, kept as one JSON file, or what the current facts recorded of it) and the
diff, entry by entry, of each quantity both sides hold."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent.analysis.baseline import (
    BaselineStore,
    Comparable,
    DiffEntry,
    Snapshot,
    _storable,
    diff,
    import_snapshot,
)
from agent.model.claims import Ref
from agent.model.facts import Fact, Ledger
from tools.errors import ConfigError, LedgerUnreadable
from tools.pseudonym import host_names
from tools.text import model_json

TORCH = Comparable(
    "torch.version",
    "torch version",
    "pyenv",
    ("torch", "version"),
    derived=("checkpoints", ("recorded", "torch")),
)


def pyenv(ledger: Ledger, version: str) -> Fact:
    return ledger.append(Fact(probe="pyenv", target="local", value={"torch": {"version": version}}))


@pytest.mark.parametrize(
    "name",
    ["good", "a.b_c-1", "0", "x" * 64],
    ids=["word", "punctuation", "digit", "longest"],
)
def test_a_good_name_is_a_json_file_under_the_root(tmp_path: Path, name: str) -> None:
    """A name of letters, digits, '.', '_' and '-' (starting with a letter or digit, at
    most 64 long) is kept as ``<root>/<name>.json``."""
    assert BaselineStore(tmp_path).path(name) == tmp_path / f"{name}.json"


@pytest.mark.parametrize(
    "name",
    ["", ".hidden", "-x", "a/b", "../up", "x" * 65, "a b", "ok\n"],
    ids=["empty", "dot-first", "dash-first", "slash", "parent", "too-long", "space", "newline"],
)
def test_a_bad_name_is_refused_saying_what_a_name_may_hold(tmp_path: Path, name: str) -> None:
    """Anything else could leave the store's folder or hide there: refused, quoting the
    name and what a name may be made of."""
    expected = f"bad baseline name {name!r}: use letters, digits, '.', '_' or '-' (≤ 64)"
    with pytest.raises(ConfigError, match=re.escape(expected)):
        BaselineStore(tmp_path).path(name)


def test_a_saved_snapshot_loads_with_the_same_facts_and_ids(tmp_path: Path) -> None:
    """Saved and loaded again, a snapshot holds the same facts under the same ids, its
    name and target; the file is in place and nothing half-written is left beside it."""
    ledger = Ledger()
    facts = [pyenv(ledger, "2.9.1"), pyenv(ledger, "2.11.0")]
    store = BaselineStore(tmp_path / "baselines")
    path = store.save("good", "local", facts)
    assert path == tmp_path / "baselines" / "good.json"
    assert sorted(p.name for p in path.parent.iterdir()) == ["good.json"]
    loaded = store.load("good")
    assert (loaded.name, loaded.target) == ("good", "local")
    assert loaded.facts == facts
    assert store.names() == ["good"]


def test_a_saved_snapshot_names_its_host_by_pseudonym(tmp_path: Path) -> None:
    """A target's host is written as this installation's pseudonym for it, never as the
    host's own name."""
    store = BaselineStore(tmp_path)
    store.save("remote", "ssh://alice@gpu-box-7:2222", [])
    target = store.load("remote").target
    assert target == host_names().uri("ssh://alice@gpu-box-7:2222")
    assert re.fullmatch(r"ssh://alice@host-[0-9a-f]{12}:2222", target), target


def test_loading_an_unknown_name_lists_the_known_ones(tmp_path: Path) -> None:
    """A name with no file says so, and names the snapshots there are (sorted), or
    "none"."""
    store = BaselineStore(tmp_path)
    with pytest.raises(ConfigError, match=re.escape("no baseline named 'good' (known: none)")):
        store.load("good")
    store.save("zeta", "local", [])
    store.save("alpha", "local", [])
    with pytest.raises(
        ConfigError, match=re.escape("no baseline named 'good' (known: alpha, zeta)")
    ):
        store.load("good")
    assert store.names() == ["alpha", "zeta"]


def test_a_file_that_is_no_snapshot_is_refused_with_its_path(tmp_path: Path) -> None:
    """Text that is not a snapshot's JSON is an unreadable baseline, said with its path."""
    (tmp_path / "broken.json").write_text('{"name": "broken"')
    with pytest.raises(
        ConfigError, match=re.escape(f"{tmp_path / 'broken.json'}: unreadable baseline: ")
    ):
        BaselineStore(tmp_path).load("broken")


def test_a_fact_edited_in_the_file_is_refused(tmp_path: Path) -> None:
    """A fact whose content no longer matches its digest (edited after it was saved) makes
    the whole snapshot unreadable, naming the file and the fact."""
    ledger = Ledger()
    fact = pyenv(ledger, "2.9.1")
    edited = fact.model_copy(update={"value": {"torch": {"version": "2.11.0"}}})
    snapshot = Snapshot(name="good", target="local", created_at=datetime.now(UTC), facts=[edited])
    path = tmp_path / "good.json"
    path.write_text(model_json(snapshot))
    expected = f"{path}: baseline fact {fact.id} does not match its content"
    with pytest.raises(LedgerUnreadable, match=re.escape(expected)):
        BaselineStore(tmp_path).load("good")


def test_importing_a_snapshot_keeps_its_ids_and_cleans_each_fact() -> None:
    """The snapshot's facts enter the session's ledger in order under the ids they had;
    given a sanitizer, each fact is recorded as it returns it."""
    facts = [pyenv(Ledger(), "2.9.1"), pyenv(Ledger(), "2.10.0")]
    snapshot = Snapshot(name="good", target="local", created_at=datetime.now(UTC), facts=facts)
    ledger = Ledger()
    assert import_snapshot(snapshot, ledger) == [f.id for f in facts]

    def blank(fact: Fact) -> Fact:
        return fact.model_copy(update={"target": "[redacted]"})

    cleaned = Ledger()
    ids = import_snapshot(snapshot, cleaned, blank)
    assert [cleaned.get(i).target for i in ids] == ["[redacted]", "[redacted]"]


def test_a_snapshot_diff_cites_both_facts() -> None:
    """With a snapshot, the baseline value is read at the same path in the snapshot's fact
    of the same probe; the entry cites both facts, each labelled for its side."""
    ledger = Ledger()
    then, now = pyenv(ledger, "2.9.1"), pyenv(ledger, "2.11.0")
    (entry,) = diff([TORCH], ledger, [now.id], [then.id])
    assert entry == DiffEntry(
        key="torch.version",
        label="torch version",
        baseline=Ref(fact=then.id, path=("torch", "version"), label="torch version (baseline)"),
        current=Ref(fact=now.id, path=("torch", "version"), label="torch version (now)"),
        baseline_value="2.9.1",
        current_value="2.11.0",
    )
    assert entry.differs


def test_without_a_snapshot_the_baseline_is_what_was_recorded() -> None:
    """Without a snapshot, the baseline is read where the quantity's derived location
    points, in the current facts (what the checkpoint recorded)."""
    ledger = Ledger()
    now = pyenv(ledger, "2.11.0")
    ckpt = ledger.append(
        Fact(probe="checkpoints", target="local", value={"recorded": {"torch": "2.11.0"}})
    )
    (entry,) = diff([TORCH], ledger, [now.id, ckpt.id], None)
    assert entry.baseline == Ref(
        fact=ckpt.id, path=("recorded", "torch"), label="torch version (baseline)"
    )
    assert (entry.baseline_value, entry.current_value, entry.differs) == ("2.11.0", "2.11.0", False)


@pytest.mark.parametrize(
    ("label", "entry_label", "baseline_label"),
    [
        (
            "tokens/s (median of the last 40 records)",
            "tokens/s (the early windows' median → median of the last 40 records)",
            "tokens/s (the early windows' median)",
        ),
        (
            "tokens/s",
            "tokens/s (the early windows' median → now)",
            "tokens/s (the early windows' median)",
        ),
    ],
    ids=["with-how", "bare"],
)
def test_a_derived_baseline_of_another_figure_is_named_beside_the_current_one(
    label: str, entry_label: str, baseline_label: str
) -> None:
    """Where the derived baseline is another figure than the current one (the early
    windows' median against the recent records'), the entry's label names both, and the
    baseline's reference names what it is."""
    ledger = Ledger()
    log = ledger.append(
        Fact(probe="trainlog", target="local", value={"recent": 400.0, "early": 1200.0})
    )
    item = Comparable(
        "throughput",
        label,
        "trainlog",
        ("recent",),
        derived=("trainlog", ("early",)),
        derived_is="the early windows' median",
    )
    (entry,) = diff([item], ledger, [log.id], None)
    assert (entry.label, entry.baseline.label, entry.current.label) == (
        entry_label,
        baseline_label,
        f"{label} (now)",
    )
    assert (entry.baseline_value, entry.current_value) == (1200.0, 400.0)


def test_a_quantity_either_side_lacks_is_left_out() -> None:
    """No entry is guessed: not without a current fact of the probe, a value at the path,
    a failed current fact, a derived location (or a snapshot), or a baseline value; and a
    snapshot that lacks the probe is not filled in from what was recorded."""
    ledger = Ledger()
    now = pyenv(ledger, "2.11.0")
    bare = ledger.append(Fact(probe="pyenv", target="local", value={"python": {}}))
    failed = ledger.append(Fact(probe="pyenv", target="local", error="no interpreter"))
    ckpt = ledger.append(Fact(probe="checkpoints", target="local", value={"recorded": {}}))
    full = ledger.append(
        Fact(probe="checkpoints", target="local", value={"recorded": {"torch": "2.9.1"}})
    )
    underived = Comparable("torch.version", "torch version", "pyenv", ("torch", "version"))
    assert diff([TORCH], ledger, [], None) == []
    assert diff([TORCH], ledger, [bare.id, full.id], None) == []
    assert diff([TORCH], ledger, [failed.id, full.id], None) == []
    assert diff([underived], ledger, [now.id, full.id], None) == []
    assert diff([TORCH], ledger, [now.id], None) == []
    assert diff([TORCH], ledger, [now.id, ckpt.id], None) == []
    assert diff([TORCH], ledger, [now.id, full.id], [ckpt.id]) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (2**64 - 1, 2**64 - 1),
        (-(2**63), -(2**63)),
        (2**64, "18446744073709551616"),
        (-(2**63) - 1, "-9223372036854775809"),
        (True, True),
        (1.5e300, 1.5e300),
        ([1, 2**70], [1, "1180591620717411303424"]),
        ({"a": {"b": 2**70}}, {"a": {"b": "1180591620717411303424"}}),
        (10**5000, "<an integer of 16610 bits>"),
    ],
    ids=[
        "largest-unsigned",
        "smallest-signed",
        "past-64-bits",
        "below-64-bits",
        "bool",
        "float",
        "in-a-list",
        "in-a-dict",
        "past-the-digit-limit",
    ],
)
def test_integers_past_64_bits_are_stored_as_their_text(value: object, expected: object) -> None:
    """A diff value keeps every integer msgpack can write (signed or unsigned 64 bits)
    and writes any other as its exact decimal text, wherever it stands; one past Python's
    digit limit for text is named by its size in bits."""
    assert _storable(value) == expected
