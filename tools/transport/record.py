"""Recording and replay: every command that crosses a target goes into the transcript,
and a replay answers the same (target, argv, stdin digest) from it with no machine."""

from __future__ import annotations

import dataclasses
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from typing import Any

from tools import errors
from tools.errors import NotRecorded, TransportError
from tools.transcript import TranscriptWriter, unb64
from tools.transport.base import CommandResult, Transport, stdin_key

Key = tuple[str, tuple[str, ...], str]


class RecordingTransport:
    """Records every command. With ``redact_results`` the caller gets the output and the
    target's name as the transcript stores them (redacted), so facts made from them are the
    ones a replay makes — and the ledger on disk holds nothing the transcript hides.
    ``exec`` turns it off: it prints the command's own bytes."""

    def __init__(
        self, inner: Transport, writer: TranscriptWriter, *, redact_results: bool = True
    ) -> None:
        self.inner = inner
        self.writer = writer
        self.name = inner.name
        self.redact_results = redact_results

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        # stdin itself is not stored (a probe bundle is large, and it is this app's own
        # code); its key is, so a replay can tell it is being asked the same question.
        base = {"target": self.name, "argv": list(argv), "stdin_digest": stdin_key(stdin)}
        try:
            result = self.inner.run(argv, stdin=stdin, timeout=timeout)
        except TransportError as exc:
            self.writer.write(
                {**base, "type": "command_error", "error": type(exc).__name__, "message": str(exc)}
            )
            raise
        self.writer.write(
            {
                **base,
                "type": "command",
                "rc": result.rc,
                "stdout": result.stdout,
                "stderr": result.stderr,
                "duration": round(result.duration, 6),
            }
        )
        if self.redact_results:
            result = dataclasses.replace(
                result,
                stdout=self.writer.redact_bytes(result.stdout),
                stderr=self.writer.redact_bytes(result.stderr),
                # The target as the transcript names it: every fact cites it, and an SSH
                # config alias ("ssh://trainbox") is a host name (issue 14).
                target=self.writer.redactor.text(result.target),
            )
        return result

    def close(self) -> None:
        self.inner.close()


class ReplayTransport:
    """Answers from recorded events, in recorded order per key; anything else is loud."""

    def __init__(self, events: Iterable[dict[str, Any]], name: str) -> None:
        self.name = name
        self._answers: dict[Key, deque[dict[str, Any]]] = defaultdict(deque)
        for event in events:
            if event.get("type") in ("command", "command_error"):
                key = (event["target"], tuple(event["argv"]), event["stdin_digest"])
                self._answers[key].append(event)

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        timeout: float | None = None,
    ) -> CommandResult:
        key = (self.name, tuple(argv), stdin_key(stdin))
        queue = self._answers.get(key)
        if not queue:
            other = [k[2][:12] for k in self._answers if k[:2] == key[:2] and k[2] != key[2]]
            if other:
                raise NotRecorded(
                    f"{list(argv)!r} was recorded with other stdin (sha256 {', '.join(other)}, "
                    f"now {key[2][:12]}): the probe bundle or its spec changed since recording",
                    target=self.name,
                )
            raise NotRecorded(
                f"command not in the transcript (or asked more often than recorded): "
                f"{list(argv)!r} with stdin sha256 {key[2][:12] or 'none'}",
                target=self.name,
            )
        event = queue.popleft()
        if event["type"] == "command_error":
            cls = getattr(errors, event["error"], TransportError)
            if not (isinstance(cls, type) and issubclass(cls, TransportError)):
                cls = TransportError
            raise cls(event["message"])
        return CommandResult(
            tuple(argv),
            int(event["rc"]),
            unb64(event["stdout"]),
            unb64(event["stderr"]),
            float(event["duration"]),
            self.name,
            key[2],
        )

    def close(self) -> None:
        pass
