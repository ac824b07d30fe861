"""The controller's own files opened as the probes open theirs (issue 24, item 5): a
regular file only, without blocking, read up to a cap. Each case below used to hang
(a FIFO), run out of memory (a link to /dev/zero), or end in a traceback (sqlite,
pydantic, paramiko, idna); each is now exit 2 in one line that names the file, and the
session's files are left exactly as they were."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.lib.cli import SCRIPT, one_line_refusal, run_cli

REPO = Path(__file__).resolve().parents[2]
SECRET_FREE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\n"


def digests(folder: Path) -> dict[str, str]:
    """What each entry of ``folder`` is: a regular file's digest, else its kind. The
    session's lock is left out: taken first, it is the one file a refused resume adds."""
    out = {}
    for entry in sorted(folder.iterdir()):
        if entry.name == "session.lock":
            continue
        if entry.is_symlink():
            out[entry.name] = "link to " + os.readlink(entry)
        elif entry.is_file() and not entry.is_fifo():
            out[entry.name] = hashlib.sha256(entry.read_bytes()).hexdigest()
        else:
            out[entry.name] = "dir" if entry.is_dir() else "special"
    return out


def fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def dev_zero(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to("/dev/zero")


def directory(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.mkdir()


def corrupt_pages(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xaa" * (4096 - 100)
    path.write_bytes(bytes(data))


def garbage(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 12)


REPLACEMENTS: dict[str, Callable[[Path], None]] = {
    "fifo": fifo,
    "dev-zero": dev_zero,
    "directory": directory,
    "corrupt": corrupt_pages,
    "garbage": garbage,
}


@pytest.mark.parametrize(
    ("name", "how", "said"),
    [
        ("session.json", "fifo", "cannot read the session: not a regular file (a FIFO)"),
        ("session.json", "dev-zero", "cannot read the session: not a regular file"),
        ("session.json", "garbage", "the session is not UTF-8 text"),
        ("ledger.jsonl", "fifo", "cannot read ledger: not a regular file (a FIFO)"),
        ("ledger.jsonl", "dev-zero", "cannot read ledger: not a regular file"),
        ("ledger.jsonl", "garbage", "ledger is not UTF-8 text"),
        ("redaction.json", "fifo", "cannot read the redaction state: not a regular file"),
        ("redaction.json", "dev-zero", "cannot read the redaction state: not a regular file"),
        ("transcript.jsonl", "fifo", "cannot read transcript: not a regular file (a FIFO)"),
        ("graph.sqlite", "fifo", "a FIFO, not a regular file"),
        ("graph.sqlite", "dev-zero", "a symlink, not a regular file"),
        ("graph.sqlite", "directory", "a directory, not a regular file"),
        ("graph.sqlite", "corrupt", "not a usable graph checkpoint database"),
    ],
)
@pytest.mark.parametrize("answer", [["--json"], ["--approve"]], ids=["continue", "approve"])
def test_resume_refuses_a_state_file_that_is_not_one_and_keeps_the_rest(
    saved_session: tuple[Path, Path, str], name: str, how: str, said: str, answer: list[str]
) -> None:
    """A session state file that is a FIFO, device, directory, garbage or corrupt makes
    ``resume`` stop in one line naming it, whether continuing or approving, with the
    session's files unchanged."""
    state, folder, sid = saved_session
    REPLACEMENTS[how](folder / name)
    before = digests(folder)
    line = one_line_refusal(["resume", sid, *answer], state)
    assert str(folder / name) in line and said in line, line
    assert digests(folder) == before


@pytest.mark.parametrize("answer", [["--json"], ["--approve"]], ids=["continue", "approve"])
def test_resume_without_saved_graph_state_is_one_line(
    saved_session: tuple[Path, Path, str], answer: list[str]
) -> None:
    """An emptied graph.sqlite: continuing and answering both say it holds no state."""
    state, folder, sid = saved_session
    (folder / "graph.sqlite").unlink()
    sqlite3.connect(folder / "graph.sqlite").close()
    line = one_line_refusal(["resume", sid, *answer], state)
    assert f"holds no saved state for session {sid}" in line


def test_report_out_refuses_a_fifo_and_an_existing_file_unless_forced(
    saved_session: tuple[Path, Path, str], tmp_path: Path
) -> None:
    """``report --out`` refuses a FIFO, and an existing file unless ``--force`` is given;
    nothing else is created beside them."""
    state, folder, _ = saved_session
    transcript = str(folder / "transcript.jsonl")
    pipe = tmp_path / "report.fifo"
    os.mkfifo(pipe)
    line = one_line_refusal(["report", transcript, "--out", str(pipe)], state)
    assert "a FIFO, not a regular file; not used as the report" in line
    kept = tmp_path / "report.md"
    kept.write_text("mine\n")
    line = one_line_refusal(["report", transcript, "--out", str(kept)], state)
    assert "exists; not overwriting it (use --force)" in line
    assert kept.read_text() == "mine\n"
    forced = run_cli("report", transcript, "--out", str(kept), "--force", state=state)
    assert forced.returncode == 0, forced.stderr.decode()[-2000:]
    assert kept.read_text().startswith("# dflash-doctor report")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.fifo", "report.md", "state"]


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: os.mkfifo(p), "cannot read the identity file: not a regular file (a FIFO)"),
        (lambda p: p.symlink_to("/dev/zero"), "cannot read the identity file: not a regular"),
        (lambda p: p.write_bytes(os.urandom(3000)), "not a private key file"),
        (lambda p: p.write_text(SECRET_FREE_KEY * 40000), "over the 1,048,576-byte limit"),
    ],
    ids=["fifo", "dev-zero", "random-bytes", "over-the-cap"],
)
def test_an_identity_file_that_is_no_key_is_one_line(
    tmp_path: Path, make: Callable[[Path], object], said: str
) -> None:
    """Checked before any connection: nothing listens on port 1 here, and the line is
    about the file, not the connection."""
    key = tmp_path / "id_test"
    make(key)
    line = one_line_refusal(
        ["exec", "--target", "ssh://nobody@127.0.0.1:1", "-i", str(key), "--", "true"],
        tmp_path / "s",
    )
    assert str(key) in line and said in line, line


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        ("  HostName 127.0.0.1\n  Port abc\n", "Port 'abc' is not a port number"),
        ("  HostName 127.0.0.1\n  Port 70000\n", "Port '70000' is not a port number"),
        (f"  HostName {'a' * 5_000_000}\n", "is not a host name (5,000,000 characters"),
        (f"  HostName {'b' * 64}.example\n", "is not a host name"),
    ],
    ids=["port-abc", "port-70000", "hostname-5MB", "label-64"],
)
def test_an_ssh_config_host_no_connection_can_use_is_one_line(
    tmp_path: Path, settings: str, said: str
) -> None:
    """An ssh_config Host whose port or host name no connection can use is one line naming
    the file, the Host and what is wrong."""
    config = tmp_path / "ssh_config"
    config.write_text("Host odd\n" + settings)
    line = one_line_refusal(
        ["exec", "--target", "ssh://odd", "--ssh-config", str(config), "--", "true"],
        tmp_path / "s",
    )
    assert f"{config}: Host odd: " in line and said in line, line


def test_a_relative_xdg_state_home_is_refused_not_ignored(tmp_path: Path) -> None:
    """The spec makes a relative path invalid; ignoring it silently wrote the state to
    ~/.local/state. Nothing is written anywhere now."""
    home = tmp_path / "home"
    home.mkdir()
    run = subprocess.run(
        [SCRIPT, "facts", "--target", "local", "--workspace", "."],
        capture_output=True,
        cwd=tmp_path,
        env={**os.environ, "XDG_STATE_HOME": "relstate", "HOME": str(home)},
        timeout=120,
    )
    err = run.stderr.decode()
    assert run.returncode == 2 and "Traceback" not in err, err
    assert "XDG_STATE_HOME='relstate' is a relative path" in err
    assert list(home.iterdir()) == [] and not (tmp_path / "relstate").exists()


HOLD = """
import sys, time
from agent.sessions.session import Session
session = Session.reopen(sys.argv[1])
print("held", flush=True)
time.sleep(120)
"""


def test_a_session_answered_twice_at_once_is_refused_the_second_time(
    saved_session: tuple[Path, Path, str],
) -> None:
    """Two processes answering one session both appended to its transcript, and the
    chain no longer replayed. The second is now refused in one line while the first
    holds the session; once it is gone, the session resumes and still replays."""
    state, folder, sid = saved_session
    env = {**os.environ, "XDG_STATE_HOME": str(state), "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, sid], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        line = one_line_refusal(["resume", sid, "--approve"], state)
        assert f"session {sid} is in use by another dflash-doctor process (pid {holder.pid})" in (
            line
        )
    finally:
        holder.kill()
        holder.wait(timeout=30)
        if holder.stdout is not None:
            holder.stdout.close()
    again = run_cli("resume", sid, "--json", state=state)
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    replayed = run_cli("replay", str(folder / "transcript.jsonl"), "--json", state=state)
    assert replayed.returncode == 0, replayed.stderr.decode()[-2000:]
