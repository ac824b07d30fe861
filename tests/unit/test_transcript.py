"""Transcript files: hash-chained JSON lines; every defect is named with its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.errors import TranscriptError
from tools.transcript import TranscriptWriter, read_transcript


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    writer = TranscriptWriter(path, {"target": "local"})
    for n in range(4):
        writer.write({"type": "note", "n": n})
    writer.close()
    return path


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


def test_round_trip(transcript: Path) -> None:
    """A transcript reads back with its header and every event, in order."""
    header, events = read_transcript(transcript)
    assert header["format"] == "dflash-doctor-transcript"
    assert [e["n"] for e in events] == [0, 1, 2, 3]


def test_never_overwrites(transcript: Path) -> None:
    """Recording refuses to write over an existing transcript."""
    with pytest.raises(TranscriptError, match="exists already"):
        TranscriptWriter(transcript, {})


def test_edited_event_breaks_the_chain_at_the_next_line(transcript: Path) -> None:
    """An event edited in place is caught: the hash chain breaks at the line after it, and the error
    names that line."""
    text = lines(transcript)
    event = json.loads(text[2])
    event["n"] = 99
    text[2] = json.dumps(event, sort_keys=True, separators=(",", ":")) + "\n"
    transcript.write_text("".join(text))
    with pytest.raises(TranscriptError, match=r":4: hash chain broken"):
        read_transcript(transcript)


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda t: t[:2] + t[3:], r":3: hash chain broken"),  # deleted
        (lambda t: [t[0], t[2], t[1], *t[3:]], r":2: hash chain broken"),  # reordered
        (lambda t: [*t[:-1], t[-1][:-9]], "truncated"),  # cut mid-line
        (lambda t: [*t[:2], "{not json\n", *t[2:]], r":3: bad JSON"),
        (lambda t: [t[0].replace('"version":1', '"version":7'), *t[1:]], "version 7"),
        (lambda t: t[1:], r":1: not a dflash-doctor-transcript header"),
        (lambda t: [], "empty transcript"),
    ],
)
def test_defects_are_named(transcript: Path, mangle: object, message: str) -> None:
    """A deleted, reordered, cut or garbled line, an unknown version, a missing header or an empty
    file is refused, naming the file and, where there is one, the line."""
    transcript.write_text("".join(mangle(lines(transcript))))  # type: ignore[operator]
    with pytest.raises(TranscriptError, match=message) as info:
        read_transcript(transcript)
    assert str(transcript) in str(info.value)


def test_unreadable_file(tmp_path: Path) -> None:
    """A transcript file that is not there is one error saying it cannot be read."""
    with pytest.raises(TranscriptError, match="cannot read transcript"):
        read_transcript(tmp_path / "missing.jsonl")
