"""Throughput comparisons for a train log of any groups: one drafter series (the reference
trainer's), three drafter devices (the incident's), ranks without roles, no groups at
all. Train-log facts are made by the real parser from real files; the silent-eager rule
reads a stdout fact the real parser made from dynamo's recompile-limit warning."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from agent.analysis.baseline import diff
from agent.analysis.diff_keys import RECORDED_THROUGHPUT, comparables, drafter_group
from agent.analysis.throughput import PRIMARY_KEYS, primary_entry, subject
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import verify
from agent.rules.base import Evidence
from agent.rules.eager_fallback import SilentEagerFallback
from tests.lib import torch_error_texts as texts
from tools.parsers import stdoutlog, trainlog

GOOD, SLOW = 12800.0, 4300.0
STEPS, SLOW_FROM = 200, 150


def records(series: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per series and step; drafters slow down from ``SLOW_FROM`` on."""
    out = []
    for step in range(1, STEPS + 1):
        for extra in series:
            drafter = extra.get("role", "drafter") == "drafter"
            tok = SLOW if drafter and step >= SLOW_FROM else GOOD
            out.append({"step": step, "time": 1.7e9 + step, "loss": 2.0, "tok/s": tok, **extra})
    return out


def trainlog_fact(tmp_path: Path, ledger: Ledger, recs: list[dict[str, Any]]) -> Fact:
    p = tmp_path / "log.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    with io.FileIO(str(p), "r") as f:
        value = trainlog.summarize_log(f)
    return ledger.append(Fact(probe="trainlog", target="local", value=value))


def compared(ledger: Ledger, *facts: Fact) -> dict[str, Any]:
    ids = [f.id for f in facts]
    return {d.key: d for d in diff(comparables(ledger, ids), ledger, ids, None)}


INCIDENT = [{"role": "target", "device": f"cuda:{i}"} for i in range(5)] + [
    {"role": "drafter", "device": f"cuda:{i}"} for i in range(5, 8)
]


def test_three_drafter_devices_are_compared_as_one_and_each(tmp_path: Path) -> None:
    """The incident's log: three drafter series. The subject is their sum, with the early
    window as the baseline; each drafter is compared too; target series are not."""
    ledger = Ledger()
    fact = trainlog_fact(tmp_path, ledger, records(INCIDENT))
    found = subject(fact)
    assert found is not None and found.key == "throughput.drafter"
    assert len(found.members) == 3
    assert drafter_group(fact) is None  # no single drafter series
    entries = compared(ledger, fact)
    speed = entries["throughput.drafter"]
    assert speed.current_value == pytest.approx(3 * SLOW)
    assert speed.baseline_value == pytest.approx(3 * GOOD)
    assert "sum of the recent medians of 3 series" in speed.label
    per_device = sorted(k for k in entries if k.startswith("throughput:"))
    assert per_device == [f"throughput:role=drafter,device=cuda:{i}" for i in range(5, 8)]
    assert all(entries[k].current_value == pytest.approx(SLOW) for k in per_device)


def test_a_log_of_drafters_only(tmp_path: Path) -> None:
    """Three drafter devices and nothing else (every series is a drafter): the drafter
    aggregate is still the subject."""
    ledger = Ledger()
    fact = trainlog_fact(tmp_path, ledger, records([d for d in INCIDENT if d["role"] == "drafter"]))
    speed = compared(ledger, fact)["throughput.drafter"]
    assert speed.current_value == pytest.approx(3 * SLOW)
    assert speed.current.path == ("aggregates", "role=drafter", "recent_median")


def test_eager_fallback_on_three_drafters_with_the_recompile_limit(tmp_path: Path) -> None:
    """With dynamo's recompile-limit warning in the console log, in the current and the
    older wording, silent eager fallback is verified on the three-drafter log."""
    for limit in (texts.RECOMPILE_LIMIT, texts.RECOMPILE_LIMIT_OLD):
        ledger = Ledger()
        log = trainlog_fact(tmp_path, ledger, records(INCIDENT))
        console = tmp_path / "console.log"
        console.write_text("\n".join(["step 1", *texts.recompile_warning(limit), "step 2"]) + "\n")
        with io.FileIO(str(console), "r") as f:
            out = ledger.append(Fact(probe="stdoutlog", target="local", value=stdoutlog.scan(f)))
        ckpt = ledger.append(Fact(probe="checkpoints", target="local", value={"steps": []}))
        ids = [log.id, out.id, ckpt.id]
        evidence = Evidence(ledger, ids, diff(comparables(ledger, ids), ledger, ids, None))
        [hyp] = SilentEagerFallback().propose(evidence)
        checked = verify(hyp, ledger)
        assert checked.status == "verified", [v.sentence for v in checked.verdicts]


def test_a_log_without_roles_or_groups(tmp_path: Path) -> None:
    """No role, device or rank field: one series, compared on the median of its stated
    values over a stated number of recent records; nothing is called "drafter"."""
    ledger = Ledger()
    recs = [{k: v for k, v in r.items() if k != "role"} for r in records([{}])]
    fact = trainlog_fact(tmp_path, ledger, recs)
    entries = compared(ledger, fact)
    speed = primary_entry(list(entries.values()))
    assert speed is not None and speed.key == "throughput"
    value: Any = fact.value
    recent: dict[str, Any] = value["speed"]["recent"]
    # No snapshot: the baseline is the log's early windows, and the entry says so.
    assert speed.label == (
        "tokens/s (the early windows' median → tok/s, median of the last"
        f" {recent['records']} records)"
    )
    assert recent["records"] < value["records"]
    assert speed.current_value == pytest.approx(SLOW)
    assert speed.baseline_value == pytest.approx(GOOD)
    assert "drafter" not in " ".join(d.label for d in entries.values())


def test_ranks_without_roles(tmp_path: Path) -> None:
    """Ranks and no roles: the aggregate over all ranks, and each rank by its label."""
    ledger = Ledger()
    recs = [
        {k: v for k, v in r.items() if k != "role"}
        for r in records([{"rank": r} for r in range(3)])
    ]
    fact = trainlog_fact(tmp_path, ledger, recs)
    entries = compared(ledger, fact)
    assert entries["throughput"].current_value == pytest.approx(3 * SLOW)
    assert sorted(k for k in entries if k.startswith("throughput:")) == [
        "throughput:rank=0",
        "throughput:rank=1",
        "throughput:rank=2",
    ]
    ranks: Any = fact.value
    recent = ranks["groups"]["rank=1"]["throughput"]["recent_records"]
    assert (
        entries["throughput:rank=1"].label
        == f"rank=1 tokens/s (the early windows' median → median of the last {recent} records)"
    )


def test_one_drafter_series_keeps_the_checkpoint_baseline(tmp_path: Path) -> None:
    """The reference trainer's case: one drafter series, and the checkpoint recorded a
    throughput: that is the derived baseline, as before; without it, the early window."""
    ledger = Ledger()
    series = [{"role": "target", "device": "cuda:0"}, {"role": "drafter", "device": "cuda:1"}]
    fact = trainlog_fact(tmp_path, ledger, records(series))
    recorded: Any = 12000.0
    for key in reversed(RECORDED_THROUGHPUT):
        recorded = {key: recorded} if isinstance(key, str) else [recorded]
    ckpt = ledger.append(Fact(probe="checkpoints", target="local", value=recorded))
    speed = compared(ledger, fact, ckpt)["throughput.drafter"]
    assert speed.baseline.fact == ckpt.id and speed.baseline_value == 12000.0
    drafter: Any = fact.value
    n = drafter["groups"]["role=drafter,device=cuda:1"]["throughput"]["recent_records"]
    assert speed.label == (
        f"drafter tokens/s (what the newest checkpoint recorded → median of the last {n} records)"
    )
    assert drafter_group(fact) == "role=drafter,device=cuda:1"
    alone = compared(ledger, fact)["throughput.drafter"]
    assert alone.baseline.fact == fact.id and alone.baseline_value == pytest.approx(GOOD)


def test_a_log_without_throughput_is_not_compared(tmp_path: Path) -> None:
    """No throughput field and nothing to derive one from: no comparison, not a zero."""
    ledger = Ledger()
    recs = [{"step": i, "loss": 2.0} for i in range(1, 50)]
    fact = trainlog_fact(tmp_path, ledger, recs)
    assert subject(fact) is None
    assert not set(compared(ledger, fact)) & set(PRIMARY_KEYS)
