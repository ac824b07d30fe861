"""``dflash-doctor snapshot`` (``agent.cli.snapshot``): the target's facts gathered now and
stored under a name as a known good state; a bad name refused before anything runs; which
settings applied said on stderr; the probes that could not observe listed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from agent.analysis.baseline import baseline_store
from agent.cli import application
from agent.cli import snapshot as snapshot_cli
from agent.cli.application import app
from agent.graph import gather
from agent.model.facts import Fact, Ledger
from tools.errors import ConfigError
from tools.sweep import SweepSpec
from tools.transport.ssh_options import SSHOptions
from tools.transport.uri import TargetURI

FACTS = [
    Fact(probe="host", target="local", argv=("uname",), value={"os": "Linux"}),
    Fact(probe="gpus", target="local", argv=("nvidia-smi",), rc=127, error="not found"),
    Fact(probe="trainlog", target="local", argv=("cat", "log"), value={"steps": {"max": 3}}),
]


@dataclass
class Seen:
    opened: list[tuple[str, str]] = field(default_factory=list)
    swept: list[tuple[str, SweepSpec]] = field(default_factory=list)
    closed: int = 0
    fail: bool = False
    facts: list[Fact] = field(default_factory=lambda: list(FACTS))
    gathered: list[Fact] = field(default_factory=list)


class FakeSession:
    def __init__(self, seen: Seen) -> None:
        self.seen = seen
        self.ledger = Ledger()

    def target(self, uri: str) -> str:
        return f"transport to {uri}"

    def close(self) -> None:
        self.seen.closed += 1


@pytest.fixture
def seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Seen]:
    """A state directory of the test's own; a session that records what was opened and
    closed; a sweep that returns ``seen.facts`` (or fails when ``seen.fail``)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    record = Seen()

    def open_session(command: str, uri: TargetURI, ssh: SSHOptions) -> FakeSession:
        record.opened.append((command, str(uri)))
        return FakeSession(record)

    class Gatherer:
        def __init__(self, transport: str, spec: SweepSpec, ledger: Ledger) -> None:
            self.transport, self.spec, self.ledger = transport, spec, ledger

        def __call__(self, state: None) -> list[Fact]:
            record.swept.append((self.transport, self.spec))
            if record.fail:
                raise ConnectionError("connection lost")
            record.gathered = [self.ledger.append(f) for f in record.facts]
            return record.gathered

    monkeypatch.setattr(snapshot_cli, "open_session", open_session)
    monkeypatch.setattr(gather, "SweepGatherer", Gatherer)
    monkeypatch.setattr(application, "configure", lambda *, json, level: None)
    yield record


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, ["snapshot", *args])


def test_the_facts_gathered_are_stored_under_the_name(seen: Seen) -> None:
    """The sweep's facts are saved as the named baseline of the target, and the command
    says how many, from where, and the file; the probes that failed are listed after."""
    result = invoke("--name", "good", "-t", "local")
    assert result.exit_code == 0, result.output
    path = baseline_store().path("good")
    assert result.stdout == (
        f"baseline 'good': 3 facts from local -> {path}\n  (could not observe: gpus)\n"
    )
    stored = baseline_store().load("good")
    assert (stored.name, stored.target) == ("good", "local")
    assert [f.probe for f in stored.facts] == ["host", "gpus", "trainlog"]
    assert stored.facts == seen.gathered
    assert seen.opened == [("snapshot", "local")]
    assert [transport for transport, _ in seen.swept] == ["transport to local"]
    assert seen.closed == 1


def test_the_settings_applied_are_said_on_stderr(seen: Seen, tmp_path: Path) -> None:
    """Which settings the snapshot ran with is one line on stderr, and the workspace given
    is the one swept."""
    result = invoke("-n", "good", "-t", "local", "-w", str(tmp_path))
    assert result.stderr == (
        f"settings: no profile: local with the default settings and the workspace {tmp_path}\n"
    )
    ((_, spec),) = seen.swept
    assert spec.workspace == str(tmp_path)


def test_every_probe_answering_lists_no_failures(seen: Seen) -> None:
    """When every probe observed, the summary is the one line."""
    seen.facts = [f for f in FACTS if f.ok]
    result = invoke("--name", "good", "-t", "local")
    path = baseline_store().path("good")
    assert result.stdout == f"baseline 'good': 2 facts from local -> {path}\n"


@pytest.mark.parametrize(
    "name", ["../up", "a b", "", "x" * 65], ids=["path", "space", "empty", "long"]
)
def test_a_bad_name_is_refused_before_anything_runs(seen: Seen, name: str) -> None:
    """A name that is not letters, digits, '.', '_' or '-' (at most 64) is refused with the
    name and the rule, before any session opens or any probe runs."""
    result = invoke("--name", name, "-t", "local")
    assert isinstance(result.exception, ConfigError)
    assert str(result.exception) == (
        f"bad baseline name {name!r}: use letters, digits, '.', '_' or '-' (≤ 64)"
    )
    assert (seen.opened, seen.swept) == ([], [])


def test_a_sweep_that_fails_closes_the_session_and_stores_nothing(seen: Seen) -> None:
    """When the sweep fails, the session is still closed and no baseline is written."""
    seen.fail = True
    result = invoke("--name", "good", "-t", "local")
    assert isinstance(result.exception, ConnectionError)
    assert seen.closed == 1
    assert baseline_store().names() == []
