"""Recording writes every command to the transcript; replay answers them with no machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.errors import CommandTimeout, NotRecorded
from tools.transcript import TranscriptWriter, read_transcript
from tools.transport import LocalTransport, Target
from tools.transport.record import RecordingTransport, ReplayTransport


def record(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    writer = TranscriptWriter(path, {"target": "local"})
    recording = RecordingTransport(Target(LocalTransport()), writer)
    recording.run(["sh", "-c", "printf 'one\\377'; exit 3"])
    recording.run(["cat"], stdin=b"stdin-a")
    recording.run(["cat"], stdin=b"stdin-b")
    recording.run(["sh", "-c", "echo $RANDOM"])
    recording.run(["sh", "-c", "echo $RANDOM"])
    with pytest.raises(CommandTimeout):
        recording.run(["sleep", "5"], timeout=0.2)
    writer.close()
    return path


def test_replay_returns_the_recorded_bytes_and_codes(tmp_path: Path) -> None:
    """Same (target, argv, stdin digest) -> the recorded stdout, stderr and exit code,
    repeated commands answered in recorded order, recorded failures raised again."""
    path = record(tmp_path)
    header, events = read_transcript(path)
    assert header["target"] == "local"
    replay = ReplayTransport(events, "local")
    first = replay.run(["sh", "-c", "printf 'one\\377'; exit 3"])
    assert (first.rc, first.stdout) == (3, b"one\xff")
    assert replay.run(["cat"], stdin=b"stdin-b").stdout == b"stdin-b"
    assert replay.run(["cat"], stdin=b"stdin-a").stdout == b"stdin-a"
    random_events = [e for e in events if e.get("argv") == ["sh", "-c", "echo $RANDOM"]]
    first_random = replay.run(["sh", "-c", "echo $RANDOM"]).stdout
    second_random = replay.run(["sh", "-c", "echo $RANDOM"]).stdout
    assert [first_random, second_random] == [
        __import__("base64").b64decode(e["stdout"]) for e in random_events
    ]
    with pytest.raises(CommandTimeout):
        replay.run(["sleep", "5"], timeout=0.2)


@pytest.mark.parametrize(
    ("argv", "stdin", "why"),
    [
        (["sh", "-c", "echo $RANDOM"], None, "asked more often than recorded"),
        (["cat"], b"stdin-c", "recorded with other stdin"),
        (["ls", "/"], None, "not in the transcript"),
    ],
)
def test_replay_fails_loudly_on_anything_unrecorded(
    tmp_path: Path, argv: list[str], stdin: bytes | None, why: str
) -> None:
    """Replay refuses a command asked more often than recorded, with other stdin, or never recorded,
    saying which, rather than inventing an answer."""
    _, events = read_transcript(record(tmp_path))
    replay = ReplayTransport(events, "local")
    replay.run(["sh", "-c", "echo $RANDOM"])
    replay.run(["sh", "-c", "echo $RANDOM"])
    with pytest.raises(NotRecorded, match=why):
        replay.run(argv, stdin=stdin)


def test_replay_is_per_target(tmp_path: Path) -> None:
    """A command recorded on one target does not answer for another."""
    _, events = read_transcript(record(tmp_path))
    with pytest.raises(NotRecorded):
        ReplayTransport(events, "ssh://elsewhere").run(["cat"], stdin=b"stdin-a")
