"""A session: its id, its state directory, its fact ledger and its recorded transcript.

State lives under ``$XDG_STATE_HOME/dflash-doctor/sessions/<id>/`` (``~/.local/state`` when
unset): ``ledger.jsonl`` and ``transcript.jsonl``. Every command that crosses a target in
a session goes through ``Session.target()`` and so is recorded.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.facts import Ledger
from tools.redact import Redactor
from tools.transcript import TranscriptWriter
from tools.transport import SSHOptions, Target, Transport, open_target
from tools.transport.record import RecordingTransport

APP = "dflash-doctor"


def state_home() -> Path:
    configured = os.environ.get("XDG_STATE_HOME")
    # The XDG spec says a relative path is invalid and must be ignored.
    if configured and os.path.isabs(configured):
        return Path(configured)
    return Path.home() / ".local" / "state"


def new_session_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


class Session:
    def __init__(
        self,
        session_id: str | None = None,
        *,
        root: Path | None = None,
        ssh: SSHOptions | None = None,
        header: dict[str, Any] | None = None,
        redact_hosts: Sequence[str] = (),
    ) -> None:
        self.id = session_id or new_session_id()
        self.dir = (root or state_home() / APP / "sessions") / self.id
        self.ssh = ssh
        self.ledger = Ledger(self.dir / "ledger.jsonl")
        self._header = header or {}
        self._redactor = Redactor(redact_hosts)
        self._writer: TranscriptWriter | None = None
        self._pool: dict[str, Transport] = {}
        self._targets: list[Target] = []

    @property
    def transcript_path(self) -> Path:
        return self.dir / "transcript.jsonl"

    def writer(self) -> TranscriptWriter:
        if self._writer is None:
            from agent import __version__

            self._writer = TranscriptWriter(
                self.transcript_path,
                {"app_version": __version__, "session": self.id, **self._header},
                self._redactor,
            )
        return self._writer

    def target(self, uri: str) -> RecordingTransport:
        """The target ``uri`` names, recorded into this session's transcript."""
        target = open_target(uri, ssh=self.ssh, pool=self._pool)
        self._targets.append(target)
        return RecordingTransport(target, self.writer())

    def close(self) -> None:
        for transport in self._pool.values():
            transport.close()
        if self._writer is not None:
            self._writer.close()
