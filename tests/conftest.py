"""Shared fixtures. Components that a test needs are real (sshd, torch); when one is
missing the test skips with the reason, except under ``REQUIRE_ALL=1`` (CI), where it
fails instead: CI must skip nothing it can run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import structlog

import tools.log

pytest_plugins = [
    "tests.lib.sshd",
    "tests.lib.workspaces",
    "tests.lib.foreign_trainers",
    "tests.lib.hf_runs",
]

# Session fixtures that each cost a real training run of 15-50 s. xdist builds a session
# fixture once per worker that uses it, so the files that use one of these run on one
# worker (``make test`` distributes by these groups: ``--dist loadgroup``) and it is built
# once, not twice. Every other file is its own group, as ``--dist loadfile`` would make it.
SHARED_RUNS = {
    "race_scenario": "race",
    "hf_workspace": "foreign",
    "lightning_workspace": "foreign",
    "lightning_throughput_workspace": "foreign",
    "threads_workspace": "foreign",
    "hf_default_run": "hf_runs",
    "hf_tokens_run": "hf_runs",
    "hf_bar_run": "hf_runs",
    "hf_bar_slow_run": "hf_runs",
    "hf_pace_slow_run": "hf_runs",
    "hf_resumed_slow_60": "hf_runs",
    "hf_resumed_slow_200": "hf_runs",
    "hf_nan_run": "hf_runs",
    "hf_nan_filtered_run": "hf_runs",
    "hf_stalled_run": "hf_runs",
}


# First: xdist reads the marks in its own hook of this name (it adds the group to each
# test's id there), so marks added after it are ignored and ``--dist loadgroup`` falls
# back to spreading single tests, building each shared fixture once per worker.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups: dict[str, str] = {}
    for item in items:
        path = item.nodeid.split("::")[0]
        used = [SHARED_RUNS[f] for f in getattr(item, "fixturenames", ()) if f in SHARED_RUNS]
        if used:
            groups.setdefault(path, used[0])
    for item in items:
        path = item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(groups.get(path, path)))
    # The groups sharing a costly run first, then the rest as collected (tests/e2e before
    # tests/unit): xdist hands out groups in this order (``make test`` turns off its
    # reordering by test count, which sent the long one-test groups, the demo among them,
    # out last), so the longest work starts early and the short groups fill the end.
    shared = set(SHARED_RUNS.values())
    items.sort(key=lambda item: groups.get(item.nodeid.split("::")[0]) not in shared)


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
