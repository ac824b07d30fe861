"""The host-contention rule: over the live probe's window the host's cores were nearly all
busy, more threads were ready to run than there are cores, and processes other than the
trainer used at least a quarter of the cores; the busiest of them are named. A cause of
slowness, so a fault only beside a slowdown. Live facts are built in memory as the live
probe writes them; the rule's claims are checked on them."""

from __future__ import annotations

from typing import Any

import pytest

from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, verify
from agent.rules.base import Evidence
from agent.rules.host_contention import HostContention


def said(h: Hypothesis) -> list[tuple[str, str]]:
    return [(v.outcome, v.sentence) for v in h.verdicts]


def other(pid: int, name: str, share: float) -> dict[str, Any]:
    return {"pid": pid, "name": name, "cpu_share": share}


def host(
    busy: float = 0.97,
    runnable: float = 6.0,
    others_share: float = 2.0,
    others: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "cpus": 4,
        "cores_busy": busy,
        "runnable_median": runnable,
        "others_cpu_share": others_share,
        "others": others if others is not None else [other(900, "stress", 1.5)],
    }


def checked(value: dict[str, Any]) -> tuple[Fact, list[Hypothesis]]:
    ledger = Ledger()
    live = ledger.append(Fact(probe="live", target="local", value=value))
    found = HostContention().propose(Evidence(ledger, [live.id]))
    return live, [verify(h, ledger) for h in found]


TRAINER = [{"pid": 4242, "threads": []}]


def test_a_saturated_host_with_a_queue_and_a_busy_neighbour_is_verified() -> None:
    """Cores 97% busy, a median of 6 threads ready for 4 cores, other processes using 2 of
    them (0.5 of the host) and ``stress`` named with its 1.5 cores: verified, no fault on
    its own, and moving the neighbour is predicted to bring the speed back."""
    live, [h] = checked({"processes": TRAINER, "host": host()})
    at = f"[{live.id}]"
    assert h.status == "verified"
    assert said(h) == [
        ("holds", f"share of the host's cores busy = 0.97 {at} ≥ 0.9"),
        (
            "holds",
            f"threads running or ready to run (median of the samples) = 6 {at} > "
            f"the host's cores = 4 {at}",
        ),
        (
            "holds",
            f"cores other processes used = 2 {at} is 0.50× the host's cores = 4 {at} (≥ 0.25×)",
        ),
        ("holds", f"cores pid 900 (stress) used = 1.5 {at} (present)"),
    ]
    assert h.fault_alone is False
    assert h.weight == 1
    assert [(p.expect, p.probe) for p in h.predictions] == [
        (
            "with the processes named stopped or moved (or the trainer given cores of its "
            "own), the speed comes back",
            "live",
        )
    ]


@pytest.mark.parametrize(
    ("kw", "index", "sentence"),
    [
        ({"busy": 0.6}, 0, "share of the host's cores busy = 0.6 {at} < 0.9"),
        (
            {"runnable": 4.0},
            1,
            "threads running or ready to run (median of the samples) = 4 {at} ≤ "
            "the host's cores = 4 {at}",
        ),
        (
            {"others_share": 0.4},
            2,
            "cores other processes used = 0.4 {at} is 0.10× the host's cores = 4 {at} (< 0.25×)",
        ),
    ],
    ids=["cores-not-saturated", "no-queue-for-the-cores", "neighbours-use-little"],
)
def test_each_sign_of_contention_missing_refutes_it(
    kw: dict[str, Any], index: int, sentence: str
) -> None:
    """Cores under 90% busy, no more threads ready than cores, or neighbours using under a
    quarter of the cores: that claim fails, stating what the window showed."""
    live, [h] = checked({"processes": TRAINER, "host": host(**kw)})
    assert h.status == "refuted"
    assert said(h)[index] == ("fails", sentence.format(at=f"[{live.id}]"))


def test_at_most_three_neighbours_are_named_busiest_first() -> None:
    """Five other processes listed busiest first: the first three are named, no more."""
    others = [other(900 + k, f"p{k}", 1.0 - k / 10) for k in range(5)]
    _, [h] = checked({"processes": TRAINER, "host": host(others=others)})
    named = [s.split(" used")[0] for _, s in said(h)[3:]]
    assert named == ["cores pid 900 (p0)", "cores pid 901 (p1)", "cores pid 902 (p2)"]


def test_a_neighbour_in_another_container_is_busy_cores_without_a_name() -> None:
    """No other process visible (another container's), yet the cores are saturated and
    queued for: the three host claims alone, with no process named."""
    _, [h] = checked({"processes": TRAINER, "host": host(others=[])})
    assert len(h.verdicts) == 3


def test_a_host_without_load_figures_leaves_it_open() -> None:
    """A live fact without the host's figures cannot show contention or its absence: the
    claims are unverifiable, not failed."""
    live, [h] = checked({"processes": TRAINER})
    assert h.status == "unverifiable"
    assert said(h)[0] == (
        "unverifiable",
        f"{live.id} (live) has no share of the host's cores busy",
    )


def test_without_a_live_trainer_nothing_is_proposed() -> None:
    """No trainer process found live, or no live fact read: there is no trainer to be
    contended with, and nothing is proposed."""
    assert checked({"processes": [], "host": host()})[1] == []
    ledger = Ledger()
    failed = ledger.append(Fact(probe="live", target="local", error="timeout: killed"))
    assert HostContention().propose(Evidence(ledger, [failed.id])) == []


def test_a_neighbour_whose_share_rounds_to_nothing_is_not_named() -> None:
    """``stress`` used 2 of the 4 cores; ``sshd`` used one clock tick over a 30 s window,
    a share that rounds to 0.0 (0.01 / 30 = 0.0003). A neighbour with no share to show
    is no evidence of contention, for or against: it is not named, so contention is
    verified on the three host claims with ``stress`` alone named."""
    others = [other(900, "stress", 2.0), other(901, "sshd", 0.0)]
    live, [h] = checked({"processes": TRAINER, "host": host(others=others)})
    assert h.status == "verified"
    assert said(h)[3:] == [("holds", f"cores pid 900 (stress) used = 2 [{live.id}] (present)")]
