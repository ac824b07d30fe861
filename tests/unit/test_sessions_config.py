"""What a session runs against (``agent.sessions.config``): the settings saved in
``session.json`` so that ``resume`` rebuilds the same session, the SSH options among them
given back as the options they were, and anything it does not know refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from agent.sessions.config import SessionConfig
from tools.sweep import SweepSpec
from tools.transport.ssh_options import SSHOptions


def test_a_config_names_a_guided_session_with_nothing_else_set() -> None:
    """Given only the command and target, a session is guided, with no spec, baseline,
    SSH settings, paths to redact, proposer or sealed target."""
    config = SessionConfig(command="diagnose", target="local")
    assert (config.mode, config.spec, config.baseline, config.proposer) == (
        "guided",
        None,
        None,
        None,
    )
    assert (config.ssh, config.redact_paths, config.target_sealed) == ({}, [], None)


def test_it_is_stamped_with_the_time_it_was_made_in_utc() -> None:
    """A config made now carries the current time, in UTC, not a naive local time."""
    before = datetime.now(UTC)
    stamped = SessionConfig(command="diagnose", target="local").created_at
    after = datetime.now(UTC)
    assert stamped.utcoffset() == timedelta(0)
    assert before <= stamped <= after


@pytest.mark.parametrize(
    ("ssh", "options"),
    [
        ({}, SSHOptions()),
        (
            {"retries": 0, "identity_file": "/keys/id"},
            SSHOptions(retries=0, identity_file="/keys/id"),
        ),
        (
            {"accept_new_host_key": True, "known_hosts": "/kh", "connect_deadline": 4.0},
            SSHOptions(accept_new_host_key=True, known_hosts="/kh", connect_deadline=4.0),
        ),
    ],
    ids=["defaults", "identity-no-retries", "new-host-key-deadline"],
)
def test_the_saved_ssh_settings_come_back_as_the_options(
    ssh: dict[str, Any], options: SSHOptions
) -> None:
    """The SSH settings saved by name are the SSH options with those values, the others
    at their defaults."""
    assert SessionConfig(command="diagnose", target="local", ssh=ssh).ssh_options() == options


def test_ssh_settings_it_does_not_know_are_refused_when_used() -> None:
    """An SSH setting that is no SSH option (a file edited by hand, an older version's
    name) is an error naming it, not silently dropped."""
    config = SessionConfig(command="diagnose", target="local", ssh={"port": 22})
    with pytest.raises(TypeError, match="'port'"):
        config.ssh_options()


def test_a_config_comes_back_from_its_json_as_itself() -> None:
    """Saved as JSON and read back, a config with every field set is equal to the one
    saved (its spec, time and SSH settings included)."""
    config = SessionConfig(
        command="health",
        target="ssh://<host-1>/pct:200",
        target_sealed="sealed-target",
        mode="health",
        spec=SweepSpec(workspace="/srv/ws", interpreter="/venv/bin/python"),
        baseline="good",
        ssh={"retries": 1},
        redact_paths=["/home/me"],
        proposer="mine.models:chat",
        created_at=datetime(2026, 12, 1, 2, 0, tzinfo=UTC),
    )
    assert SessionConfig.model_validate_json(config.model_dump_json()) == config


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"command": "diagnose", "target": "local", "mode": "batch"}, "mode"),
        ({"command": "diagnose", "target": "local", "targett": "x"}, "targett"),
        ({"command": "diagnose"}, "target"),
    ],
    ids=["unknown-mode", "unknown-field", "no-target"],
)
def test_a_config_it_cannot_read_is_refused_naming_the_field(
    data: dict[str, Any], field: str
) -> None:
    """A mode it does not know, a field it does not have, or a missing target is a
    validation error naming the field."""
    with pytest.raises(ValidationError) as info:
        SessionConfig.model_validate(data)
    assert [e["loc"] for e in info.value.errors()] == [(field,)]
