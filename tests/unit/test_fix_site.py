"""agent.graph.fix_site: the trainer site a fix acts on, built from the sweep's settings
and the session's facts (the profile's launch, else the running trainer, else a launch
file the workspace discovery found), and how the restarted run's tokens/s are read: the
same series the diagnosis judged.

The target's file and process operations are a stand-in here (``FakeRemote``), so what
the site is built from is fixed by the test's own table; how a launch text is written
from a command or a process is tests/unit/test_playbook_site.py's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from agent.graph import fix_site
from agent.graph.fix_site import measure_for, series_words, site_for
from agent.model.facts import Fact, Ledger
from agent.rules.base import Evidence
from playbooks.measure import overall_median
from tools.errors import ApplyError
from tools.sweep import SweepSpec
from tools.transport import LocalTransport


class FakeRemote:
    """The target's files and the trainer's output files, as the test gives them."""

    files: ClassVar[dict[str, bytes]] = {}
    outputs: ClassVar[dict[str, str | None]] = {}
    made: ClassVar[list[FakeRemote]] = []

    def __init__(self, transport: object, interpreter: str = "python3") -> None:
        self.interpreter = interpreter
        FakeRemote.made.append(self)

    def read(self, path: str) -> bytes:
        if path not in self.files:
            raise ApplyError(f"{path}: no such file")
        return self.files[path]

    def stdio(self, pid: int) -> dict[str, str | None]:
        return dict(self.outputs)


@pytest.fixture(autouse=True)
def fake_remote(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    FakeRemote.files, FakeRemote.outputs, FakeRemote.made = {}, {}, []
    monkeypatch.setattr(fix_site, "Remote", FakeRemote)
    yield


def evidence(**values: object) -> Evidence:
    """Facts of the given probes, each holding the given value."""
    ledger = Ledger()
    ids = [
        ledger.append(Fact(probe=probe, target="local", value=value)).id
        for probe, value in values.items()
    ]
    return Evidence(ledger, ids)


LAYOUT = {
    "train_logs": [{"path": "/ws/logs/metrics.jsonl"}, {"path": "/ws/other.jsonl"}],
    "stdout_logs": [{"path": "/ws/train.log"}],
    "launch_files": [
        {"path": "/ws/setup.sh"},
        {"path": "/ws/missing.sh"},
        {"path": "/ws/go.sh"},
    ],
}


def build(spec: SweepSpec, found: Evidence) -> Any:
    return site_for(spec, LocalTransport())(found)


def test_the_profiles_launch_file_and_logs_are_used_as_given() -> None:
    """A profile naming the workspace, a launch file and both logs: the site is those,
    the interpreter the sweep ran on (the interpreter fact's), and the profile's log
    settings; no layout candidate is consulted."""
    spec = SweepSpec(
        workspace="/ws",
        launch="run.sh",
        train_log="/ws/log.jsonl",
        stdout_log="/ws/out.log",
        log_fields={"throughput": "tps"},
        throughput_unit="ktok/s",
    )
    site = build(spec, evidence(layout=LAYOUT, interpreter={"path": "/v/bin/python"}))
    assert (site.workspace, site.launch_file, site.launch_source) == (
        "/ws",
        "/ws/run.sh",
        "the profile's launch file /ws/run.sh",
    )
    assert (site.train_log, site.stdout_log, site.interpreter) == (
        "/ws/log.jsonl",
        "/ws/out.log",
        "/v/bin/python",
    )
    assert (site.log_fields, site.throughput_unit) == ({"throughput": "tps"}, "ktok/s")
    assert [r.interpreter for r in FakeRemote.made] == ["/v/bin/python"]


def test_logs_and_interpreter_fall_back_to_the_layout_and_the_spec() -> None:
    """Logs the profile does not name are the layout fact's first candidates; without an
    interpreter fact, the sweep spec's interpreter runs the fix's operations."""
    spec = SweepSpec(workspace="/ws", launch="run.sh", interpreter="/usr/bin/python3.12")
    site = build(spec, evidence(layout=LAYOUT))
    assert (site.train_log, site.stdout_log, site.interpreter) == (
        "/ws/logs/metrics.jsonl",
        "/ws/train.log",
        "/usr/bin/python3.12",
    )


def test_without_a_launch_or_a_trainer_the_first_launch_file_with_an_exec_line() -> None:
    """No launch in the profile and no running trainer: the first launch file discovery
    found that starts the trainer with an exec line (one without it, or one that cannot
    be read, is passed over), named as found in the workspace."""
    FakeRemote.files = {
        "/ws/setup.sh": b"#!/bin/sh\npip install -r req.txt\n",
        "/ws/go.sh": b"#!/bin/sh\ncd /ws\n  exec python train.py\n",
    }
    site = build(SweepSpec(workspace="/ws"), evidence(layout=LAYOUT))
    assert (site.launch_file, site.launch_source) == (
        "/ws/go.sh",
        "the launch file /ws/go.sh (found in the workspace)",
    )


def test_with_no_launch_file_found_the_site_is_refused() -> None:
    """No launch, no running trainer and no discovered launch file that execs: refused
    with the reason, never a guessed file name."""
    FakeRemote.files = {"/ws/setup.sh": b"python train.py\n"}
    with pytest.raises(ApplyError, match="no launch known for the trainer"):
        build(SweepSpec(workspace="/ws"), evidence(layout=LAYOUT))


PROCESSES = {
    "processes": [
        {
            "pid": 11,
            "ppid": 1,
            "exe": "/usr/bin/python3.11",
            "cmdline": ["python", "train.py"],
            "cwd": "/ws",
        }
    ]
}


def test_a_running_trainer_is_started_again_as_it_ran() -> None:
    """No launch in the profile and no workspace: the running trainer gives the workspace
    (its working directory), its output files and, where discovery chose an interpreter
    as that process's, the Python its bare ``python`` is replaced by."""
    FakeRemote.outputs = {"1": None, "2": None}
    chosen = {
        "path": "/usr/bin/python3",
        "discovered": True,
        "candidates": [
            {"path": "/usr/bin/python3", "verdict": "fallback", "source": "PATH"},
            {"path": "/v/bin/python", "verdict": "running trainer", "source": "process 11: exe"},
        ],
    }
    spec = SweepSpec(train_log="/ws/log.jsonl", stdout_log="/ws/out.log")
    site = build(spec, evidence(processes=PROCESSES, interpreter=chosen))
    assert (site.workspace, site.cwd, site.trainer_pid) == ("/ws", "/ws", 11)
    assert site.launch_source == (
        "the running trainer (process 11): its command line, working directory /ws and"
        " environment (none of those it reads)"
    )
    assert site.launch_text.endswith("cd /ws\nexec /v/bin/python train.py\n")
    assert site.interpreter == "/usr/bin/python3"


def chose(discovered: bool, verdict: str, pid: int) -> dict[str, Any]:
    """An interpreter fact with one candidate, /v/bin/python, judged ``verdict`` for
    process ``pid``."""
    source = f"process {pid}: exe"
    return {
        "discovered": discovered,
        "candidates": [{"path": "/v/bin/python", "verdict": verdict, "source": source}],
    }


@pytest.mark.parametrize(
    "chosen",
    [
        chose(False, "running trainer", 11),
        chose(True, "running trainer", 110),
        chose(True, "fallback", 11),
    ],
    ids=["given-not-discovered", "another-process", "not-the-trainers"],
)
def test_the_trainers_python_is_only_the_one_discovery_chose_for_it(
    chosen: dict[str, Any],
) -> None:
    """An interpreter that was given rather than discovered, one discovered for another
    process (pid 110 is not pid 11), or one not judged the running trainer's leaves the
    process's own ``python`` on its command line."""
    FakeRemote.outputs = {"1": None, "2": None}
    spec = SweepSpec(train_log="/ws/log.jsonl", stdout_log="/ws/out.log")
    site = build(spec, evidence(processes=PROCESSES, interpreter=chosen))
    assert site.launch_text.endswith("cd /ws\nexec python train.py\n")


def test_no_workspace_known_is_refused() -> None:
    """Neither the profile nor a running trainer gives a workspace: refused, saying where
    one is given."""
    with pytest.raises(
        ApplyError, match=r"no workspace known for the trainer \(--workspace or the profile\)"
    ):
        build(SweepSpec(launch="run.sh"), evidence())


def trainlog(value: dict[str, Any]) -> Evidence:
    return evidence(trainlog=value)


ONE = {"groups": {"rank=0": {"throughput": {"recent_median": 900.0}}}}
DRAFTERS = {
    "groups": {
        "role=drafter,rank=0": {"throughput": {"recent_median": 400.0}},
        "role=drafter,rank=1": {"throughput": {"recent_median": 500.0}},
    },
    "aggregates": {"role=drafter": {"recent_median": 900.0}},
}
PLAIN = {"speed": {"recent": {"value": 900.0}}}


@pytest.mark.parametrize(
    ("value", "words"),
    [(ONE, "rank=0 "), (DRAFTERS, "drafter "), (PLAIN, ""), ({}, "")],
    ids=["one-group", "drafters", "no-groups", "no-speed"],
)
def test_the_series_is_named_as_the_diagnosis_named_it(value: dict[str, Any], words: str) -> None:
    """The measured series' words: its group's label, "drafter " for drafters, nothing
    for a log of one unnamed series or one with no speed."""
    assert series_words(trainlog(value)) == words


def test_without_a_judged_series_the_whole_windows_median_is_measured() -> None:
    """A train log with no speed (or none at all): the restarted run is measured on the
    median over all its records."""
    assert measure_for(trainlog({})) is overall_median
    assert measure_for(evidence()) is overall_median


@pytest.mark.parametrize(
    ("value", "summary", "measured"),
    [
        (
            ONE,
            {
                "records": 50,
                "groups": {"rank=0": {"records": 20, "throughput": {"recent_median": 850}}},
            },
            (850.0, 20),
        ),
        (
            DRAFTERS,
            {
                "records": 99,
                "groups": {
                    "role=drafter,rank=0": {"records": 12},
                    "role=drafter,rank=1": {"records": 13},
                    "role=target,rank=2": {"records": 40},
                },
                "aggregates": {"role=drafter": {"recent_median": 880.0}},
            },
            (880.0, 25),
        ),
        (
            DRAFTERS,
            {
                "groups": {
                    "role=drafter,rank=0": {"records": "12"},
                    "role=drafter,rank=1": {"records": 13},
                },
                "aggregates": {"role=drafter": {}},
            },
            (None, 13),
        ),
        (PLAIN, {"records": 30, "speed": {"recent": {"value": 910.5}}}, (910.5, 30)),
        (PLAIN, {"records": "30", "speed": {"recent": {"value": "fast"}}}, (None, 0)),
        (ONE, {}, (None, 0)),
    ],
    ids=[
        "one-group",
        "aggregate",
        "aggregate-partly-counted",
        "no-groups",
        "nothing-numeric",
        "empty-summary",
    ],
)
def test_the_restarted_run_is_measured_on_the_judged_series(
    value: dict[str, Any], summary: dict[str, Any], measured: tuple[float | None, int]
) -> None:
    """The new window's summary is read at the judged series' place: a group's recent
    median over that group's records, an aggregate's over its members' records (others
    not counted, a count that is no number left out), or the log's speed over all its
    records; a value that is no number is None, a count that is none is 0."""
    assert measure_for(trainlog(value))(summary) == measured
