"""Transcripts: one JSON object per line, a header first, then events, hash-chained.

Each line after the header carries ``prev``, the sha256 of the line before it exactly as
written, so an edited, dropped or reordered line breaks the chain at a line we can name.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from tools.errors import TranscriptError
from tools.localfile import read_regular
from tools.redact import Redactor

FORMAT = "dflash-doctor-transcript"
VERSION = 1


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _sha(line: str) -> str:
    return hashlib.sha256(line.encode()).hexdigest()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


class TranscriptWriter:
    """Appends events to a new transcript file; each line is flushed as it is written so a
    crash loses at most the event being written.

    Everything is redacted before it is written (strings, and stdout/stderr bytes, which
    events hand over as ``bytes`` and which are stored base64-encoded). ``close`` puts the
    redaction counts into the header and re-chains the file; a transcript whose session
    died before that has no counts, and says so by their absence.
    """

    def __init__(
        self,
        path: Path,
        header: dict[str, Any],
        redactor: Redactor | None = None,
        *,
        resume: bool = False,
    ) -> None:
        self.path = path
        self.redactor = redactor or Redactor()
        path.parent.mkdir(parents=True, exist_ok=True)
        if resume and path.exists():
            # Continue the chain of a session that was interrupted (or paused for approval).
            _, events = read_transcript(path)
            self._seq = len(events)
            self._prev = _sha(path.read_text(encoding="utf-8").splitlines()[-1])
            self._fh: IO[str] = path.open("a", encoding="utf-8")
            return
        try:
            self._fh = path.open("x", encoding="utf-8")
        except FileExistsError:
            raise TranscriptError(f"{path}: transcript exists already; not overwriting") from None
        self._seq = 0
        first = {
            "type": "header",
            "format": FORMAT,
            "version": VERSION,
            "started_at": datetime.now(UTC).isoformat(),
            **self._clean(header),
        }
        self._prev = self._emit(first)

    def redact_bytes(self, data: bytes) -> bytes:
        return self.redactor.data(data)

    def write(self, event: dict[str, Any]) -> None:
        self._seq += 1
        self._prev = self._emit({**self._clean(event), "seq": self._seq, "prev": self._prev})

    def _clean(self, event: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in event.items():
            if isinstance(value, bytes):
                out[key] = b64(self.redactor.data(value))
            else:
                out[key] = self.redactor.any(value)
        return out

    def _emit(self, obj: dict[str, Any]) -> str:
        line = _line(obj)
        self._fh.write(line + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        return _sha(line)

    def close(self) -> None:
        if self._fh.closed:
            return
        self._fh.close()
        lines = self.path.read_text(encoding="utf-8").splitlines()
        header = json.loads(lines[0])
        header["redacted"] = dict(sorted(self.redactor.counts.items()))
        rechained = [_line(header)]
        for line in lines[1:]:
            event = json.loads(line)
            event["prev"] = _sha(rechained[-1])
            rechained.append(_line(event))
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text("".join(f"{line}\n" for line in rechained), encoding="utf-8")
        tmp.replace(self.path)


def read_transcript(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Read and verify a transcript; any defect raises ``TranscriptError`` naming the line."""
    try:
        text = read_regular(path).decode("utf-8")
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read transcript: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    if text and not text.endswith("\n"):
        raise TranscriptError(f"{path}: truncated: last line has no newline (cut while writing?)")
    header: dict[str, Any] | None = None
    events: list[dict[str, Any]] = []
    prev = ""
    for number, (line, obj) in enumerate(_parsed(path, text), start=1):
        if header is None:
            if obj.get("type") != "header" or obj.get("format") != FORMAT:
                raise TranscriptError(f"{path}:{number}: not a {FORMAT} header")
            if obj.get("version") != VERSION:
                raise TranscriptError(
                    f"{path}:{number}: transcript version {obj.get('version')!r}, "
                    f"this app reads version {VERSION}"
                )
            header = obj
        else:
            if obj.get("prev") != prev:
                raise TranscriptError(
                    f"{path}:{number}: hash chain broken (line edited, removed or reordered "
                    "at or before this one)"
                )
            if obj.get("seq") != len(events) + 1:
                raise TranscriptError(
                    f"{path}:{number}: event seq {obj.get('seq')!r}, expected {len(events) + 1}"
                )
            events.append(obj)
        prev = _sha(line)
    if header is None:
        raise TranscriptError(f"{path}: empty transcript")
    return header, events


def _parsed(path: Path, text: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TranscriptError(
                f"{path}:{number}: bad JSON: {exc.msg} (column {exc.colno})"
            ) from None
        if not isinstance(obj, dict):
            raise TranscriptError(f"{path}:{number}: event is not a JSON object")
        yield line, obj
