"""agent.graph.playbook_adapter: a playbook offered by the graph as a fix, planned and
applied as a guarded transaction on the trainer's site, whose restarted run must reach
the baseline throughput the cited diff holds, measured on the series the diagnosis
judged.

The transaction itself (journal, restart, verification) is playbooks.base's and stands
in here as ``RecordedTransaction``: what the adapter hands it is what is specified."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from agent.analysis.baseline import DiffEntry
from agent.graph import playbook_adapter
from agent.graph.playbook_adapter import PlaybookAdapter, adapt
from agent.model.claims import Ref
from agent.model.facts import Fact, Ledger
from agent.rules.base import Evidence
from playbooks import FixOutcome, FixPlan, LockWarmup, ProcessIsolation, TrainerSite
from tools.transport import LocalTransport

SITE = TrainerSite(
    workspace="/ws",
    launch_file="/ws/run.sh",
    pid_file="/ws/.pid",
    train_log="/ws/log.jsonl",
    stdout_log="/ws/out.log",
    interpreter="/v/bin/python",
)
PLAN = FixPlan(playbook="lock-warmup", hypothesis="fx_trace_race", steps=["add --compile-lock"])
DONE = FixOutcome(playbook="lock-warmup", status="applied")


class RecordedTransaction:
    """Keeps what it was made with; plans ``PLAN`` and applies to ``DONE``."""

    made: ClassVar[list[RecordedTransaction]] = []

    def __init__(self, playbook: object, site: TrainerSite, remote: Any, **kw: Any) -> None:
        self.playbook, self.site, self.remote, self.kw = playbook, site, remote, kw
        self.applied: list[FixPlan] = []
        RecordedTransaction.made.append(self)

    def plan(self) -> FixPlan:
        return PLAN

    def apply(self, plan: FixPlan) -> FixOutcome:
        self.applied.append(plan)
        return DONE


@pytest.fixture(autouse=True)
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    RecordedTransaction.made = []
    monkeypatch.setattr(playbook_adapter, "Transaction", RecordedTransaction)
    yield


def speed_entry(baseline: object) -> DiffEntry:
    """The diff's entry of the judged throughput, its baseline ``baseline``."""
    return DiffEntry(
        key="throughput.drafter",
        label="drafter tokens/s",
        baseline=Ref(fact="F-aaaa", path=("early",)),
        current=Ref(fact="F-bbbb", path=("recent",)),
        baseline_value=baseline,
        current_value=4300.0,
    )


def drafter_evidence(diff: list[DiffEntry]) -> Evidence:
    """A train log of one drafter series, and ``diff``."""
    ledger = Ledger()
    group = {"throughput": {"recent_median": 4300.0}, "records": 40}
    value = {"groups": {"role=drafter": group}}
    fact = ledger.append(Fact(probe="trainlog", target="local", value=value))
    return Evidence(ledger, [fact.id], diff)


def test_the_adapter_is_named_and_offered_as_its_playbook() -> None:
    """The fix carries its playbook's name and the families it answers."""
    adapter = PlaybookAdapter(LockWarmup(), SITE, LocalTransport())
    assert (adapter.name, adapter.requires) == (LockWarmup.name, LockWarmup.requires)


def test_a_plan_is_the_transactions_on_the_site_against_the_cited_baseline() -> None:
    """Planning makes a transaction of the playbook on the site, through the site's
    interpreter, required to reach the throughput's baseline from the diff (12,800) on
    the judged series ("drafter "), measured where the diagnosis read it, at the ratio
    and time limit given."""
    playbook = LockWarmup()
    adapter = PlaybookAdapter(playbook, SITE, LocalTransport(), min_ratio=0.75, run_timeout=60)
    found = drafter_evidence([speed_entry(12800)])
    assert adapter.plan(found) == PLAN
    (made,) = RecordedTransaction.made
    assert (made.playbook, made.site, made.remote.interpreter) == (playbook, SITE, "/v/bin/python")
    measure = made.kw.pop("measure")
    assert made.kw == {
        "series": "drafter ",
        "baseline_tok_s": 12800.0,
        "min_ratio": 0.75,
        "run_timeout": 60,
    }
    summary = {"groups": {"role=drafter": {"records": 9, "throughput": {"recent_median": 12500}}}}
    assert measure(summary) == (12500.0, 9)


@pytest.mark.parametrize(
    "diff",
    [[], [speed_entry("18446744073709551616")], [speed_entry(None)]],
    ids=["no-throughput-entry", "baseline-as-text", "baseline-null"],
)
def test_without_a_numeric_baseline_none_is_required(diff: list[DiffEntry]) -> None:
    """No throughput in the diff, or a baseline that is no number (an integer too large
    to store, kept as text; a null), gives the transaction no baseline to reach."""
    PlaybookAdapter(LockWarmup(), SITE, LocalTransport()).plan(drafter_evidence(diff))
    (made,) = RecordedTransaction.made
    assert made.kw["baseline_tok_s"] is None


def test_a_site_built_from_the_facts_is_built_again_for_each_plan_and_apply() -> None:
    """Given a builder rather than a site, the adapter builds the site from the evidence
    each time it plans or applies, and applies the approved plan."""
    seen: list[Evidence] = []

    def build(evidence: Evidence) -> TrainerSite:
        seen.append(evidence)
        return SITE

    adapter = PlaybookAdapter(LockWarmup(), build, LocalTransport())
    first, second = drafter_evidence([]), drafter_evidence([])
    assert adapter.plan(first) == PLAN
    assert adapter.apply(PLAN, second) == DONE
    assert seen == [first, second]
    assert [t.site for t in RecordedTransaction.made] == [SITE, SITE]
    assert RecordedTransaction.made[1].applied == [PLAN]


def test_adapt_offers_each_playbook_by_name_with_the_same_limits() -> None:
    """Each playbook becomes an adapter under its own name, on one site and transport,
    every one with the limits given."""
    transport = LocalTransport()
    fixes = adapt([LockWarmup(), ProcessIsolation()], SITE, transport, min_ratio=0.5)
    assert sorted(fixes) == sorted([LockWarmup.name, ProcessIsolation.name])
    assert all(
        (f.name, f.site, f.transport, f.min_ratio, f.run_timeout)
        == (n, SITE, transport, 0.5, 600.0)
        for n, f in fixes.items()
    )
