"""A session: its id, its state directory, its fact ledger and its recorded transcript.

State lives under ``$XDG_STATE_HOME/dflash-doctor/sessions/<id>/`` (``~/.local/state`` when
unset):

- ``session.json``   what the session runs against (target, sweep spec, baseline, mode,
  SSH options), so ``resume`` can rebuild it after a crash or a closed laptop; the
  target's host a pseudonym, the target itself sealed (``tools.pseudonym``);
- ``ledger.jsonl``   the facts; ``transcript.jsonl`` every command that crossed a target;
- ``graph.sqlite``   the LangGraph checkpoints; ``redaction.json`` placeholder numbering
  (value hashes only).

Every command that crosses a target in a session goes through ``Session.target()`` and
so is recorded.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
import re
import secrets
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tools.errors import ConfigError, UsageError
from tools.localfile import read_state, refuse_special
from tools.redact import Redactor
from tools.statedir import ensure_app_state_dir
from tools.text import model_from_json, model_json
from tools.transcript import TranscriptWriter
from tools.transport import SSHOptions, Target, Transport, open_target, parse_target
from tools.transport.record import RecordingTransport

if TYPE_CHECKING:
    # pydantic and the sweep's models load with the first fact or config, not with the
    # session: `exec` records a transcript and needs neither (its start-up budget).
    from agent.model.facts import Fact, Ledger
    from agent.sessions.config import SessionConfig

_SESSION_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{4}\Z")
SESSION_MAX = 1 << 20  # bytes of session.json read (a config of a few KB)
REDACTION_MAX = 64 << 20  # bytes of redaction.json read (value hashes, one per secret)


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
        redact_paths: Sequence[str] = (),
        config: SessionConfig | None = None,
        resume: bool = False,
    ) -> None:
        self.id = session_id or new_session_id()
        self.dir = (root or ensure_app_state_dir() / "sessions") / self.id
        self.config = config
        self.ssh = ssh if ssh is not None else (config.ssh_options() if config else None)
        self.resume = resume
        self._ledger: Ledger | None = None
        self._ledger_lock = threading.Lock()
        self._header = header or {}
        saved = self.dir / "redaction.json"
        if resume and os.path.lexists(saved):
            text = read_state(saved, "the redaction state", REDACTION_MAX)
            try:
                self._redactor = Redactor.restore(json.loads(text), redact_hosts, redact_paths)
            except (ValueError, TypeError, AttributeError, RecursionError) as exc:
                # Without its numbering a resumed session would name one secret twice.
                raise ConfigError(
                    f"{saved}: unreadable redaction state: {str(exc).splitlines()[0]}"
                ) from None
        else:
            self._redactor = Redactor(redact_hosts, redact_paths)
        self._writer: TranscriptWriter | None = None
        self._lock_fd: int | None = None
        self._pool: dict[str, Transport] = {}
        self._targets: list[Target] = []
        if config is not None and not resume:
            self.dir.mkdir(parents=True, exist_ok=True)
            (self.dir / "session.json").write_text(model_json(_as_saved(config), indent=1))

    @property
    def ledger(self) -> Ledger:
        """The session's facts (``ledger.jsonl``), opened on first use (once: two threads
        asking first get the same ledger)."""
        with self._ledger_lock:
            if self._ledger is None:
                from agent.model.facts import Ledger

                self._ledger = Ledger(self.dir / "ledger.jsonl")
            return self._ledger

    @classmethod
    def create(cls, config: SessionConfig, *, root: Path | None = None) -> Session:
        parsed = parse_target(config.target)
        return cls(
            root=root,
            config=config,
            header={
                "command": config.command,
                "target": config.target,
                "mode": config.mode,
                "baseline": config.baseline,
                "spec": config.spec.model_dump(mode="json") if config.spec else None,
                # What the session was asked to do, as one comparable value (of the
                # target as saved: a digest of the host's name would let a guess be tested).
                "config_digest": hashlib.sha256(
                    model_json(
                        _as_saved(config),
                        include={"command", "target", "mode", "spec", "baseline"},
                    ).encode()
                ).hexdigest(),
            },
            redact_hosts=[parsed.host] if parsed.host else [],
            redact_paths=config.redact_paths,
        )

    @classmethod
    def reopen(cls, session_id: str, *, root: Path | None = None) -> Session:
        """The session ``session_id`` as it was saved; a clear error when there is none."""
        from agent.sessions.config import SessionConfig

        base = root or ensure_app_state_dir() / "sessions"
        if not _SESSION_ID.match(session_id):
            raise ConfigError(f"bad session id {session_id!r} (expected e.g. 20261130-021500-ab12)")
        path = base / session_id / "session.json"
        if not os.path.lexists(path):
            raise ConfigError(f"no session {session_id} under {base}")
        text = read_state(path, "the session", SESSION_MAX)
        try:
            config = model_from_json(SessionConfig, text)
        except (ValueError, RecursionError) as exc:  # ValidationError is a ValueError
            raise ConfigError(f"{path}: unreadable session: {_first_error(exc)}") from None
        if config.target_sealed is not None:
            from tools.pseudonym import host_names

            target = host_names().unseal(config.target_sealed, str(path))
            config = config.model_copy(update={"target": target, "target_sealed": None})
        parsed = parse_target(config.target)
        session = cls(
            session_id,
            root=root,
            config=config,
            header={"command": config.command, "target": config.target},
            redact_hosts=[parsed.host] if parsed.host else [],
            redact_paths=config.redact_paths,
            resume=True,
        )
        session.hold()
        try:
            session.check_saved_state()
        except BaseException:
            # The lock is per open file, not per process: kept, it refuses this very
            # process's next reopen as "in use by another dflash-doctor process".
            session.close()
            raise
        return session

    def hold(self) -> None:
        """Hold this session's lock (``session.lock``, flock) until ``close``: two
        processes answering one session at once would both append to its transcript,
        and the second's events would break the first's chain."""
        path = self.dir / "session.lock"
        refuse_special(path, "the session's lock")
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise UsageError(f"{path}: cannot lock the session: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise UsageError(
                f"session {self.id} is in use by another dflash-doctor process (pid"
                f" {holder}): wait for it to end, then resume"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd

    def check_saved_state(self) -> None:
        """Read the ledger and open the checkpoints before anything is written: a file
        that does not hold stops a resume while the transcript still has its seal."""
        from agent.graph.wiring import open_checkpoints

        len(self.ledger)  # loaded, and every fact checked, on first use
        if os.path.lexists(self.graph_path):
            open_checkpoints(self.graph_path).close()

    @property
    def transcript_path(self) -> Path:
        return self.dir / "transcript.jsonl"

    @property
    def graph_path(self) -> Path:
        return self.dir / "graph.sqlite"

    def writer(self) -> TranscriptWriter:
        if self._writer is None:
            from agent._version import __version__

            self._writer = TranscriptWriter(
                self.transcript_path,
                {"app_version": __version__, "session": self.id, **self._header},
                self._redactor,
                resume=self.resume,
            )
        return self._writer

    def recorded(self, text: str) -> str:
        """``text`` (a target URI) as this session's transcript records it."""
        return self._redactor.text(text)

    def sanitize(self, fact: Fact) -> Fact:
        """``fact`` as this session's transcript would store it (redacted)."""
        from agent.model.facts import Fact

        content = fact.model_dump(mode="json", exclude={"id", "digest"})
        return Fact.model_validate(self._redactor.any(content))

    def record(self, event: dict[str, Any]) -> None:
        """Write a non-command event (a fact, a verdict, a plan) to the transcript."""
        self.writer().write(event)

    def target(self, uri: str, *, redact_results: bool = True) -> RecordingTransport:
        """The target ``uri`` names, recorded into this session's transcript."""
        target = open_target(uri, ssh=self.ssh, pool=self._pool)
        self._targets.append(target)
        return RecordingTransport(target, self.writer(), redact_results=redact_results)

    def close(self) -> None:
        for transport in self._pool.values():
            transport.close()
        if self._writer is not None:
            self._writer.close()
            (self.dir / "redaction.json").write_text(json.dumps(self._redactor.export()))
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # the flock goes with the descriptor
            self._lock_fd = None


def _first_error(exc: Exception) -> str:
    """What is wrong with ``session.json``, in one line: pydantic's own first line only
    counts the errors ("1 validation error for SessionConfig"), so say the first of
    them (where the JSON breaks off, or the field and why) and how many more there are."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError) or not exc.errors():
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    first, *rest = exc.errors()
    where = ".".join(str(part) for part in first["loc"])
    said = f"field {where}: {first['msg']}" if where else first["msg"]
    if rest:
        said += f" (and {len(rest)} more error{'s' if len(rest) > 1 else ''})"
    return said


def _as_saved(config: SessionConfig) -> SessionConfig:
    """``config`` as ``session.json`` keeps it: the target's host a pseudonym and the
    target sealed, so a session directory names no host and ``resume`` still finds it."""
    from tools.pseudonym import host_names

    names = host_names()
    shown = names.uri(config.target)
    if shown == config.target:
        return config
    return config.model_copy(update={"target": shown, "target_sealed": names.seal(config.target)})


def ssh_dict(options: SSHOptions) -> dict[str, Any]:
    return dataclasses.asdict(options)
