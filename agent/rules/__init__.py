"""The rule base: one module per failure family (see ../shared/DESIGN.md's table)."""

from __future__ import annotations

from agent.rules.base import Evidence, Rule
from agent.rules.blocked import ThreadsBlocked
from agent.rules.checkpoint_integrity import CheckpointIntegrity
from agent.rules.compile_cache import CompileCacheCold
from agent.rules.crash import CrashStated
from agent.rules.eager_fallback import SilentEagerFallback
from agent.rules.environment_drift import EnvironmentDrift
from agent.rules.fx_trace_race import FxTraceRace
from agent.rules.host_contention import HostContention
from agent.rules.input_bound import InputBound
from agent.rules.limit_not_applied import LimitNotApplied
from agent.rules.monkeypatch import IneffectiveMonkeypatch
from agent.rules.own_code import OwnCodeTime
from agent.rules.script_changed import ScriptChanged
from agent.rules.shape_churn import DatasetShapeChurn

__all__ = ["Evidence", "Rule", "default_rules"]


def default_rules() -> list[Rule]:
    return [
        EnvironmentDrift(),
        ScriptChanged(),
        CompileCacheCold(),
        FxTraceRace(),
        SilentEagerFallback(),
        IneffectiveMonkeypatch(),
        DatasetShapeChurn(),
        CheckpointIntegrity(),
        CrashStated(),
        OwnCodeTime(),
        ThreadsBlocked(),
        InputBound(),
        HostContention(),
        LimitNotApplied(),
    ]
