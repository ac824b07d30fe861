"""A session (``agent.sessions.session``): its id, its state directory and what it keeps
there (``session.json`` naming no host, the ledger, the redaction numbering), reopened
for ``resume`` with a one-line error for each way it cannot be, and its lock."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from agent.graph.wiring import open_checkpoints
from agent.model.facts import Fact
from agent.sessions.config import SessionConfig
from agent.sessions.session import Session, new_session_id, ssh_dict
from tools.errors import ConfigError, UsageError
from tools.transport import SSHOptions

SID = "20261130-021500-ab12"


def test_a_new_session_id_is_a_utc_stamp_and_four_hex_digits() -> None:
    """An id reads as date, time and a short random suffix, the form ``reopen`` accepts."""
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", new_session_id())


def test_a_session_without_a_config_writes_nothing_until_used(tmp_path: Path) -> None:
    """Opening a session object creates no directory; its files are named under
    ``<root>/<id>/``; its ledger is one object, opened on first use."""
    session = Session(SID, root=tmp_path)
    assert session.dir == tmp_path / SID and not session.dir.exists()
    assert session.transcript_path == tmp_path / SID / "transcript.jsonl"
    assert session.graph_path == tmp_path / SID / "graph.sqlite"
    assert session.ledger is session.ledger and len(session.ledger) == 0


def test_a_local_target_is_saved_as_it_is_and_reopened(tmp_path: Path) -> None:
    """A session created for a target without a host saves it unsealed; reopening reads
    back the same config and holds the session's lock with this process's pid."""
    config = SessionConfig(command="diagnose", target="local", baseline="good")
    session = Session.create(config, root=tmp_path)
    saved = json.loads((session.dir / "session.json").read_text())
    assert (saved["target"], saved["target_sealed"], saved["baseline"]) == ("local", None, "good")
    again = Session.reopen(session.id, root=tmp_path)
    try:
        assert again.config == config and again.resume
        assert (again.dir / "session.lock").read_text() == f"{os.getpid()}\n"
    finally:
        again.close()


def test_a_hosts_name_is_never_written_to_session_json_yet_resume_gets_it_back(
    tmp_path: Path,
) -> None:
    """``session.json`` names the target's host by its pseudonym and keeps the target
    sealed; the host's name appears nowhere in it, and reopening unseals the real target."""
    target = "ssh://root@gpu-node-7:2222/pct:200"
    session = Session.create(SessionConfig(command="diagnose", target=target), root=tmp_path)
    text = (session.dir / "session.json").read_text()
    assert "gpu-node-7" not in text
    saved = json.loads(text)
    assert re.fullmatch(r"ssh://root@host-[0-9a-f]{12}:2222/pct:200", saved["target"])
    assert saved["target_sealed"]
    again = Session.reopen(session.id, root=tmp_path)
    try:
        assert again.config is not None
        assert (again.config.target, again.config.target_sealed) == (target, None)
    finally:
        again.close()


def test_what_a_session_records_of_a_target_hides_its_host(tmp_path: Path) -> None:
    """The text a session records for a target names its host by a numbered placeholder;
    the same host is the same placeholder every time."""
    session = Session(SID, root=tmp_path, redact_hosts=["gpu-node-7"])
    assert session.recorded("ssh://gpu-node-7/pct:200") == "ssh://[REDACTED-HOST-1]/pct:200"
    assert session.recorded("ssh://gpu-node-7") == "ssh://[REDACTED-HOST-1]"


def test_a_fact_is_sanitized_as_the_transcript_would_store_it(tmp_path: Path) -> None:
    """A fact sanitized by the session has its host replaced in every field; its id is
    left to the ledger that files it."""
    session = Session(SID, root=tmp_path, redact_hosts=["gpu-node-7"])
    fact = Fact(
        id="F-1234",
        probe="host",
        target="ssh://gpu-node-7",
        value={"hostname": "gpu-node-7", "cpus": 16},
    )
    clean = session.sanitize(fact)
    assert (clean.id, clean.target) == ("", "ssh://[REDACTED-HOST-1]")
    assert clean.value == {"hostname": "[REDACTED-HOST-1]", "cpus": 16}


@pytest.mark.parametrize(
    "sid",
    ["../escape", "20261130-021500-AB12", f"{SID}\n", "20261130-0215-ab12", ""],
    ids=["path", "upper-hex", "trailing-newline", "short-time", "empty"],
)
def test_reopening_a_malformed_id_says_what_an_id_looks_like(tmp_path: Path, sid: str) -> None:
    """An id not of the form ``new_session_id`` makes is refused before any file is
    touched, with an example of one."""
    with pytest.raises(ConfigError) as caught:
        Session.reopen(sid, root=tmp_path)
    assert str(caught.value) == f"bad session id {sid!r} (expected e.g. 20261130-021500-ab12)"


def test_reopening_an_unknown_session_names_where_it_looked(tmp_path: Path) -> None:
    """A well-formed id with no saved session is one line naming the id and the folder."""
    with pytest.raises(ConfigError) as caught:
        Session.reopen(SID, root=tmp_path)
    assert str(caught.value) == f"no session {SID} under {tmp_path}"


@pytest.mark.parametrize(
    "text",
    ['{"command": "diagnose"', '{"command": "diagnose"}', '{"command": 1, "target": "local"}'],
    ids=["cut-json", "no-target", "command-not-text"],
)
def test_an_unreadable_session_json_is_one_line_naming_the_file(tmp_path: Path, text: str) -> None:
    """A ``session.json`` that is not a session config is refused in one line: its path,
    that it is unreadable, and why (``test_an_unreadable_session_json_says_what_is_wrong_with_it``
    has each why)."""
    path = tmp_path / SID / "session.json"
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        Session.reopen(SID, root=tmp_path)
    said = str(caught.value)
    assert said.startswith(f"{path}: unreadable session: ") and "\n" not in said


def test_a_damaged_checkpoint_database_stops_a_resume_before_anything_is_written(
    tmp_path: Path,
) -> None:
    """Reopening reads the saved state first: a ``graph.sqlite`` that is no database is
    refused in one line naming it, and the transcript is left untouched."""
    session = Session.create(SessionConfig(command="diagnose", target="local"), root=tmp_path)
    session.graph_path.write_bytes(b"not a database, just bytes" * 10)
    with pytest.raises(ConfigError) as caught:
        Session.reopen(session.id, root=tmp_path)
    assert str(caught.value) == (
        f"{session.graph_path}: not a usable graph checkpoint database: file is not a database"
    )
    assert not session.transcript_path.exists()
    open_checkpoints(tmp_path / "fresh" / "graph.sqlite").close()  # a new one opens


@pytest.mark.parametrize(
    ("saved", "why"),
    [
        ("{not json", "Expecting property name enclosed in double quotes"),
        ("[1, 2]", "'list' object has no attribute 'get'"),
    ],
    ids=["not-json", "not-a-mapping"],
)
def test_a_resumed_session_refuses_a_redaction_state_it_cannot_read(
    tmp_path: Path, saved: str, why: str
) -> None:
    """Resuming without the redaction numbering would name one secret twice: an
    unreadable ``redaction.json`` stops it, in one line naming the file."""
    path = tmp_path / SID / "redaction.json"
    path.parent.mkdir()
    path.write_text(saved)
    with pytest.raises(ConfigError) as caught:
        Session(SID, root=tmp_path, resume=True)
    assert str(caught.value).startswith(f"{path}: unreadable redaction state: {why}")


def test_the_redaction_numbering_survives_a_resume(tmp_path: Path) -> None:
    """A session closed after recording saves its placeholders' numbering; resumed, the
    same host keeps its number and a new one gets the next."""
    first = Session(SID, root=tmp_path, redact_hosts=["alpha"])
    first.record({"type": "note", "where": first.recorded("ssh://alpha")})
    first.close()
    again = Session(SID, root=tmp_path, redact_hosts=["alpha", "beta"], resume=True)
    assert again.recorded("ssh://beta") == "ssh://[REDACTED-HOST-2]"
    assert again.recorded("ssh://alpha") == "ssh://[REDACTED-HOST-1]"


def test_a_session_held_is_refused_to_a_second_holder_until_closed(tmp_path: Path) -> None:
    """While one holder has the session's lock a second is refused in one line naming the
    pid in the lock; once the first closes, the second may hold it."""
    first = Session(SID, root=tmp_path)
    first.dir.mkdir(parents=True)
    first.hold()
    second = Session(SID, root=tmp_path)
    with pytest.raises(UsageError) as caught:
        second.hold()
    assert str(caught.value) == (
        f"session {SID} is in use by another dflash-doctor process (pid {os.getpid()}): "
        "wait for it to end, then resume"
    )
    first.close()
    second.hold()
    second.close()


def test_ssh_options_come_from_the_call_else_the_config(tmp_path: Path) -> None:
    """SSH options given to the session win; otherwise the config's are used; without
    either there are none. Saved as a plain mapping, they build the same options again."""
    config = SessionConfig(command="exec", target="local", ssh={"retries": 1})
    assert Session(SID, root=tmp_path / "a", config=config).ssh == SSHOptions(retries=1)
    given = SSHOptions(connect_timeout=3.0, identity_file="/keys/id")
    assert Session(SID, root=tmp_path / "b", config=config, ssh=given).ssh is given
    assert Session(SID, root=tmp_path / "c").ssh is None
    saved = ssh_dict(given)
    assert (saved["connect_timeout"], saved["identity_file"], saved["retries"]) == (
        3.0,
        "/keys/id",
        3,
    )
    assert SSHOptions(**saved) == given


def test_a_reopen_that_fails_on_its_saved_state_lets_go_of_the_lock(tmp_path: Path) -> None:
    """A reopen refused for a damaged ``graph.sqlite`` releases the session's lock: once
    the file is gone, the same process reopens the session and holds the lock again."""
    session = Session.create(SessionConfig(command="diagnose", target="local"), root=tmp_path)
    session.graph_path.write_bytes(b"not a database, just bytes" * 10)
    with pytest.raises(ConfigError):
        Session.reopen(session.id, root=tmp_path)
    session.graph_path.unlink()
    again = Session.reopen(session.id, root=tmp_path)
    try:
        assert (again.dir / "session.lock").read_text() == f"{os.getpid()}\n"
    finally:
        again.close()


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"command": "diagnose"', "Invalid JSON: EOF while parsing an object at line 1 column 22"),
        ("", "Invalid JSON: EOF while parsing a value at line 1 column 0"),
        ('{"command": "diagnose"}', "field target: Field required"),
        ('{"command": 1, "target": "local"}', "field command: Input should be a valid string"),
        ("{}", "field command: Field required (and 1 more error)"),
        (
            '{"command": "x", "target": "local", "spec": {"bogus": 1}}',
            "field spec.bogus: Extra inputs are not permitted",
        ),
        ("[1]", "Input should be a valid dictionary or instance of SessionConfig"),
    ],
    ids=["cut-json", "empty", "no-target", "command-not-text", "two-missing", "nested", "list"],
)
def test_an_unreadable_session_json_says_what_is_wrong_with_it(
    tmp_path: Path, text: str, why: str
) -> None:
    """An unreadable ``session.json`` is one line naming the error itself: where the
    JSON breaks off, or the field that is missing or wrong and why (with how many more
    errors there are), never only pydantic's count of them."""
    path = tmp_path / SID / "session.json"
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        Session.reopen(SID, root=tmp_path)
    assert str(caught.value) == f"{path}: unreadable session: {why}"
