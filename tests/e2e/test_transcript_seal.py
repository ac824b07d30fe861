"""A transcript is sealed and signed: its last line covers every byte before it with
this installation's key (``<state dir>/transcript.key``), so a replay tells a whole file
from a cut, appended, edited or re-chained one, and says who signed it.

The transcripts are real: ``dflash-doctor diagnose`` of a (missing) workspace on this
machine. The forgeries are what someone with the file but without the key can do:
edit, re-chain every ``prev``, recompute the seal's digests. Exit codes are read from
the installed ``dflash-doctor`` run as a user runs it.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import io
import json
import multiprocessing
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.sessions.config import SessionConfig
from agent.sessions.session import Session
from tests.lib.cli import SCRIPT
from tools.errors import ConfigError, TranscriptError, UsageError
from tools.signing import KEY_BYTES, installation_key, load_key
from tools.statedir import app_state_dir, ensure_app_state_dir
from tools.transcript import TranscriptWriter, read_sealed, read_transcript

REPO = Path(__file__).resolve().parents[2]


def doctor(*args: str, state: Path) -> subprocess.CompletedProcess[str]:
    """The console script, as a user runs it; ``replay`` and ``report`` through the real
    entry point in this process instead (``in_process``): they only read a transcript,
    and a process each costs a second of imports twenty times over. ``test_cli_hostile``
    and the fuzz tests run the same commands as processes."""
    if args and args[0] in ("replay", "report"):
        code, out, err = in_process(state, *args)
        return subprocess.CompletedProcess([SCRIPT, "-q", *args], code, out, err)
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    return subprocess.run(
        [SCRIPT, "-q", *args], capture_output=True, text=True, timeout=240, env=env
    )


def canonical(obj: dict[str, Any]) -> str:
    """A line as the app writes one (what a forger copies from any transcript)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha(line: str) -> str:
    return hashlib.sha256(line.encode()).hexdigest()


def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def rechain(lines: list[str]) -> list[str]:
    """Every ``prev`` recomputed from the line before it, the seal's included."""
    out = [lines[0]]
    for line in lines[1:]:
        obj = json.loads(line)
        obj["prev"] = sha(out[-1])
        out.append(canonical(obj))
    return out


def reseal(lines: list[str], *, secret: bytes | None = None) -> list[str]:
    """The seal's digests recomputed over the lines before it. Without ``secret`` the
    old HMAC stays (a forger without the key); with one, signed with that key."""
    body = rechain(lines)[:-1]
    seal = json.loads(lines[-1])
    seal["prev"] = sha(body[-1])
    seal["events"] = len(body) - 1
    seal["sha256"] = hashlib.sha256("".join(f"{x}\n" for x in body).encode()).hexdigest()
    if secret is not None:
        import hmac

        seal["key_id"] = hashlib.sha256(secret).hexdigest()[:16]
        unsigned = canonical({k: v for k, v in seal.items() if k != "hmac"})
        seal["hmac"] = hmac.new(secret, unsigned.encode(), hashlib.sha256).hexdigest()
    return [*body, canonical(seal)]


def refused(result: subprocess.CompletedProcess[str], *words: str) -> str:
    """Exit 2, one line on stderr, no traceback, every word in it."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("dflash-doctor: error: "), lines[0]
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


class Recording:
    """One real diagnosis, recorded; each test replays its own copy of it."""

    def __init__(self, state: Path, transcript: Path) -> None:
        self.state = state
        self.transcript = transcript
        self.key = state / "dflash-doctor" / "transcript.key"
        self.key_id = hashlib.sha256(self.key.read_bytes()).hexdigest()[:16]

    def copy(self, into: Path) -> Path:
        path = into / "t.jsonl"
        shutil.copyfile(self.transcript, path)
        return path

    def state_with_key(self, into: Path) -> Path:
        """A state directory of its own holding this installation's key (same bytes)."""
        (into / "dflash-doctor").mkdir(parents=True, mode=0o700)
        shutil.copy2(self.key, into / "dflash-doctor" / "transcript.key")
        return into


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Recording:
    root = tmp_path_factory.mktemp("recording")
    state = root / "state"
    (root / "ws").mkdir()  # empty: a diagnosis of nothing to look at, quickly
    result = doctor(
        "diagnose",
        "--target",
        "local",
        "--workspace",
        str(root / "ws"),
        "--interpreter",
        sys.executable,
        "--format",
        "json",
        "--non-interactive",
        state=state,
    )
    assert result.returncode == 0, result.stderr
    session = json.loads(result.stdout)["session"]
    return Recording(state, state / "dflash-doctor" / "sessions" / session / "transcript.jsonl")


# -- whole and signed ------------------------------------------------------------------


def test_a_good_transcript_replays_0_signed_by_this_installation(
    recording: Recording, tmp_path: Path
) -> None:
    """An untouched transcript replays with exit 0, saying it is sealed and signed by this
    installation with the key id, and passes ``--require-signature``."""
    path = recording.copy(tmp_path)
    result = doctor("replay", str(path), state=recording.state)
    assert result.returncode == 0, result.stderr
    assert f"{path}: same facts, same verdicts (insufficient_evidence)" in result.stdout
    said = f"{path}: sealed and signed by this installation (key id {recording.key_id})"
    assert said in result.stdout
    as_json = doctor("replay", str(path), "--json", "--require-signature", state=recording.state)
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["seal"] == {
        "key_id": recording.key_id,
        "signed_by": "this installation",
        "checked": True,
    }
    report = doctor("report", str(path), "--format", "json", state=recording.state)
    assert report.returncode == 0, report.stderr


def test_the_key_is_made_on_first_use_private_and_then_kept(recording: Recording) -> None:
    """32 random bytes, a regular file of mode 0600; a second session signs with it."""
    st_ = os.lstat(recording.key)
    assert stat.S_ISREG(st_.st_mode) and stat.S_IMODE(st_.st_mode) == 0o600
    assert st_.st_size == KEY_BYTES
    before = recording.key.read_bytes()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_STATE_HOME", str(recording.state))
        assert installation_key().secret == before
    assert recording.key.read_bytes() == before
    # Nothing but the key is left beside it (the temporary file it was linked from).
    assert not [p for p in recording.key.parent.iterdir() if p.name.startswith(".transcript")]


def _race_for_the_key(state: str) -> str:
    os.environ["XDG_STATE_HOME"] = state
    return installation_key().key_id


def test_processes_starting_at_once_agree_on_one_key(tmp_path: Path) -> None:
    """Processes creating the installation key at once all end with the same key, and no
    stray temporary files are left beside it."""
    with multiprocessing.get_context("spawn").Pool(6) as pool:
        ids = pool.map(_race_for_the_key, [str(tmp_path)] * 12)
    assert len(set(ids)) == 1
    key = tmp_path / "dflash-doctor" / "transcript.key"
    assert hashlib.sha256(key.read_bytes()).hexdigest()[:16] == ids[0]
    assert sorted(p.name for p in key.parent.iterdir()) == ["transcript.key"]


def test_the_key_lives_in_the_state_directory_the_sessions_use(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """One directory, named by app_state_dir and made by ensure_app_state_dir, whether the
    variable is set or not; a relative one (invalid by the XDG spec) is refused by both
    in the same words, never quietly swapped for ~/.local/state."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for value in (str(tmp_path / "xdg"), None):
        if value is None:
            monkeypatch.delenv("XDG_STATE_HOME", raising=False)
        else:
            monkeypatch.setenv("XDG_STATE_HOME", value)
        assert app_state_dir() == ensure_app_state_dir()
        assert installation_key().path == ensure_app_state_dir() / "transcript.key"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/xdg")
    refusals = []
    for where in (app_state_dir, ensure_app_state_dir, installation_key):
        with pytest.raises(UsageError) as refused:
            where()
        refusals.append(str(refused.value))
    assert len(set(refusals)) == 1 and "'relative/xdg' is a relative path" in refusals[0]
    assert not (Path.cwd() / "relative").exists()


# -- what the chain alone missed ---------------------------------------------------------


def test_a_header_edited_and_rechained_is_exit_2(recording: Recording, tmp_path: Path) -> None:
    """Re-chaining after an edit used to replay clean. Now the seal's ``prev`` breaks;
    re-chained up to the seal, its digest does not match; with every digest recomputed,
    the HMAC is one this key refutes."""
    path = recording.copy(tmp_path)
    lines = read_lines(path)
    header = json.loads(lines[0])
    header["app_version"] = "0.0.forged"
    lines[0] = canonical(header)
    write_lines(path, [*rechain(lines[:-1]), lines[-1]])
    refused(doctor("replay", str(path), state=recording.state), f":{len(lines)}: hash chain broken")
    write_lines(path, rechain(lines))  # the seal's prev too
    refused(
        doctor("replay", str(path), state=recording.state),
        f":{len(lines)}: the seal does not match the lines before it",
    )
    write_lines(path, reseal(rechain(lines)))
    refused(
        doctor("replay", str(path), state=recording.state),
        f"{path}:{len(lines)}: seal signature does not match this installation's key",
    )


def test_what_no_key_can_check_is_said_and_can_be_required(
    recording: Recording, tmp_path: Path
) -> None:
    """The same forgery where this installation's key is not: whole, so it replays, and
    the output says the signature was not checked; --require-signature refuses it."""
    path = recording.copy(tmp_path)
    lines = read_lines(path)
    header = json.loads(lines[0])
    header["app_version"] = "0.0.forged"
    lines[0] = canonical(header)
    write_lines(path, reseal(rechain(lines)))
    elsewhere = tmp_path / "elsewhere"
    result = doctor("replay", str(path), state=elsewhere)
    assert result.returncode == 0, result.stderr
    assert (
        "sealed; signature not checked: this installation has no transcript key "
        f"(signed with key id {recording.key_id})"
    ) in result.stdout
    # Looked up, never made: a replay writes nothing.
    assert not (elsewhere / "dflash-doctor" / "transcript.key").exists()
    refused(
        doctor("replay", str(path), "--require-signature", state=elsewhere),
        "a signature by this installation is required",
    )


def test_a_transcript_signed_by_another_installation_is_reported(
    recording: Recording, tmp_path: Path
) -> None:
    """A transcript signed by another installation replays, saying the signature was not
    checked and whose key signed it; ``--require-signature`` refuses it."""
    other = tmp_path / "other"
    other_id = installation_key(other / "dflash-doctor").key_id
    assert other_id != recording.key_id
    path = recording.copy(tmp_path)
    result = doctor("replay", str(path), state=other)
    assert result.returncode == 0, result.stderr
    assert (
        "sealed; signature not checked: signed by another installation "
        f"(key id {recording.key_id}; this one's is {other_id})"
    ) in result.stdout
    as_json = json.loads(doctor("replay", str(path), "--json", state=other).stdout)
    assert as_json["seal"]["signed_by"] == "another installation"
    assert as_json["seal"]["checked"] is False
    refused(
        doctor("replay", str(path), "--require-signature", state=other),
        f"signed by another installation (key id {recording.key_id}",
        "a signature by this installation is required",
    )


def test_report_says_whose_signature_it_could_not_check_and_can_require_one(
    recording: Recording, tmp_path: Path
) -> None:
    """``report`` used to render a transcript re-signed with another installation's key
    as if it were this one's. Now the report itself and a warning on stderr say the
    signature was not checked, and --require-signature refuses it, as replay does."""
    other = tmp_path / "other"
    other_id = installation_key(other / "dflash-doctor").key_id
    path = recording.copy(tmp_path)
    said = (
        "sealed; signature not checked: signed by another installation "
        f"(key id {recording.key_id}; this one's is {other_id})"
    )
    for fmt in ("md", "html", "json"):
        result = doctor("report", str(path), "--format", fmt, state=other)
        assert result.returncode == 0, result.stderr
        assert f"warning: {path}: {said}; shown as recorded" in result.stderr
        shown = json.loads(result.stdout)["transcript"] if fmt == "json" else result.stdout
        assert (html.escape(said) if fmt == "html" else said) in shown, (fmt, shown[:600])
    own = doctor("report", str(path), "--format", "json", state=recording.state)
    assert own.returncode == 0 and "warning" not in own.stderr, own.stderr
    assert json.loads(own.stdout)["transcript"] == (
        f"sealed and signed by this installation (key id {recording.key_id})"
    )
    refused(
        doctor("report", str(path), "--require-signature", state=other),
        f"signed by another installation (key id {recording.key_id}",
        "a signature by this installation is required",
    )


def test_a_forged_event_appended_with_the_right_prev_is_exit_2(
    recording: Recording, tmp_path: Path
) -> None:
    """A forged event appended after the seal, even correctly chained, is refused; put
    before the seal with its digests recomputed, the HMAC refutes it."""
    path = recording.copy(tmp_path)
    lines = read_lines(path)
    last_event = json.loads(lines[-2])
    forged = {
        "type": "verdict",
        "verdict": "no_fault_found",
        "seq": last_event["seq"] + 1,
        "prev": sha(lines[-1]),
    }
    write_lines(path, [*lines, canonical(forged)])
    refused(
        doctor("replay", str(path), state=recording.state),
        f"{path}:{len(lines) + 1}: a line after the seal",
    )
    # Put before the seal instead, the seal's digests recomputed: the HMAC refutes it.
    forged["prev"] = sha(lines[-2])
    write_lines(path, reseal([*lines[:-1], canonical(forged), lines[-1]]))
    refused(
        doctor("replay", str(path), state=recording.state),
        f":{len(lines) + 1}: seal signature does not match",
    )


def _edit_last_event(lines: list[str]) -> list[str]:
    event = json.loads(lines[-2])
    assert event["type"] == "verdict"
    event["verdict"] = "no_fault_found"
    return [*lines[:-2], canonical(event), lines[-1]]


def _edit_seal(field: str, value: object) -> Any:
    def edit(lines: list[str]) -> list[str]:
        seal = json.loads(lines[-1])
        seal[field] = value if not callable(value) else value(seal[field])
        return [*lines[:-1], canonical(seal)]

    return edit


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        # The recorded verdict, the last event: this exited 1 ("verdicts changed").
        (_edit_last_event, "hash chain broken"),
        (_edit_seal("events", lambda n: n + 1), "the seal counts"),
        (_edit_seal("sha256", "0" * 64), "the seal does not match the lines before it"),
        (_edit_seal("sealed_at", "2020-01-01T00:00:00+00:00"), "seal signature does not match"),
        (_edit_seal("hmac", "f" * 64), "seal signature does not match"),
        (_edit_seal("hmac", "é" * 64), "seal signature does not match"),
        (lambda t: [*t[:-1], t[-1].replace('{"events"', '{ "events"')], "seal edited"),
        (_edit_seal("extra", 1), "malformed seal"),
    ],
    ids=[
        "last-event",
        "seal-count",
        "seal-digest",
        "seal-time",
        "seal-hmac",
        "seal-hmac-text",
        "seal-bytes",
        "seal-field",
    ],
)
def test_an_edit_of_the_last_lines_is_exit_2(
    recording: Recording, tmp_path: Path, edit: Any, why: str
) -> None:
    """Any edit to the last event or to the seal (its count, digest, time, HMAC, bytes or
    fields) is refused in one line naming the seal's line and why."""
    path = recording.copy(tmp_path)
    lines = read_lines(path)
    write_lines(path, edit(lines))
    refused(doctor("replay", str(path), state=recording.state), f"{path}:{len(lines)}: {why}")


@pytest.mark.parametrize(
    ("cut", "why"),
    [
        (lambda t: t[:-1], "not sealed"),  # the seal, dropped
        (lambda t: t[:-2], "not sealed"),  # and the verdict
        (lambda t: [*t[:3], *t[4:]], ":4: hash chain broken"),  # a middle line
    ],
    ids=["seal", "seal-and-verdict", "middle"],
)
def test_a_cut_transcript_is_exit_2(
    recording: Recording, tmp_path: Path, cut: Any, why: str
) -> None:
    """A transcript cut at its end reads as not sealed, one missing a middle line as a
    broken chain; replay and report both refuse it naming the file."""
    path = recording.copy(tmp_path)
    write_lines(path, cut(read_lines(path)))
    refused(doctor("replay", str(path), state=recording.state), str(path), why)
    refused(doctor("report", str(path), state=recording.state), str(path), why)


# -- the key file -------------------------------------------------------------------------


def test_a_key_file_others_can_read_is_refused(recording: Recording, tmp_path: Path) -> None:
    """A transcript key readable by others is refused, naming its mode; a session stops
    before its first command, and the key's mode is left as found."""
    state = recording.state_with_key(tmp_path / "state")
    key = state / "dflash-doctor" / "transcript.key"
    key.chmod(0o644)
    path = recording.copy(tmp_path)
    refused(doctor("replay", str(path), state=state), str(key), "mode 0644", "refusing it")
    # A session stops before its first command, and leaves the key as it found it.
    marker = tmp_path / "ran"
    result = doctor("exec", "--target", "local", "--", "touch", str(marker), state=state)
    refused(result, str(key), "mode 0644")
    assert not marker.exists()
    assert stat.S_IMODE(key.stat().st_mode) == 0o644


def test_a_key_file_that_is_a_symlink_is_refused(recording: Recording, tmp_path: Path) -> None:
    """Even to a good key: a link could be repointed at a file someone else holds."""
    state = tmp_path / "state"
    (state / "dflash-doctor").mkdir(parents=True)
    (state / "dflash-doctor" / "transcript.key").symlink_to(recording.key)
    refused(
        doctor("replay", str(recording.copy(tmp_path)), state=state),
        "transcript.key: the transcript key is a symbolic link; refusing it",
    )


@pytest.mark.parametrize("size", [0, KEY_BYTES - 1, KEY_BYTES + 1])
def test_a_key_of_the_wrong_length_is_refused(
    recording: Recording, tmp_path: Path, size: int
) -> None:
    """A key file that is empty, short or long is refused, saying how many bytes it
    holds."""
    state = recording.state_with_key(tmp_path / "state")
    key = state / "dflash-doctor" / "transcript.key"
    key.write_bytes(os.urandom(size))
    shown = str(size) if size <= KEY_BYTES else f"more than {KEY_BYTES}"
    refused(
        doctor("replay", str(recording.copy(tmp_path)), state=state),
        f"holds {shown} bytes, not {KEY_BYTES}",
    )


def test_a_key_that_is_a_directory_or_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    """A key that is a directory or a FIFO is refused as not a regular file, without
    blocking."""
    for kind, make in (("a directory", os.mkdir), ("a FIFO", os.mkfifo)):
        state = tmp_path / kind.split()[-1]
        (state / "dflash-doctor").mkdir(parents=True)
        make(state / "dflash-doctor" / "transcript.key")
        with pytest.raises(ConfigError, match=f"not a regular file \\({kind}\\)"):
            load_key(state / "dflash-doctor")


# -- killed, resumed ----------------------------------------------------------------------

KILLED_WRITER = """
import sys, time
from pathlib import Path
from tools.transcript import TranscriptWriter
writer = TranscriptWriter(Path(sys.argv[1]), {"command": "diagnose", "target": "local"})
for n in range(3):
    writer.write({"type": "note", "n": n})
print("written", flush=True)
time.sleep(600)
"""


def test_a_writer_killed_before_close_leaves_a_transcript_that_reads_as_not_sealed(
    tmp_path: Path,
) -> None:
    """A writer killed before closing leaves a transcript refused as not sealed, whose chain
    is still whole, so its session can resume and seal it."""
    path = tmp_path / "killed.jsonl"
    with subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(path)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline() == "written\n"
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
    state = Path(os.environ["XDG_STATE_HOME"])
    refused(doctor("replay", str(path), state=state), f"{path}:4: not sealed")
    # Its chain is whole, so the session that owns it can go on and seal it.
    assert len(read_transcript(path)[1]) == 3
    writer = TranscriptWriter(path, {}, resume=True)
    writer.write({"type": "note", "n": 3})
    writer.close()
    sealed = read_sealed(path, load_key())
    assert [e["n"] for e in sealed.events] == [0, 1, 2, 3]
    assert sealed.seal.signed_by == "this installation"


def test_a_resumed_session_is_sealed_again_over_all_of_it() -> None:
    """A resumed session's transcript is unsealed while it runs, then sealed once over all
    its events, old and new, under the same session."""
    session = Session.create(SessionConfig(command="exec", target="local"))
    session.record({"type": "note", "n": 0})
    session.close()
    first = read_sealed(session.transcript_path, load_key())
    again = Session.reopen(session.id)
    again.record({"type": "note", "n": 1})
    # While the resumed session runs, the file is what it is: not sealed.
    with pytest.raises(TranscriptError, match="not sealed"):
        read_sealed(again.transcript_path, load_key())
    again.close()
    whole = read_sealed(again.transcript_path, load_key())
    assert [e["n"] for e in whole.events] == [0, 1]
    assert whole.header["session"] == first.header["session"]
    assert whole.seal.signed_by == "this installation"
    assert sum(json.loads(x)["type"] == "seal" for x in read_lines(again.transcript_path)) == 1


def test_a_sealed_transcript_changed_since_is_not_resumed() -> None:
    """Resuming it would put a good seal on the change."""
    session = Session.create(SessionConfig(command="exec", target="local"))
    session.record({"type": "note", "n": 0})
    session.close()
    path = session.transcript_path
    lines = read_lines(path)
    event = json.loads(lines[1])
    event["n"] = 7
    write_lines(path, reseal([lines[0], canonical(event), lines[2]]))
    before = path.read_bytes()
    with pytest.raises(TranscriptError, match="seal signature does not match"):
        Session.reopen(session.id).record({"type": "note", "n": 1})
    assert path.read_bytes() == before


def test_resume_of_a_finished_diagnosis_keeps_it_replayable(tmp_path: Path) -> None:
    """`diagnose`, then `resume SESSION` (which reopens the transcript), then `replay`."""
    state = Path(os.environ["XDG_STATE_HOME"])
    (tmp_path / "ws").mkdir()
    first = doctor(
        "diagnose",
        "--target",
        "local",
        "--workspace",
        str(tmp_path / "ws"),
        "--interpreter",
        sys.executable,
        "--format",
        "json",
        state=state,
    )
    assert first.returncode == 0, first.stderr
    session = json.loads(first.stdout)["session"]
    assert doctor("resume", session, "--format", "json", state=state).returncode == 0
    path = state / "dflash-doctor" / "sessions" / session / "transcript.jsonl"
    result = doctor("replay", str(path), state=state)
    assert result.returncode == 0, result.stderr
    assert "sealed and signed by this installation" in result.stdout


# -- the format -----------------------------------------------------------------------------


def test_a_line_separator_inside_a_string_does_not_end_a_line(tmp_path: Path) -> None:
    """JSON keeps U+2028 and U+0085 as they are; str.splitlines() ended lines there."""
    path = tmp_path / "t.jsonl"
    writer = TranscriptWriter(path, {"target": "local"})
    writer.write({"type": "note", "text": "a\u2028b\x85c"})
    writer.close()
    (event,) = read_sealed(path, load_key()).events
    assert event["text"] == "a\u2028b\x85c"


def test_only_the_writer_writes_a_seal_or_a_header(tmp_path: Path) -> None:
    """A caller cannot write a seal or header event; only the writer makes them."""
    writer = TranscriptWriter(tmp_path / "t.jsonl", {})
    for kind in ("seal", "header"):
        with pytest.raises(ValueError, match="only the writer writes one"):
            writer.write({"type": kind})
    writer.close()


# -- fuzz -----------------------------------------------------------------------------------

REGIONS = ("anywhere", "first line", "last line", "end")
# Mostly bytes that keep the file UTF-8 JSON-ish (hex digits of the digests, JSON's own
# punctuation), so the edits reach the chain and seal checks, not only the decoder.
_TEXTISH = st.sampled_from(list(b'0123456789abcdef"{}[],:\\ \n'))
BYTES = st.one_of(_TEXTISH, _TEXTISH, _TEXTISH, st.integers(0, 255))


def _mutate(data: bytes, draw: Any) -> bytes:
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        if not out:
            break
        text = bytes(out)
        region = draw(st.sampled_from(REGIONS))
        first_end = text.find(b"\n") + 1 or len(text)
        last_start = text.rstrip(b"\n").rfind(b"\n") + 1
        lo, hi = {
            "anywhere": (0, len(text)),
            "first line": (0, first_end),
            "last line": (last_start, len(text)),
            "end": (max(0, len(text) - 8), len(text)),
        }[region]
        at = draw(st.integers(lo, max(lo, hi - 1)))
        action = draw(st.sampled_from(("set", "cut", "drop", "insert")))
        if action == "set":
            out[at] = draw(BYTES)
        elif action == "cut":
            del out[at:]
        elif action == "drop":
            del out[at : at + draw(st.integers(1, 80))]
        else:
            out[at:at] = bytes(draw(st.lists(BYTES, min_size=1, max_size=8)))
    return bytes(out)


FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def in_process(state: Path, *args: str) -> tuple[int, str, str]:
    """The real entry point run in this process (a subprocess per example would cost a
    second each): its exit code, stdout, stderr; checked as the documented contract."""
    from agent.cli import main

    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_STATE_HOME", str(state))
        mp.setattr(sys, "argv", ["dflash-doctor", "-q", *args])
        with (
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            pytest.raises(SystemExit) as ended,
        ):
            main()
    code = ended.value.code
    assert isinstance(code, int) and code in (0, 1, 2), (code, err.getvalue())
    if code == 2:
        assert len(err.getvalue().splitlines()) == 1, err.getvalue()
    return code, out.getvalue(), err.getvalue()


@pytest.mark.timeout(900)
@FUZZ
@given(data=st.data())
def test_fuzzed_transcripts_never_crash_replay(
    recording: Recording, tmp_path: Path, data: st.DataObject
) -> None:
    """Random byte edits and cuts of a good transcript: the real entry point exits 0, 1
    or 2, never with a traceback, each within a bound; and with this installation's key
    at hand no changed file replays as signed by it. (Examples share the fixtures: the
    recording is only read, and each example writes its own bytes over the one file.)"""
    original = recording.transcript.read_bytes()
    mutated = _mutate(original, data.draw)
    path = tmp_path / "fuzzed.jsonl"
    path.write_bytes(mutated)
    started = time.monotonic()
    _, out, _ = in_process(recording.state, "replay", str(path))
    assert time.monotonic() - started < 20  # a full replay of it takes about a second
    if mutated != original:
        assert "signed by this installation" not in out, out


FIELD_VALUES = st.sampled_from([None, 0, -1, 1.5, "", "x", "AAAA", [], [1], {}, {"a": 1}, True])


@pytest.mark.timeout(900)
@FUZZ
@given(data=st.data())
def test_whole_transcripts_of_another_installation_with_any_fields_never_crash_replay(
    recording: Recording, tmp_path: Path, data: st.DataObject
) -> None:
    """What no key here can refute: fields deleted or retyped, then re-chained and sealed
    with another installation's key. Its content is checked by nobody, so it must be
    read as hostile: exit 0, 1 or 2, never a traceback."""
    lines = read_lines(recording.transcript)
    for _ in range(data.draw(st.integers(1, 2))):
        at = data.draw(st.integers(0, len(lines) - 2))
        obj = json.loads(lines[at])
        name = data.draw(st.sampled_from(sorted(obj)))
        if data.draw(st.booleans()):
            del obj[name]
        else:
            obj[name] = data.draw(FIELD_VALUES)
        lines[at] = canonical(obj)
    path = tmp_path / "forged.jsonl"
    write_lines(path, reseal(lines, secret=b"another installation's key, 32 b"))
    in_process(recording.state, data.draw(st.sampled_from(["replay", "report"])), str(path))


def test_a_command_without_argv_in_a_whole_foreign_transcript_is_one_line(
    recording: Recording, tmp_path: Path
) -> None:
    """Before its shape was checked it was a KeyError deep in the replay transport."""
    lines = read_lines(recording.transcript)
    at = next(i for i, x in enumerate(lines) if json.loads(x)["type"] == "command")
    command = json.loads(lines[at])
    del command["argv"]
    lines[at] = canonical(command)
    path = tmp_path / "forged.jsonl"
    write_lines(path, reseal(lines, secret=b"another installation's key, 32 b"))
    refused(
        doctor("replay", str(path), state=recording.state),
        f"{path}: not a diagnosis as this app records one: an event lacks 'argv'",
    )


@pytest.mark.parametrize("spoil", ["deleted", "retyped"])
def test_a_verdict_event_without_its_verdict_in_a_whole_foreign_transcript_is_one_line(
    recording: Recording, tmp_path: Path, spoil: str
) -> None:
    """Found by the fuzz test above: replay compared the recorded verdict after the run
    and read it as ``event["verdict"]``, a KeyError traceback when it was gone."""
    lines = read_lines(recording.transcript)
    at = next(i for i, x in enumerate(lines[:-1]) if json.loads(x)["type"] == "verdict")
    event = json.loads(lines[at])
    if spoil == "deleted":
        del event["verdict"]
    else:
        event["verdict"] = ["no fault found"]
    lines[at] = canonical(event)
    path = tmp_path / "forged.jsonl"
    write_lines(path, reseal(lines, secret=b"another installation's key, 32 b"))
    why = "an event lacks 'verdict'" if spoil == "deleted" else "the verdict is not text"
    code, _, err = in_process(recording.state, "replay", str(path))
    assert code == 2
    assert f"{path}: not a diagnosis as this app records one: " in err and why in err, err


@pytest.mark.parametrize(("command", "event"), [("replay", "header"), ("report", "verdict")])
def test_an_ill_typed_baseline_in_a_whole_foreign_transcript_is_one_line(
    recording: Recording, tmp_path: Path, command: str, event: str
) -> None:
    """Found by the fuzz test above: a baseline that is a number (the header's, which the
    replay starts from; the verdict's, which the report renders) was a pydantic
    ValidationError traceback when the starting state was built."""
    lines = read_lines(recording.transcript)
    at = next(i for i, x in enumerate(lines[:-1]) if json.loads(x)["type"] == event)
    obj = json.loads(lines[at])
    obj["baseline"] = 0
    lines[at] = canonical(obj)
    path = tmp_path / "forged.jsonl"
    write_lines(path, reseal(lines, secret=b"another installation's key, 32 b"))
    refused(
        doctor(command, str(path), state=recording.state),
        f"{path}: not a diagnosis as this app records one:",
    )
