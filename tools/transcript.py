"""Transcripts: one JSON object per line (a header, the events, a seal), hash-chained and
signed.

Each line after the header carries ``prev``, the sha256 of the line before it exactly as
written, so an edited, dropped or reordered line breaks the chain at a line we can name.
The chain alone proves little: whoever edits a line can re-chain the lines after it, and
a line appended with the right ``prev``, or a file cut after any line, still chains. So
``close`` ends the file with a seal, always its last line::

    {"type": "seal", "prev": <sha256 of the line before>, "events": N,
     "sha256": <sha256 of every byte before the seal line>, "key_id": <16 hex digits>,
     "sealed_at": <UTC time>, "hmac": <HMAC-SHA256 with this installation's key
     (tools.signing) of the seal line as written without its "hmac">}

``read_sealed`` (replay, report) requires it. Without a key it tells that a file ending
in no seal was cut short, its writer killed, or written before transcripts were sealed;
that a line after the seal was appended; that a seal which does not match the bytes
before it, or is not byte for byte as written, was edited. So much holds for any edit
that was not followed by recomputing the chain and the seal's digests. One that was is
caught by the HMAC alone, so only where this installation's key is: elsewhere the seal
is reported as signed by the key it names, unchecked (``SealCheck``).

``read_transcript`` checks the same chain, and the seal where there is one, but needs
none: a session reads its own transcript while it is still being written.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal

from tools.errors import TranscriptError
from tools.localfile import read_regular
from tools.redact import Redactor
from tools.signing import TranscriptKey, installation_key
from tools.text import json_text

FORMAT = "dflash-doctor-transcript"
VERSION = 1
SEAL = "seal"
_SEAL_FIELDS = frozenset({"type", "prev", "events", "sha256", "key_id", "sealed_at", "hmac"})
# What the writer puts around every event's own content: its kind, its number, the chain.
ENVELOPE = frozenset({"type", "seq", "prev"})
# Written by the writer itself, never as an event: an event of these types would read as
# a second header or a premature seal.
_RESERVED = frozenset({"header", SEAL})

Signer = Literal["this installation", "another installation", "no key here"]


def _line(obj: dict[str, Any]) -> str:
    return json_text(obj, sort_keys=True, separators=(",", ":"))


def _sha(line: str) -> str:
    return hashlib.sha256(line.encode()).hexdigest()


def _joined(lines: list[str]) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


@dataclass(frozen=True)
class SealCheck:
    """Who a whole, sealed transcript says signed it, and whether that was checked here."""

    key_id: str
    signed_by: Signer
    own_key_id: str | None = None

    @property
    def checked(self) -> bool:
        return self.signed_by == "this installation"

    @property
    def sentence(self) -> str:
        if self.signed_by == "this installation":
            return f"sealed and signed by this installation (key id {self.key_id})"
        if self.signed_by == "another installation":
            return (
                "sealed; signature not checked: signed by another installation "
                f"(key id {self.key_id}; this one's is {self.own_key_id})"
            )
        return (
            "sealed; signature not checked: this installation has no transcript key "
            f"(signed with key id {self.key_id})"
        )

    def as_json(self) -> dict[str, Any]:
        return {"key_id": self.key_id, "signed_by": self.signed_by, "checked": self.checked}


@dataclass(frozen=True)
class Sealed:
    header: dict[str, Any]
    events: list[dict[str, Any]]
    seal: SealCheck


@dataclass(frozen=True)
class _Parsed:
    header: dict[str, Any]
    events: list[dict[str, Any]]
    lines: list[str]  # every line before the seal, as written
    seal: dict[str, Any] | None
    count: int  # lines in the file, the seal's included


def _seal_message(seal: dict[str, Any]) -> bytes:
    return _line({k: v for k, v in seal.items() if k != "hmac"}).encode()


def _seal_line(lines: list[str], key: TranscriptKey) -> str:
    seal: dict[str, Any] = {
        "type": SEAL,
        "prev": _sha(lines[-1]),
        "events": len(lines) - 1,
        "sha256": hashlib.sha256(_joined(lines)).hexdigest(),
        "key_id": key.key_id,
        "sealed_at": datetime.now(UTC).isoformat(),
    }
    seal["hmac"] = key.sign(_seal_message(seal))
    return _line(seal)


class TranscriptWriter:
    """Appends events to a new transcript file; each line is flushed as it is written so a
    crash loses at most the event being written (and the file then reads as not sealed).

    Everything is redacted before it is written (strings, and stdout/stderr bytes, which
    events hand over as ``bytes`` and which are stored base64-encoded). ``close`` puts the
    redaction counts into the header, re-chains the file and seals it.

    ``resume`` continues the transcript of a session that was paused or interrupted. A
    sealed one is continued only when this installation's key checks its seal (else a
    resume would put a good seal on a file changed since); the seal is then cut off, and
    the one ``close`` writes covers the whole file again. Until then the file reads as not
    sealed, which is the truth if the resumed process dies too. An unsealed one (its
    writer was killed) is continued from its last whole line: its chain is checked, and
    whoever could have edited it unseen could also have read the key beside it.
    """

    def __init__(
        self,
        path: Path,
        header: dict[str, Any],
        redactor: Redactor | None = None,
        *,
        resume: bool = False,
        key: TranscriptKey | None = None,
    ) -> None:
        self.path = path
        self.redactor = redactor or Redactor()
        # Found (or made) before anything is recorded: a key file that must be refused
        # stops a session before its first command, not after its last.
        self.key = key or installation_key()
        path.parent.mkdir(parents=True, exist_ok=True)
        if resume and os.path.lexists(path):
            self._fh: IO[str] = self._reopen()
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

    def _reopen(self) -> IO[str]:
        parsed = _parse(self.path)
        if parsed.seal is not None:
            _signature(self.path, parsed.count, parsed.seal, self.key, required=True)
            os.truncate(self.path, len(_joined(parsed.lines)))
        self._seq = len(parsed.events)
        self._prev = _sha(parsed.lines[-1])
        return self.path.open("a", encoding="utf-8")

    def redact_bytes(self, data: bytes) -> bytes:
        return self.redactor.data(data)

    def write(self, event: dict[str, Any]) -> None:
        if event.get("type") in _RESERVED:
            raise ValueError(f"an event of type {event['type']!r}: only the writer writes one")
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
        # Read back through the checks: a file changed under a running session is not
        # sealed as if it were the session's own.
        parsed = _parse(self.path)
        header = dict(parsed.header)
        header["redacted"] = dict(sorted(self.redactor.counts.items()))
        rechained = [_line(header)]
        for line in parsed.lines[1:]:
            event = json.loads(line)
            event["prev"] = _sha(rechained[-1])
            rechained.append(_line(event))
        rechained.append(_seal_line(rechained, self.key))
        tmp = self.path.with_suffix(".tmp")
        with tmp.open("wb") as fh:
            fh.write(_joined(rechained))
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(self.path)
        _sync_dir(self.path.parent)


def _sync_dir(path: Path) -> None:
    """Make the rename itself durable: without it a crash can bring back the unsealed file."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_transcript(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Read and verify a transcript, sealed or still being written; any defect raises
    ``TranscriptError`` naming the line. The seal is not among the events."""
    parsed = _parse(path)
    return parsed.header, parsed.events


def read_sealed(
    path: Path, key: TranscriptKey | None, *, require_signature: bool = False
) -> Sealed:
    """Read a transcript that must be whole: verified, and ending in its seal, whose
    signature is checked with ``key`` (this installation's, or ``None`` where it has
    none). A signature that ``key`` cannot check is said so in ``seal``, or refused
    with ``require_signature``."""
    parsed = _parse(path)
    if parsed.seal is None:
        raise TranscriptError(
            f"{path}:{parsed.count}: not sealed: the file ends without its seal (cut short, "
            "its writer killed, or written before transcripts were sealed)"
        )
    check = _signature(path, parsed.count, parsed.seal, key, required=require_signature)
    return Sealed(header=parsed.header, events=parsed.events, seal=check)


def _signature(
    path: Path, number: int, seal: dict[str, Any], key: TranscriptKey | None, *, required: bool
) -> SealCheck:
    if key is None:
        check = SealCheck(seal["key_id"], "no key here")
    elif seal["key_id"] != key.key_id:
        check = SealCheck(seal["key_id"], "another installation", key.key_id)
    elif not key.verify(_seal_message(seal), seal["hmac"]):
        raise TranscriptError(
            f"{path}:{number}: seal signature does not match this installation's key "
            f"(key id {key.key_id}): the transcript was changed after it was sealed"
        )
    else:
        return SealCheck(seal["key_id"], "this installation", key.key_id)
    if required:
        raise TranscriptError(
            f"{path}: {check.sentence}; a signature by this installation is required"
        )
    return check


def _parse(path: Path) -> _Parsed:
    try:
        text = read_regular(path).decode("utf-8")
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read transcript: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    if not text:
        raise TranscriptError(f"{path}: empty transcript")
    if not text.endswith("\n"):
        raise TranscriptError(f"{path}: truncated: last line has no newline (cut while writing?)")
    # Lines end at "\n" alone: str.splitlines() also ends one at U+2028, U+0085 and their
    # kin, which JSON written with ensure_ascii=False keeps as they are inside a string.
    raw = text[:-1].split("\n")
    header: dict[str, Any] | None = None
    events: list[dict[str, Any]] = []
    lines: list[str] = []
    seal: dict[str, Any] | None = None
    prev = ""
    digest = hashlib.sha256()
    for number, (line, obj) in enumerate(_objects(path, raw), start=1):
        if header is None:
            if obj.get("type") != "header" or obj.get("format") != FORMAT:
                raise TranscriptError(f"{path}:{number}: not a {FORMAT} header")
            if obj.get("version") != VERSION:
                raise TranscriptError(
                    f"{path}:{number}: transcript version {obj.get('version')!r}, "
                    f"this app reads version {VERSION}"
                )
            header = obj
        elif obj.get("type") == SEAL:
            if number != len(raw):
                raise TranscriptError(
                    f"{path}:{number + 1}: a line after the seal (added after the transcript "
                    "was sealed)"
                )
            _check_seal(path, number, line, obj, prev, len(events), digest.hexdigest())
            seal = obj
            break
        else:
            if obj.get("prev") != prev:
                raise TranscriptError(_chain_broken(path, number))
            if obj.get("seq") != len(events) + 1:
                raise TranscriptError(
                    f"{path}:{number}: event seq {obj.get('seq')!r}, expected {len(events) + 1}"
                )
            if not isinstance(obj.get("type"), str):
                raise TranscriptError(f"{path}:{number}: event has no type")
            events.append(obj)
        lines.append(line)
        prev = _sha(line)
        digest.update(f"{line}\n".encode())
    assert header is not None  # the first line is a header or has raised
    return _Parsed(header=header, events=events, lines=lines, seal=seal, count=len(raw))


def _chain_broken(path: Path, number: int) -> str:
    return (
        f"{path}:{number}: hash chain broken (line edited, removed or reordered at or "
        "before this one)"
    )


def _check_seal(
    path: Path,
    number: int,
    line: str,
    seal: dict[str, Any],
    prev: str,
    events: int,
    digest: str,
) -> None:
    where = f"{path}:{number}"
    if (
        set(seal) != _SEAL_FIELDS
        or not all(isinstance(seal[k], str) for k in _SEAL_FIELDS - {"events"})
        or type(seal["events"]) is not int
    ):
        raise TranscriptError(f"{where}: malformed seal (not as this app writes one)")
    if seal["prev"] != prev:
        raise TranscriptError(_chain_broken(path, number))
    if line != _line(seal):
        raise TranscriptError(f"{where}: seal edited (not byte for byte as it was written)")
    if seal["events"] != events:
        raise TranscriptError(
            f"{where}: the seal counts {seal['events']} events, the file holds {events}"
        )
    if seal["sha256"] != digest:
        raise TranscriptError(
            f"{where}: the seal does not match the lines before it (changed after sealing)"
        )


def _objects(path: Path, raw: list[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    for number, line in enumerate(raw, start=1):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TranscriptError(
                f"{path}:{number}: bad JSON: {exc.msg} (column {exc.colno})"
            ) from None
        except RecursionError:
            raise TranscriptError(f"{path}:{number}: bad JSON: nested too deeply") from None
        if not isinstance(obj, dict):
            raise TranscriptError(f"{path}:{number}: event is not a JSON object")
        yield line, obj
