"""Shared fixtures. Components that a test needs are real (sshd, torch); when one is
missing the test skips with the reason, except under ``REQUIRE_ALL=1`` (CI), where it
fails instead: CI must skip nothing it can run."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import structlog

pytest_plugins = ["tests.sshd", "tests.workspaces", "tests.foreign_trainers"]


def need(available: bool, component: str, reason: str) -> None:
    """Skip (or fail under REQUIRE_ALL=1) when ``component`` is missing."""
    if available:
        return
    message = f"{component} unavailable: {reason}"
    if os.environ.get("REQUIRE_ALL") == "1":
        pytest.fail(f"REQUIRE_ALL=1 and {message}", pytrace=False)
    pytest.skip(message)


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
    structlog.reset_defaults()
