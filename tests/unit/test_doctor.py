"""agent.graph.doctor: everything the diagnosis graph needs from outside (the ledger, the
gatherer, the rules, the fixes, who approves) passed in as one object, and the one
thing it does itself: gather the facts a family needs that the session lacks."""

from __future__ import annotations

from agent.graph.doctor import Doctor
from agent.model.facts import Fact, Ledger


class Gatherer:
    """Stand-in for the probe sweep: records each call, returns one fact per probe asked."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.calls: list[frozenset[str] | None] = []

    def __call__(self, only: frozenset[str] | None) -> list[Fact]:
        self.calls.append(only)
        return [
            self.ledger.append(Fact(probe=p, target="local", value={"n": 1}))
            for p in sorted(only or ())
        ]


def doctor() -> tuple[Doctor, Gatherer]:
    ledger = Ledger()
    gatherer = Gatherer(ledger)
    return Doctor(ledger=ledger, gather=gatherer, rules=()), gatherer


def test_only_the_probes_no_fact_comes_from_are_gathered() -> None:
    """With a console fact in hand and a family needing the console and the checkpoints,
    only the checkpoints are asked for, and their facts returned."""
    doc, gatherer = doctor()
    console = doc.ledger.append(Fact(probe="stdoutlog", target="local", value={}))
    new = doc.gather_missing([console.id], frozenset({"stdoutlog", "checkpoints"}))
    assert gatherer.calls == [frozenset({"checkpoints"})]
    assert [f.probe for f in new] == ["checkpoints"]


def test_a_failed_fact_counts_as_gathered() -> None:
    """A probe that ran and failed is not run again for each family: its fact is the
    session's answer."""
    doc, gatherer = doctor()
    failed = doc.ledger.append(Fact(probe="checkpoints", target="local", error="denied"))
    assert doc.gather_missing([failed.id], frozenset({"checkpoints"})) == []
    assert gatherer.calls == []


def test_nothing_missing_sweeps_nothing() -> None:
    """When every probe needed already has a fact (or nothing is needed), the gatherer is
    not called at all."""
    doc, gatherer = doctor()
    have = [doc.ledger.append(Fact(probe="pyenv", target="local", value={})).id]
    assert doc.gather_missing(have, frozenset({"pyenv"})) == []
    assert doc.gather_missing(have, frozenset()) == []
    assert gatherer.calls == []


def test_by_default_nothing_is_compared_fixed_or_approved() -> None:
    """A doctor given only its ledger, gatherer and rules compares nothing, offers no fix,
    approves none, proposes with nothing but the rules and redacts nothing; two doctors
    share no fixes table."""
    doc, _ = doctor()
    other, _ = doctor()
    assert list(doc.comparables(doc.ledger, ["F-1234"], 100.0)) == []
    assert (doc.playbooks, doc.approver, doc.proposers) == ({}, "never", ())
    assert (doc.baselines, doc.sanitize) == (None, None)
    assert doc.playbooks is not other.playbooks


def test_a_probe_two_families_need_is_swept_once_per_pass() -> None:
    """Two family nodes of one pass start from the same console fact; the first needs the
    checkpoints, the second the checkpoints and the environment. The checkpoints are swept
    once and the second is handed that same fact, with only the environment swept for
    it; a later pass, with other facts in hand, sweeps what it lacks afresh."""
    doc, gatherer = doctor()
    console = doc.ledger.append(Fact(probe="stdoutlog", target="local", value={}))
    first = doc.gather_missing([console.id], frozenset({"checkpoints"}))
    second = doc.gather_missing([console.id], frozenset({"checkpoints", "pyenv"}))
    assert gatherer.calls == [frozenset({"checkpoints"}), frozenset({"pyenv"})]
    assert [f.probe for f in first] == ["checkpoints"]
    assert [f.probe for f in second] == ["checkpoints", "pyenv"]
    assert second[0] == first[0]
    later = [console.id, second[1].id]
    assert [f.probe for f in doc.gather_missing(later, frozenset({"checkpoints"}))] == [
        "checkpoints"
    ]
    assert len(gatherer.calls) == 3
