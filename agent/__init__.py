"""dflash-doctor's reasoning layer: facts, claims, hypotheses, the graph and the CLI."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from agent.facts import Fact, Ledger
from tools.errors import (
    AuthenticationError,
    CommandTimeout,
    ConfigError,
    ConnectError,
    ConnectionLost,
    DoctorError,
    HostKeyError,
    LedgerError,
    NotRecorded,
    TargetURIError,
    TranscriptError,
    TransportError,
    UsageError,
)

try:
    __version__ = version("dflash-doctor")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "AuthenticationError",
    "CommandTimeout",
    "ConfigError",
    "ConnectError",
    "ConnectionLost",
    "DoctorError",
    "Fact",
    "HostKeyError",
    "Ledger",
    "LedgerError",
    "NotRecorded",
    "TargetURIError",
    "TranscriptError",
    "TransportError",
    "UsageError",
    "__version__",
]
