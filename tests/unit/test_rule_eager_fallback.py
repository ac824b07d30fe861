"""The silent-eager-fallback rule: the run is slower than its baseline, no FX-trace error
was printed, and something says compiled code is not what runs (dynamo's recompile limit or
eager-fallback messages, uncompiled flex_attention, a trainer configured to run a nested FX
trace eagerly, a compile the structured trace records failing at the limit, or live threads
sampled in flex_attention's eager path or compiling). Facts are built in memory as the
probes write them; the rule's claims are checked on them."""

from __future__ import annotations

from typing import Any

import pytest

from agent.analysis.baseline import DiffEntry
from agent.model.claims import Ref
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, verify
from agent.rules.base import Evidence
from agent.rules.eager_fallback import SilentEagerFallback

WHO = "thread 'drafter-1' (tid 31) of pid 4242"


def said(h: Hypothesis) -> list[tuple[str, str]]:
    return [(v.outcome, v.sentence) for v in h.verdicts]


def console(**counts: int) -> dict[str, Any]:
    """A console fact's value with the count of each signature named (FX errors 0)."""
    counts.setdefault("fx_nested_trace", 0)
    return {"signatures": {name: {"count": n} for name, n in counts.items()}}


class Run:
    """One session's facts: the train log's speed now and the baseline's, the console,
    and whatever else a case adds."""

    def __init__(self, now: float = 45.0, before: float = 100.0) -> None:
        self.ledger = Ledger()
        self.ids: list[str] = []
        self.speed = self.add("trainlog", {"throughput": {"recent_median": now}})
        self.base = self.add("checkpoints", {"recorded": {"throughput": before}})
        self.diff = [
            DiffEntry(
                key="throughput",
                label="tokens/s",
                current=Ref(
                    fact=self.speed.id,
                    path=("throughput", "recent_median"),
                    label="tokens/s (recent median)",
                ),
                baseline=Ref(
                    fact=self.base.id, path=("recorded", "throughput"), label="tokens/s (baseline)"
                ),
                current_value=now,
                baseline_value=before,
            )
        ]

    def add(self, probe: str, value: Any = None, error: str | None = None) -> Fact:
        fact = self.ledger.append(Fact(probe=probe, target="local", value=value, error=error))
        self.ids.append(fact.id)
        return fact

    def checked(self) -> list[Hypothesis]:
        found = SilentEagerFallback().propose(Evidence(self.ledger, self.ids, self.diff))
        return [verify(h, self.ledger) for h in found]


def test_a_slower_run_past_its_recompile_limit_is_verified() -> None:
    """At 45 tokens/s against 100, no FX-trace error, three recompile-limit warnings:
    verified on the speed, the absent error and the warnings, weight 2."""
    run = Run()
    log = run.add("stdoutlog", console(recompile_limit=3))
    [h] = run.checked()
    assert h.status == "verified"
    assert said(h) == [
        (
            "holds",
            f"tokens/s (recent median) = 45 [{run.speed.id}] is 0.45× tokens/s (baseline) = 100 "
            f"[{run.base.id}] (< 0.9×)",
        ),
        ("holds", f"FX-trace error lines = 0 [{log.id}] ≤ 0"),
        ("holds", f"recompile-limit warnings = 3 [{log.id}] ≥ 1"),
    ]
    assert h.weight == 2


def test_with_no_sign_of_eager_code_the_usual_one_is_claimed_and_fails() -> None:
    """A slower run with no eager signal anywhere is still proposed, claiming the
    recompile-limit warning so the report shows it was looked for: refuted on its count."""
    run = Run()
    log = run.add("stdoutlog", console(recompile_limit=0))
    [h] = run.checked()
    assert h.status == "refuted"
    assert said(h)[2] == ("fails", f"recompile-limit warnings = 0 [{log.id}] < 1")


def test_a_run_that_kept_its_speed_is_refuted() -> None:
    """Ninety-five tokens/s against 100 is not slower than the 0.9 bound: refuted on the
    speed, whatever the console says."""
    run = Run(now=95.0)
    run.add("stdoutlog", console(recompile_limit=3))
    [h] = run.checked()
    assert h.status == "refuted"
    assert said(h)[0] == (
        "fails",
        f"tokens/s (recent median) = 95 [{run.speed.id}] is 0.95× tokens/s (baseline) = 100 "
        f"[{run.base.id}] (≥ 0.9×)",
    )


def test_printed_fx_trace_errors_refute_a_silent_fallback() -> None:
    """FX-trace errors in the console are the race's evidence, not a silent fallback: the
    claim that none was printed fails on their count."""
    run = Run()
    log = run.add("stdoutlog", console(recompile_limit=3, fx_nested_trace=2))
    [h] = run.checked()
    assert h.status == "refuted"
    assert said(h)[1] == ("fails", f"FX-trace error lines = 2 [{log.id}] > 0")


def trace(*failed: dict[str, Any]) -> dict[str, Any]:
    return {"traces": [{"rank": 0, "failed": list(failed)}]}


def failed(cid: str, reason: str) -> dict[str, Any]:
    return {"compile_id": cid, "function": "score", "fail_reason": reason}


def live(*threads: dict[str, Any]) -> dict[str, Any]:
    return {"processes": [{"pid": 4242, "threads": list(threads)}]}


def worker(activity: str, share: float, eager: int = 0, tid: int = 31) -> dict[str, Any]:
    name = "drafter-1" if tid == 31 else f"t{tid}"
    activities = {activity: 10} if not eager else {activity: 10, "eager_attention": eager}
    return {
        "name": name,
        "tid": tid,
        "samples": 20,
        "activity": activity,
        "activity_share": share,
        "activities": activities,
    }


SIGNALS: list[tuple[str, dict[str, int], tuple[str, Any] | None, str]] = [
    (
        "eager-fallback-message",
        {"eager_fallback": 1},
        None,
        "eager-fallback messages = 1 [{log}] ≥ 1",
    ),
    (
        "uncompiled-flex-attention",
        {"flex_eager": 4},
        None,
        "uncompiled flex_attention warnings = 4 [{log}] ≥ 1",
    ),
    (
        "trainer-recorded-eager-nested-trace",
        {},
        ("checkpoints", {"recorded": {"config": {"nested_fx_trace": "eager"}}}),
        "nested FX trace handling the trainer recorded = 'eager' [{other}] equals 'eager'",
    ),
    (
        "structured-trace-compile-failed-at-the-limit",
        {},
        ("torch_trace", trace(failed("0/8", "Dynamo recompile limit exceeded"))),
        "why compile 0/8 of 'score' failed, by rank 0's structured trace (torch) = 'Dynamo "
        "recompile limit exceeded' [{other}] matches "
        "/(?i)recompile limit exceeded|cache.size.limit/",
    ),
    (
        "structured-trace-older-cache-size-wording",
        {},
        ("torch_trace", trace(failed("0/8", "cache_size_limit reached"))),
        "why compile 0/8 of 'score' failed, by rank 0's structured trace (torch) = "
        "'cache_size_limit reached' [{other}] matches "
        "/(?i)recompile limit exceeded|cache.size.limit/",
    ),
    (
        "live-thread-in-eager-flex-attention",
        {},
        ("live", live(worker("compute", 0.5, eager=6))),
        f"samples of {WHO} in flex_attention's eager path = 6 [{{other}}] ≥ 1",
    ),
    (
        "live-thread-compiling-most-of-the-window",
        {},
        ("live", live(worker("compiling", 0.75))),
        f"share of {WHO}'s samples in it = 0.75 [{{other}}] ≥ 0.6",
    ),
]


@pytest.mark.parametrize(
    ("counts", "extra", "sentence"),
    [s[1:] for s in SIGNALS],
    ids=[s[0] for s in SIGNALS],
)
def test_each_sign_of_eager_code_verifies_the_fallback(
    counts: dict[str, int], extra: tuple[str, Any] | None, sentence: str
) -> None:
    """Any one sign that compiled code is not what runs, on a slower run with no FX-trace
    error, verifies the family; the sign is the last claim, citing its own fact."""
    run = Run()
    log = run.add("stdoutlog", console(**counts))
    other = run.add(*extra) if extra is not None else log
    [h] = run.checked()
    assert h.status == "verified", said(h)
    assert said(h)[-1] == ("holds", sentence.format(log=log.id, other=other.id))


NO_SIGN: list[tuple[str, tuple[str, Any]]] = [
    (
        "trainer-recorded-error-on-nested-trace",
        ("checkpoints", {"recorded": {"config": {"nested_fx_trace": "error"}}}),
    ),
    ("compile-failed-for-another-reason", ("torch_trace", trace(failed("0/3", "graph break")))),
    ("compiling-under-the-share", ("live", live(worker("compiling", 0.5)))),
    ("live-probe-failed", ("live", None)),
]


@pytest.mark.parametrize("extra", [n[1] for n in NO_SIGN], ids=[n[0] for n in NO_SIGN])
def test_what_is_no_sign_of_eager_code(extra: tuple[str, Any]) -> None:
    """A trainer configured to raise on a nested trace, a compile that failed for a
    reason other than the limit, a thread compiling for under 0.6 of its samples, or a
    live probe that failed add no claim: only the usual, failing one is made."""
    run = Run()
    log = run.add("stdoutlog", console(recompile_limit=0))
    probe, value = extra
    run.add(probe, value, None if value is not None else "timeout: killed")
    [h] = run.checked()
    assert h.status == "refuted"
    assert said(h)[2:] == [("fails", f"recompile-limit warnings = 0 [{log.id}] < 1")]


def test_only_the_first_limit_failure_of_each_trace_file_is_cited() -> None:
    """Two compiles of one trace file failed at the limit: the first is cited, once."""
    run = Run()
    run.add("stdoutlog", console())
    tr = run.add(
        "torch_trace",
        trace(
            failed("0/2", "graph break"),
            failed("0/8", "Dynamo recompile limit exceeded"),
            failed("0/9", "Dynamo recompile limit exceeded"),
        ),
    )
    [h] = run.checked()
    assert len(h.verdicts) == 3
    assert said(h)[2][1].startswith("why compile 0/8 of 'score' failed")
    assert h.claims[2].predicate.refs()[0].path == ("traces", 0, "failed", 1, "fail_reason")
    assert h.cites[-1] == tr.id


def test_the_thread_most_in_eager_attention_is_cited_and_compiling_is_not_also_claimed() -> None:
    """In one process, the thread with the most samples in flex_attention's eager path is
    cited (not the first), and a compiling thread beside it adds nothing more."""
    run = Run()
    run.add("stdoutlog", console())
    fact = run.add(
        "live",
        live(
            worker("compute", 0.5, eager=2, tid=40),
            worker("compute", 0.5, eager=9, tid=41),
            worker("compiling", 0.9, tid=42),
        ),
    )
    [h] = run.checked()
    assert said(h)[2:] == [
        (
            "holds",
            "samples of thread 't41' (tid 41) of pid 4242 in flex_attention's eager path = 9 "
            f"[{fact.id}] ≥ 1",
        )
    ]


def test_a_compiling_thread_is_claimed_by_what_it_mostly_did_and_its_share() -> None:
    """A live thread compiling for 0.75 of its samples is cited by two claims: what it
    mostly did, and that share against the 0.6 bound."""
    run = Run()
    run.add("stdoutlog", console())
    fact = run.add("live", live(worker("compiling", 0.75)))
    [h] = run.checked()
    assert said(h)[2:] == [
        ("holds", f"what {WHO} mostly did = 'compiling' [{fact.id}] equals 'compiling'"),
        ("holds", f"share of {WHO}'s samples in it = 0.75 [{fact.id}] ≥ 0.6"),
    ]


def test_without_a_speed_comparison_or_a_console_nothing_is_proposed() -> None:
    """No throughput compared with a baseline, or no readable console: the family cannot
    be stated and is not proposed."""
    run = Run()
    run.add("stdoutlog", console(recompile_limit=3))
    run.diff = []
    assert run.checked() == []
    run = Run()
    run.add("stdoutlog", None, "not_found: console.log")
    assert run.checked() == []
    assert Run().checked() == []
