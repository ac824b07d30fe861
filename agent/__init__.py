"""dflash-doctor's reasoning layer, in rooms each standing on the ones below it:
``model`` (facts, claims, hypotheses), ``analysis`` (what the run did), ``rules`` (the
failure families), ``graph`` (the diagnosis and its fixes), ``sessions``, ``report``,
``health`` and ``cli`` (tests/unit/test_rooms.py holds the drawing).

The public surface is ``__all__``. Names load on first use (PEP 562), so that importing a
submodule (``agent.cli`` for ``--help``) does not import the graph and langgraph with it.

    from agent import Ledger, Claim, Equal, Ref, check, build_graph, Doctor
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agent._version import __version__

if TYPE_CHECKING:
    from agent.graph.doctor import Approver, Doctor, Fixer, Gatherer, Proposer
    from agent.graph.state import DiagnosisState
    from agent.graph.wiring import build_graph, sqlite_checkpointer
    from agent.model.claims import (
        PREDICATES,
        Absent,
        AtLeast,
        AtMost,
        Claim,
        Contains,
        Differs,
        Equal,
        Exists,
        Greater,
        Matches,
        NotBefore,
        RatioAtLeast,
        RatioBelow,
        Ref,
        VersionDiffers,
        WindowRatio,
        check,
    )
    from agent.model.facts import Fact, Ledger
    from agent.model.hypotheses import Hypothesis, Prediction, rank, verify
    from agent.report.build import build_report
    from agent.report.markdown import render_markdown
    from agent.report.model import Report
    from agent.rules import default_rules
    from agent.rules.base import Evidence, Rule
    from agent.sessions.runner import build_doctor, run_session
    from tools.errors import (
        ApplyError,
        AuthenticationError,
        CommandTimeout,
        ConfigError,
        ConnectError,
        ConnectionLost,
        DoctorError,
        HostKeyError,
        LedgerError,
        NotRecorded,
        ReadOnlyViolation,
        TargetURIError,
        TranscriptError,
        TransportError,
        UsageError,
    )

# Where each public name lives.
_HOMES = {
    "agent.model.facts": ("Fact", "Ledger"),
    "agent.model.claims": (
        "PREDICATES",
        "Absent",
        "AtLeast",
        "AtMost",
        "Claim",
        "Contains",
        "Differs",
        "Equal",
        "Exists",
        "Greater",
        "Matches",
        "NotBefore",
        "RatioAtLeast",
        "RatioBelow",
        "Ref",
        "VersionDiffers",
        "WindowRatio",
        "check",
    ),
    "agent.model.hypotheses": ("Hypothesis", "Prediction", "rank", "verify"),
    "agent.graph.state": ("DiagnosisState",),
    "agent.graph.doctor": ("Approver", "Doctor", "Fixer", "Gatherer", "Proposer"),
    "agent.rules": ("default_rules",),
    "agent.rules.base": ("Evidence", "Rule"),
    "agent.graph.wiring": ("build_graph", "sqlite_checkpointer"),
    "agent.sessions.runner": ("build_doctor", "run_session"),
    "agent.report.model": ("Report",),
    "agent.report.build": ("build_report",),
    "agent.report.markdown": ("render_markdown",),
    "tools.errors": (
        "ApplyError",
        "AuthenticationError",
        "CommandTimeout",
        "ConfigError",
        "ConnectError",
        "ConnectionLost",
        "DoctorError",
        "HostKeyError",
        "LedgerError",
        "NotRecorded",
        "ReadOnlyViolation",
        "TargetURIError",
        "TranscriptError",
        "TransportError",
        "UsageError",
    ),
}
_WHERE = {name: module for module, names in _HOMES.items() for name in names}

# The public surface (a test keeps it equal to _HOMES and proves every name resolves).
__all__ = [
    "PREDICATES",
    "Absent",
    "ApplyError",
    "Approver",
    "AtLeast",
    "AtMost",
    "AuthenticationError",
    "Claim",
    "CommandTimeout",
    "ConfigError",
    "ConnectError",
    "ConnectionLost",
    "Contains",
    "DiagnosisState",
    "Differs",
    "Doctor",
    "DoctorError",
    "Equal",
    "Evidence",
    "Exists",
    "Fact",
    "Fixer",
    "Gatherer",
    "Greater",
    "HostKeyError",
    "Hypothesis",
    "Ledger",
    "LedgerError",
    "Matches",
    "NotBefore",
    "NotRecorded",
    "Prediction",
    "Proposer",
    "RatioAtLeast",
    "RatioBelow",
    "ReadOnlyViolation",
    "Ref",
    "Report",
    "Rule",
    "TargetURIError",
    "TranscriptError",
    "TransportError",
    "UsageError",
    "VersionDiffers",
    "WindowRatio",
    "__version__",
    "build_doctor",
    "build_graph",
    "build_report",
    "check",
    "default_rules",
    "rank",
    "render_markdown",
    "run_session",
    "sqlite_checkpointer",
    "verify",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
