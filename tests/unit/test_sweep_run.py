"""tools.sweep.run: one sweep is one round trip. The plan's command carries the rendered
bundle on stdin, under a time limit that is the caller's, else the plan's worst case, and
never past a deadline; a sweep with nothing to run sends nothing. Here the transport is a
stand-in that records what it was sent and answers with a prepared document, and the
clock is fixed, so every limit is exact."""

from __future__ import annotations

import json
from collections.abc import Sequence
from types import SimpleNamespace

import pytest
from structlog.testing import capture_logs

import tools.sweep.run as run_module
from tools.errors import CommandTimeout
from tools.sweep.bundle import render
from tools.sweep.plan import build_plan
from tools.sweep.run import sweep
from tools.sweep.spec import SweepSpec
from tools.transport.base import CommandResult

NOW = 1000.0
SPEC = SweepSpec()
HOST_ONLY = ["host"]


class Answering:
    """A transport that records each command and answers with ``stdout``."""

    name = "stand-in"

    def __init__(self, stdout: bytes = b"") -> None:
        self.stdout = stdout
        self.sent: list[tuple[tuple[str, ...], bytes | None, float | None]] = []

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
    ) -> CommandResult:
        self.sent.append((tuple(argv), stdin, timeout))
        return CommandResult(tuple(argv), 0, self.stdout, b"", 0.25, self.name)

    def close(self) -> None:
        pass


def _document(results: list[dict[str, object]]) -> bytes:
    doc = {"format": 1, "results": results}
    return b"@@dflash-doctor-bundle@@ " + json.dumps(doc).encode() + b"\n"


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """``time.monotonic()`` is NOW throughout, as the module reads it."""
    monkeypatch.setattr(run_module, "time", SimpleNamespace(monotonic=lambda: NOW))


def test_one_round_trip_carries_the_plans_command_and_its_bundle() -> None:
    """The plan's argv is run once, with the rendered bundle as stdin and, with no
    timeout given, the plan's worst case as the limit; the answer is parsed."""
    plan = build_plan(SPEC, HOST_ONLY)
    t = Answering(_document([{"probe": "host", "ok": True, "value": {"uid": 0}}]))
    result = sweep(t, SPEC, only=HOST_ONLY)
    assert t.sent == [(plan.argv, render(plan), plan.budget())]
    assert result["host"].ok and result["host"].value == {"uid": 0}
    assert result.target == "stand-in"


@pytest.mark.parametrize(
    ("timeout", "left", "limit"),
    [
        (7.0, None, 7.0),
        (500.0, 20.0, 20.0),
        (7.0, 20.0, 7.0),
        (None, 1.0, 1.0),
    ],
    ids=[
        "caller-timeout-wins-over-the-worst-case",
        "deadline-cuts-a-longer-timeout",
        "deadline-further-than-the-timeout",
        "exactly-the-least-time-left",
    ],
)
def test_the_limit_is_the_timeout_cut_to_what_the_deadline_leaves(
    timeout: float | None, left: float | None, limit: float
) -> None:
    """The limit is the caller's timeout (else the worst case), and with a deadline no
    more than the seconds left before it; one second left is still enough to start."""
    t = Answering(_document([]))
    deadline = None if left is None else NOW + left
    sweep(t, SPEC, only=HOST_ONLY, timeout=timeout, deadline=deadline)
    assert [sent[2] for sent in t.sent] == [limit]


@pytest.mark.parametrize("left", [0.999, 0.0, -3.0], ids=["just-under-a-second", "now", "past"])
def test_under_a_second_left_is_a_timeout_and_nothing_is_sent(left: float) -> None:
    """Less than a second before the deadline the sweep is not started: CommandTimeout
    names the target, and the transport is never asked."""
    t = Answering()
    with pytest.raises(CommandTimeout) as caught:
        sweep(t, SPEC, only=HOST_ONLY, deadline=NOW + left)
    assert str(caught.value) == ("stand-in: no time left in the target's time limit for the sweep")
    assert t.sent == []


def test_nothing_to_run_sends_nothing_and_says_it_was_skipped() -> None:
    """A plan whose probes all lack something to look at is answered here: every
    result is skipped, rc 0 for the sweep, and the event says how many were planned."""
    t = Answering()
    with capture_logs() as logs:
        result = sweep(t, SPEC, only=["trainlog", "checkpoints"])
    assert t.sent == []
    assert result.rc == 0
    assert [(r.probe, r.rc, r.error.kind if r.error else None) for r in result.results] == [
        ("checkpoints", None, "skipped"),
        ("trainlog", None, "skipped"),
    ]
    assert [(e["event"], e["target"], e["probes"]) for e in logs] == [
        ("sweep_skipped", "stand-in", 2)
    ]


def test_the_finished_event_names_failed_probes_but_not_skipped_ones() -> None:
    """``sweep_finished`` lists the probes that failed on the target; a probe skipped for
    want of configuration is no failure and is left out."""
    t = Answering(_document([{"probe": "host", "ok": False, "error": {"kind": "oops"}}]))
    with capture_logs() as logs:
        sweep(t, SPEC, only=["host", "trainlog"])
    [finished] = [e for e in logs if e["event"] == "sweep_finished"]
    assert (finished["rc"], finished["failed"], finished["duration"]) == (0, ["host"], 0.25)
    [started] = [e for e in logs if e["event"] == "sweep_started"]
    assert started["probes"] == ["host"]
