"""The compile-cache rule on in-memory facts shaped as the probes write them: a missing or
empty cache is a fault only where the baseline saw it warm or the trainer's configuration
names it (profile, the trainer's environment, a launch file) and the trainer has run;
never for a path nothing configured. Each way it is verified, refuted, unverifiable or
not proposed."""

from __future__ import annotations

from typing import Any

import pytest

from agent.analysis.baseline import diff
from agent.analysis.diff_keys import comparables
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, verify
from agent.rules.base import Evidence
from agent.rules.compile_cache import CompileCacheCold

P = "/w/cache"


def cache(
    name: str = "inductor",
    path: str = P,
    source: str = "default",
    files: int | None = None,
    oldest: float | None = None,
) -> dict[str, Any]:
    """One cache as the caches probe reports it; ``files=None``: the path does not exist."""
    if files is None:
        return {"cache": name, "path": path, "source": source, "exists": False, "files": 0}
    return {
        "cache": name,
        "path": path,
        "source": source,
        "exists": True,
        "kind": "dir",
        "files": files,
        "oldest_mtime": oldest if files else None,
    }


def caches(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"caches": list(entries), "declared": [], "declared_problems": []}


def checkpoints(latest: int | None) -> dict[str, Any]:
    return {"path": "/w/ckpt", "steps": [], "latest_step": latest, "step_numbers": []}


Facts = list[tuple[str, dict[str, Any] | None, str | None]]


def propose(now: Facts, before: Facts | None = None) -> list[Hypothesis]:
    ledger = Ledger()

    def add(facts: Facts) -> list[str]:
        return [
            ledger.append(Fact(probe=probe, target="local", value=value, error=error)).id
            for probe, value, error in facts
        ]

    baseline_ids = add(before) if before is not None else None
    ids = add(now)
    entries = diff(comparables(ledger, ids), ledger, ids, baseline_ids)
    found = CompileCacheCold().propose(Evidence(ledger=ledger, fact_ids=ids, diff=entries))
    return [verify(h, ledger) for h in found]


RAN = ("checkpoints", checkpoints(40), None)

CASES: list[tuple[str, Facts, Facts | None, str | None, str]] = [
    (
        "the baseline saw it warm; now it is gone",
        [("caches", caches(cache(files=None)), None), RAN],
        [("caches", caches(cache(files=50, oldest=100.0)), None), RAN],
        "verified",
        f"inductor compile cache {P}: exists",
    ),
    (
        "the baseline saw it empty too",
        [("caches", caches(cache(files=None)), None), RAN],
        [("caches", caches(cache(files=0)), None), RAN],
        "refuted",
        "inductor cache files (baseline) = 0",
    ),
    (
        "the profile names it; the trainer ran; it is missing",
        [("caches", caches(cache("extra", source="param")), None), RAN],
        None,
        "verified",
        f"extra compile cache {P} named by the profile",
    ),
    (
        "the trainer's environment names it; it is empty",
        [("caches", caches(cache(source="process:4242", files=0)), None), RAN],
        None,
        "verified",
        "named by the trainer's environment",
    ),
    (
        "a launch file names it",
        [("caches", caches(cache("triton", source="launch:/w/launch.sh")), None), RAN],
        None,
        "verified",
        "named by a launch file",
    ),
    (
        "configured, but the only checkpoint is step 0",
        [("caches", caches(cache(source="param")), None), ("checkpoints", checkpoints(0), None)],
        None,
        "refuted",
        "latest checkpoint step the trainer wrote = 0",
    ),
    (
        "configured, checkpoints unreadable",
        [("caches", caches(cache(source="param")), None), ("checkpoints", None, "not_found: x")],
        None,
        "unverifiable",
        "failed observation",
    ),
    (
        "configured, checkpoints carry epochs only",
        [("caches", caches(cache(source="param")), None), ("checkpoints", checkpoints(None), None)],
        None,
        "unverifiable",
        "observed no latest checkpoint step the trainer wrote (null)",
    ),
    (
        "the oldest entry is newer than the baseline's",
        [("caches", caches(cache(files=30, oldest=200.0)), None), RAN],
        [("caches", caches(cache(files=50, oldest=100.0)), None), RAN],
        "verified",
        "inductor cache oldest entry",
    ),
    (
        "the oldest entry is the baseline's",
        [("caches", caches(cache(files=60, oldest=100.0)), None), RAN],
        [("caches", caches(cache(files=50, oldest=100.0)), None), RAN],
        "refuted",
        "inductor cache oldest entry",
    ),
]


@pytest.mark.parametrize(
    ("now", "before", "status", "cited"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_compile_cache_rule(now: Facts, before: Facts | None, status: str, cited: str) -> None:
    """A missing, empty or rebuilt compile cache is verified, refuted or left unverifiable by what
    the baseline saw, what configures it and which steps the trainer ran; the verdicts cite the
    deciding observation."""
    found = propose(now, before)
    assert [h.status for h in found] == [status]
    assert cited in " ".join(v.sentence for v in found[0].verdicts)


NOT_PROPOSED: list[tuple[str, Facts, Facts | None]] = [
    (
        "a default location nothing configured, no baseline",
        [("caches", caches(cache(files=None), cache("triton", files=None)), None), RAN],
        None,
    ),
    (
        "the bundle's own environment names it, not the trainer's",
        [("caches", caches(cache(source="env:TORCHINDUCTOR_CACHE_DIR")), None), RAN],
        None,
    ),
    (
        "a configured cache that is warm",
        [("caches", caches(cache("extra", source="param", files=9, oldest=1.0)), None), RAN],
        None,
    ),
    (
        "the cache moved since the baseline: the old place says nothing about the new",
        [("caches", caches(cache(path="/new", files=None)), None), RAN],
        [("caches", caches(cache(path="/old", files=50, oldest=100.0)), None), RAN],
    ),
    (
        "no caches fact",
        [("caches", None, "timeout: killed"), RAN],
        None,
    ),
]


@pytest.mark.parametrize(
    ("now", "before"), [c[1:] for c in NOT_PROPOSED], ids=[c[0] for c in NOT_PROPOSED]
)
def test_compile_cache_rule_not_proposed(now: Facts, before: Facts | None) -> None:
    """No hypothesis where nothing the trainer configured names the cache, it is warm, it moved
    since the baseline, or there is no caches fact."""
    assert propose(now, before) == []
