"""From probe results to facts (``agent.graph.gather``): the one place where a sweep's
results enter the ledger. The sweep and the transport are injected fakes here; what is
specified is what becomes a fact, how the bundle is keyed for replay, the workspace that
is not there, and py-spy carried to a target that has none."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

import agent.graph.gather as gather_module
from agent.graph.gather import SweepGatherer, fact_from_probe, missing_workspace
from agent.model.facts import Fact, Ledger
from tools.errors import WorkspaceMissing
from tools.sweep import ProbeResult, SweepResult, SweepSpec
from tools.sweep.results import ProbeError
from tools.transport.base import CommandResult, KeyedStdin, Transport


class Recorder:
    """A transport that answers every command with rc 0 and remembers the stdin it got."""

    name = "local"

    def __init__(self) -> None:
        self.stdins: list[bytes | None] = []
        self.closed = False

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
    ) -> CommandResult:
        self.stdins.append(stdin)
        return CommandResult(tuple(argv), 0, b"", b"", 0.0, self.name)

    def close(self) -> None:
        self.closed = True


def result(probe: str, value: Any = None, error: dict[str, Any] | None = None) -> ProbeResult:
    return ProbeResult.model_validate(
        {
            "probe": probe,
            "target": "local",
            "argv": ("python3", "-B", "-"),
            "rc": 0,
            "ok": error is None,
            "value": value,
            "error": error,
        }
    )


class FakeSweep:
    """Returns the results queued for each call, after sending the bundle once over the
    transport it was handed; remembers how it was called."""

    def __init__(self, *answers: tuple[ProbeResult, ...]) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[SweepSpec, list[str] | None]] = []

    def __call__(
        self, transport: Transport, spec: SweepSpec, *, only: list[str] | None
    ) -> SweepResult:
        self.calls.append((spec, only))
        transport.run(["python3", "-B", "-"], stdin=b"the bundle")
        results = self.answers.pop(0)
        return SweepResult(target="local", argv=(), rc=0, duration=0.0, results=results)


def test_a_probe_result_becomes_a_fact_with_its_command_and_error() -> None:
    """A fact keeps the probe's name, target, command, exit status, digests, value and
    duration; its error is the error's kind and message."""
    probe = ProbeResult(
        probe="gpus",
        target="ssh://h",
        argv=("python3", "-B", "-"),
        rc=3,
        ok=False,
        value={"partial": True},
        error=ProbeError(kind="timeout", message="nvidia-smi took 30 s"),
        duration=1.5,
        stdout_digest="so",
        stderr_digest="se",
    )
    fact = fact_from_probe(probe)
    assert fact == Fact(
        probe="gpus",
        target="ssh://h",
        argv=("python3", "-B", "-"),
        rc=3,
        stdout_digest="so",
        stderr_digest="se",
        value={"partial": True},
        error="timeout: nvidia-smi took 30 s",
        duration=1.5,
        collected_at=fact.collected_at,
    )


def test_every_result_but_a_skipped_one_is_filed_in_the_ledger() -> None:
    """A probe that ran becomes a fact, failed or not; one that had nothing to look at
    (skipped) becomes none, and its reason is kept; the whole result goes to
    ``on_result`` first."""
    answer = (
        result("host", {"cpus": 16}),
        result("gpus", error={"kind": "not_found", "message": "no nvidia-smi"}),
        result("dataset", error={"kind": "skipped", "message": "no dataset named"}),
    )
    seen: list[SweepResult] = []
    ledger = Ledger()
    gatherer = SweepGatherer(
        Recorder(), SweepSpec(), ledger, run_sweep=FakeSweep(answer), on_result=seen.append
    )
    facts = gatherer(None)
    assert [(f.probe, f.ok) for f in facts] == [("host", True), ("gpus", False)]
    assert [f.id for f in ledger] == [f.id for f in facts]
    assert gatherer.skipped == {"dataset": "no dataset named"}
    assert [r.probe for r in seen[0].results] == ["host", "gpus", "dataset"]


def test_the_probes_asked_for_are_passed_sorted_and_none_means_all() -> None:
    """A subset of probes reaches the sweep sorted by name; ``None`` asks for all."""
    sweep = FakeSweep((), ())
    gatherer = SweepGatherer(Recorder(), SweepSpec(), Ledger(), run_sweep=sweep)
    gatherer({"host", "caches", "gpus"})
    gatherer(None)
    assert [only for _, only in sweep.calls] == [["caches", "gpus", "host"], None]


def test_the_bundle_is_keyed_by_its_plan_not_its_bytes() -> None:
    """The bundle reaches the transport keyed by the plan it carries: the same probes give
    the same key, other probes another; the bytes are handed on unchanged."""
    transport = Recorder()
    gatherer = SweepGatherer(transport, SweepSpec(), Ledger(), run_sweep=FakeSweep((), (), ()))
    gatherer({"host"})
    gatherer({"host"})
    gatherer({"gpus"})
    keys = []
    for stdin in transport.stdins:
        assert isinstance(stdin, KeyedStdin) and stdin == b"the bundle"
        keys.append(stdin.replay_key)
    assert keys[0] == keys[1] != keys[2]


def test_the_keyed_transport_leaves_no_stdin_as_none_and_closes_the_inner_one() -> None:
    """A command without stdin is sent without one; closing the keyed transport closes
    the one it wraps, and it keeps that one's name."""
    inner = Recorder()

    def sweep_without_stdin(
        transport: Transport, spec: SweepSpec, *, only: list[str] | None
    ) -> SweepResult:
        assert transport.name == "local"
        transport.run(["true"])
        transport.close()
        return SweepResult(target="local", argv=(), rc=0, duration=0.0, results=())

    SweepGatherer(inner, SweepSpec(), Ledger(), run_sweep=sweep_without_stdin)(None)
    assert inner.stdins == [None] and inner.closed


def layout(kind: str, path: str) -> ProbeResult:
    return result("layout", error={"kind": kind, "message": f"{path}: {kind}", "path": path})


@pytest.mark.parametrize("kind", ["not_found", "not_a_directory"])
def test_a_workspace_missing_on_the_target_stops_with_one_line(kind: str) -> None:
    """When the layout probe says the workspace itself is missing or no directory, the
    sweep's facts are filed and then the gatherer stops, naming the workspace, what the
    probe said and what to give instead."""
    ledger = Ledger()
    spec = SweepSpec(workspace="/w/run")
    answer = (result("host", {"cpus": 1}), layout(kind, "/w/run"))
    gatherer = SweepGatherer(Recorder(), spec, ledger, run_sweep=FakeSweep(answer))
    with pytest.raises(WorkspaceMissing) as caught:
        gatherer(None)
    assert str(caught.value) == (
        f"--workspace /w/run: not a directory on the target (/w/run: {kind}); "
        "give the trainer's own directory"
    )
    assert [f.probe for f in ledger] == ["host", "layout"]


@pytest.mark.parametrize(
    ("probe", "workspace"),
    [
        (layout("not_found", "/w/run/checkpoints"), "/w/run"),
        (layout("permission_denied", "/w/run"), "/w/run"),
        (layout("not_found", "/w/run"), None),
        (result("host", error={"kind": "not_found", "message": "x", "path": "/w/run"}), "/w/run"),
        (result("layout", {"scripts": []}), "/w/run"),
    ],
    ids=["another-path", "another-error", "no-workspace-given", "another-probe", "layout-read"],
)
def test_only_the_workspace_itself_missing_counts_as_missing(
    probe: ProbeResult, workspace: str | None
) -> None:
    """A missing file inside the workspace, another error, or another probe's complaint
    is a fact like any other, not a missing workspace."""
    sweep = SweepResult(target="local", argv=(), rc=0, duration=0.0, results=(probe,))
    assert missing_workspace(sweep, SweepSpec(workspace=workspace)) is None


# -- py-spy carried to the target ----------------------------------------------------


class Carried:
    """A py-spy put on the target; ``remove`` answers what it is told to."""

    def __init__(self, path: str, why_not_removed: str | None = None) -> None:
        self.path = path
        self.why_not_removed = why_not_removed
        self.removed = 0

    def remove(self) -> str | None:
        self.removed += 1
        return self.why_not_removed


LIVE_WANTS = result("live", {"py_spy": None, "processes": [{"pid": 7}]})
LIVE_STACKS = result("live", {"py_spy": "/tmp/x/py-spy", "processes": [{"pid": 7, "threads": []}]})


def carrying(
    monkeypatch: pytest.MonkeyPatch, carried: Carried | None, why: str = ""
) -> list[Transport]:
    """Put a py-spy on this machine and make carrying it give ``carried``."""
    used: list[Transport] = []

    def carry(transport: Transport, binary: Path) -> tuple[Carried | None, str]:
        used.append(transport)
        assert binary == Path("/opt/py-spy")
        return carried, why

    monkeypatch.setattr(gather_module, "local_py_spy", lambda: Path("/opt/py-spy"))
    monkeypatch.setattr(gather_module, "carry_py_spy", carry)
    return used


def test_a_trainer_without_py_spy_is_probed_again_with_ours_then_it_is_removed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ``carry``, a live probe that found the trainer and no py-spy is run again
    with this machine's py-spy carried there (its path in the spec, marked carried);
    both live facts are filed, the later with the stacks, and the copy is removed."""
    carried = Carried("/tmp/x/py-spy")
    transport = Recorder()
    used = carrying(monkeypatch, carried)
    sweep = FakeSweep((result("host", {"cpus": 1}), LIVE_WANTS), (LIVE_STACKS,))
    gatherer = SweepGatherer(transport, SweepSpec(), Ledger(), run_sweep=sweep, carry=True)
    facts = gatherer(None)
    assert [f.probe for f in facts] == ["host", "live", "live"]
    assert facts[-1].value == LIVE_STACKS.value
    (spec, only) = sweep.calls[1]
    assert (spec.py_spy, spec.py_spy_carried, only) == ("/tmp/x/py-spy", True, ["live"])
    assert used == [transport] and carried.removed == 1


def test_a_carried_py_spy_is_removed_even_when_the_second_sweep_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The carried copy is taken away whatever the second sweep did; a copy that could
    not be removed is logged with why."""
    carried = Carried("/tmp/x/py-spy", why_not_removed="rm of /tmp/x exited 1")
    carrying(monkeypatch, carried)
    sweep = FakeSweep((LIVE_WANTS,))  # nothing queued for the second call: it raises
    gatherer = SweepGatherer(Recorder(), SweepSpec(), Ledger(), run_sweep=sweep, carry=True)
    with capture_logs() as logs, pytest.raises(IndexError):
        gatherer(None)
    assert carried.removed == 1
    assert [(e["event"], e["why"]) for e in logs] == [
        ("py_spy_not_removed", "rm of /tmp/x exited 1")
    ]


def test_nothing_is_carried_where_it_cannot_be(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where this machine has no py-spy, or it cannot be put on the target, the first
    live fact stands alone and the reason is logged."""
    carrying(monkeypatch, None, why="the target is Darwin arm64")
    sweep = FakeSweep((LIVE_WANTS,))
    gatherer = SweepGatherer(Recorder(), SweepSpec(), Ledger(), run_sweep=sweep, carry=True)
    with capture_logs() as logs:
        facts = gatherer(None)
    assert [f.probe for f in facts] == ["live"] and len(sweep.calls) == 1
    assert [(e["event"], e["why"]) for e in logs] == [
        ("py_spy_not_carried", "the target is Darwin arm64")
    ]
    monkeypatch.setattr(gather_module, "local_py_spy", lambda: None)
    with capture_logs() as logs:
        SweepGatherer(
            Recorder(), SweepSpec(), Ledger(), run_sweep=FakeSweep((LIVE_WANTS,)), carry=True
        )(None)
    assert [(e["event"], e["why"]) for e in logs] == [
        ("py_spy_not_carried", "no py-spy on this machine")
    ]


@pytest.mark.parametrize(
    ("live", "carry"),
    [
        (LIVE_WANTS, False),
        (result("live", {"py_spy": "/usr/bin/py-spy", "processes": [{"pid": 7}]}), True),
        (result("live", {"py_spy": None, "processes": []}), True),
        (result("live", error={"kind": "timeout", "message": "x"}), True),
    ],
    ids=["not-asked-to-carry", "target-has-py-spy", "no-trainer-found", "live-failed"],
)
def test_py_spy_is_carried_only_when_asked_and_wanted(
    monkeypatch: pytest.MonkeyPatch, live: ProbeResult, carry: bool
) -> None:
    """Nothing is carried unless asked to, and only for a live probe that found the
    trainer's processes with no py-spy on the target to read them."""
    used = carrying(monkeypatch, Carried("/tmp/x/py-spy"))
    sweep = FakeSweep((live,))
    SweepGatherer(Recorder(), SweepSpec(), Ledger(), run_sweep=sweep, carry=carry)(None)
    assert used == [] and len(sweep.calls) == 1
