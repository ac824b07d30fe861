"""Shared fixtures. Components that a test needs are real (sshd, torch); when one is
missing the test skips with the reason, except under ``REQUIRE_ALL=1`` (CI), where it
fails instead: CI must skip nothing it can run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import structlog

import tools.log

pytest_plugins = ["tests.lib.sshd", "tests.lib.workspaces", "tests.lib.foreign_trainers"]


@pytest.fixture(autouse=True)
def _isolated_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test gets its own XDG state dir, so no test writes into the user's home."""
    state = tmp_path_factory.mktemp("xdg-state")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))


@pytest.fixture(autouse=True)
def _fresh_structlog() -> Iterator[None]:
    """A test that runs the CLI in-process configures structlog (level filter included);
    put the defaults back so the next test's capture_logs sees every event."""
    yield
    tools.log.reset()
    structlog.reset_defaults()
