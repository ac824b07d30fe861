"""What a session runs against (``session.json``), apart from the session itself: a
pydantic model, loaded only by the commands that create or reopen a configured session."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.sweep import SweepSpec
from tools.transport.ssh_options import SSHOptions


class SessionConfig(BaseModel):
    """What a session runs against; saved so that ``resume`` rebuilds the same session."""

    model_config = ConfigDict(extra="forbid")

    command: str
    target: str
    target_sealed: str | None = None
    """In ``session.json``: the target, sealed (``tools.pseudonym``), where ``target``
    holds it with its host a pseudonym. Never set on a config in memory."""
    mode: Literal["guided", "demo", "health", "replay"] = "guided"
    spec: SweepSpec | None = None
    baseline: str | None = None
    ssh: dict[str, Any] = Field(default_factory=dict)
    redact_paths: list[str] = Field(default_factory=list)
    proposer: str | None = None
    """``MODULE:FACTORY`` of an optional LangChain chat model that proposes hypotheses."""
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    def ssh_options(self) -> SSHOptions:
        return SSHOptions(**self.ssh)
