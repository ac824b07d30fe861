"""Skipping for a missing component, or failing under ``REQUIRE_ALL=1`` (CI must skip
nothing it can run)."""

from __future__ import annotations

import os

import pytest


def need(available: bool, component: str, reason: str) -> None:
    """Skip (or fail under REQUIRE_ALL=1) when ``component`` is missing."""
    if available:
        return
    message = f"{component} unavailable: {reason}"
    if os.environ.get("REQUIRE_ALL") == "1":
        pytest.fail(f"REQUIRE_ALL=1 and {message}", pytrace=False)
    pytest.skip(message)
