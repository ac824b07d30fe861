"""Bad input to the real console script: one line saying what was wrong and where, exit 2,
never a traceback, never a hang (issue 14, item 10). Special files a user may name by
mistake — a FIFO, /dev/zero, a directory — are refused without being read."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.lib.cli import SCRIPT
from tests.lib.sshd import SSHServer
from tools.errors import TargetURIError
from tools.transport.uri import parse_target

TRANSCRIPT = Path(__file__).resolve().parents[2] / "transcripts" / "healthy.jsonl"


def run(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp / "state")}
    return subprocess.run(
        [SCRIPT, "-q", *args], capture_output=True, text=True, timeout=60, env=env, cwd=tmp
    )


def refused(result: subprocess.CompletedProcess[str], *words: str) -> None:
    """Exit 2, no traceback, and exactly one line on stderr naming the problem: a usage
    error of the option parser as much as the doctor's own."""
    said = result.stderr + result.stdout
    assert result.returncode == 2, (result.returncode, said[-2000:])
    assert "Traceback" not in said, said[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("dflash-doctor: error: "), lines
    for word in words:
        assert word in lines[0], (word, lines)


one_line = refused


@pytest.mark.parametrize(
    ("uri", "why"),
    [
        ("ssh://h:²", "bad port '²'"),
        ("ssh://h:0", "bad port '0'"),
        (f"ssh://{'a' * 70}.example", "over 63 characters"),
        (f"ssh://{'a.' * 130}b", "over 253 characters"),
        ("ssh://h..x", "empty label"),
        ("ssh://[a:b$(id)]", "not an IPv6 address"),
        ("ssh://[::1", "bad IPv6 host"),
        ("ftp://h", "unknown scheme"),
    ],
)
def test_a_bad_target_uri_is_one_line(uri: str, why: str, tmp_path: Path) -> None:
    """Each kind of bad target URI (port, label lengths, IPv6, scheme) is refused in one
    line saying what is wrong."""
    one_line(run("exec", "--target", uri, "--", "true", tmp=tmp_path), "bad target URI", why)


@pytest.mark.parametrize("value", ["inf", "nan", "1e300", "0", "-1", "604801"])
@pytest.mark.parametrize("option", ["--timeout", "--connect-timeout"])
def test_a_time_limit_that_disables_the_limit_is_refused(
    option: str, value: str, tmp_path: Path
) -> None:
    """A time limit that would disable itself or never end (inf, nan, zero, negative, over a
    week) is refused rather than letting a command hang."""
    refused(run("exec", "--target", "local", option, value, "--", "true", tmp=tmp_path), option)


def test_a_usable_time_limit_runs(tmp_path: Path) -> None:
    """A sensible ``--timeout`` is accepted and the command runs."""
    result = run("exec", "--target", "local", "--timeout", "5", "--", "true", tmp=tmp_path)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-3"])
def test_a_profile_time_limit_that_disables_the_limit_is_refused(
    value: str, tmp_path: Path
) -> None:
    """A profile's time limit that would disable the limit is refused in one line naming the
    profile and the key."""
    profile = tmp_path / "doctor.toml"
    profile.write_text(f'[targets.t]\nuri = "local"\ntimeouts = {{ trainlog = {value} }}\n')
    result = run("diagnose", "--config", str(profile), "--target", "t", tmp=tmp_path)
    one_line(result, str(profile), "timeouts.trainlog")


@pytest.mark.parametrize(
    ("command", "allowed"),
    [
        (["diagnose", "--target", "local", "--format", "xml"], "md, json"),
        (["report", str(TRANSCRIPT), "--format", "pdf"], "md, html, json"),
    ],
)
def test_an_unknown_format_is_refused_before_anything_runs(
    command: list[str], allowed: str, tmp_path: Path
) -> None:
    """An unknown ``--format`` is refused with the formats allowed, before any session is
    started."""
    refused(run(*command, tmp=tmp_path), "--format", allowed)
    assert not (tmp_path / "state" / "dflash-doctor" / "sessions").exists()


def test_writing_where_nothing_can_be_written_is_one_line(tmp_path: Path) -> None:
    """An output path that is a directory or lies under a file is one line for report, init
    and health, never a traceback."""
    (tmp_path / "dir").mkdir()
    one_line(
        run("report", str(TRANSCRIPT), "--out", str(tmp_path / "dir"), tmp=tmp_path),
        "a directory, not a regular file",
        "not used as the report",
    )
    nowhere = tmp_path / "missing" / "deeper"
    (tmp_path / "missing").write_text("a file, not a directory")
    one_line(
        run("report", str(TRANSCRIPT), "--out", str(nowhere), tmp=tmp_path),
        "cannot use it as the report",
        "Not a directory",
    )
    one_line(run("init", str(nowhere), tmp=tmp_path), "cannot write the profile")
    one_line(
        run(
            "health",
            "--target",
            "local",
            "--workspace",
            str(tmp_path),
            "--baseline",
            "b",
            "--out",
            str(nowhere),
            tmp=tmp_path,
        ),
        "cannot write the health report there",
    )


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)  # nobody ever writes to it: opening it to read would block forever
    return path


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "directory"])
def test_a_special_file_named_as_input_is_refused_without_reading_it(
    kind: str, fifo: Path, tmp_path: Path
) -> None:
    """A FIFO, /dev/zero or a directory named as a transcript or profile is refused in one
    line naming it, without blocking on or reading it."""
    path = {"fifo": fifo, "/dev/zero": Path("/dev/zero"), "directory": tmp_path}[kind]
    what = {"fifo": "a FIFO", "/dev/zero": "a character device", "directory": ""}[kind]
    one_line(run("replay", str(path), tmp=tmp_path), str(path), "cannot read transcript", what)
    one_line(run("report", str(path), tmp=tmp_path), str(path), "cannot read transcript", what)
    if kind != "directory":
        config = run("diagnose", "--config", str(path), "--target", "t", tmp=tmp_path)
        one_line(config, str(path), "cannot read", what)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80))
def test_parsing_any_text_as_a_target_either_works_or_says_why(text: str) -> None:
    """Any text as a target either parses to a URI that round-trips through its printed
    form, or is refused in one line; nothing else escapes."""
    for candidate in (text, f"ssh://{text}", f"ssh://h:{text}", f"ssh://[{text}]"):
        try:
            uri = parse_target(candidate)
        except TargetURIError as exc:
            assert str(exc).startswith("bad target URI ") and "\n" not in str(exc)
        else:
            # What parsed prints back as a URI that parses to the same thing.
            assert parse_target(str(uri)) == uri


def known_hosts_with(sshd: SSHServer, *extra: str) -> Path:
    """The server's real known_hosts line, with ``extra`` lines before it."""
    real = sshd.known_hosts.read_text()
    path = sshd.root / "known_hosts.marked"
    path.write_text("".join(f"{line}\n" for line in extra) + real)
    return path


def ssh_exec(sshd: SSHServer, known_hosts: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    return run(
        "exec",
        "--target",
        sshd.uri,
        "--identity",
        str(sshd.identity),
        "--known-hosts",
        str(known_hosts),
        "--",
        "echo",
        "reached",
        tmp=tmp,
    )


def test_known_hosts_marker_lines_do_not_break_ssh(sshd_server: SSHServer, tmp_path: Path) -> None:
    """OpenSSH's ``@cert-authority`` line (not supported: skipped, as a bad line is) and a
    garbage line used to crash every connection in paramiko's parser."""
    path = known_hosts_with(
        sshd_server,
        "@cert-authority *.example ssh-ed25519 "
        "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
        "this is not a host key line",
    )
    result = ssh_exec(sshd_server, path, tmp_path)
    assert result.returncode == 0 and result.stdout == "reached\n", result.stderr[-2000:]


def test_a_revoked_host_key_is_refused_even_when_listed(
    sshd_server: SSHServer, tmp_path: Path
) -> None:
    """A host key marked ``@revoked`` in known_hosts is refused in one line even though the
    key is listed, and no command runs there."""
    host, keytype, key = sshd_server.known_hosts.read_text().split()[:3]
    path = known_hosts_with(sshd_server, f"@revoked {host} {keytype} {key}")
    result = ssh_exec(sshd_server, path, tmp_path)
    assert result.returncode == 255, result.stderr[-2000:]
    (line,) = [x for x in result.stderr.splitlines() if x.strip()]
    assert "marked @revoked" in line and "reached" not in result.stdout


@pytest.mark.parametrize("what", ["directory", "not utf-8"])
def test_an_unusable_ssh_config_or_known_hosts_is_one_line(
    what: str, sshd_server: SSHServer, tmp_path: Path
) -> None:
    """An ssh config (or known_hosts) that is a directory or not UTF-8 is one line naming
    the file."""
    bad = tmp_path / "bad"
    if what == "directory":
        bad.mkdir()
    else:
        bad.write_bytes(b"Host *\n  User \xff\xfe\n")
    config = run(
        "exec", "--target", sshd_server.uri, "--ssh-config", str(bad), "--", "true", tmp=tmp_path
    )
    one_line(config, str(bad), "ssh config")
    if what == "directory":
        one_line(ssh_exec(sshd_server, bad, tmp_path), str(bad), "cannot read known_hosts")


def test_the_state_directory_is_private_and_an_unusable_one_is_one_line(tmp_path: Path) -> None:
    """The state directory is made owner-only and tightened if an older version left it
    open; a state path that is a file is one line, not a traceback."""
    result = run("exec", "--target", "local", "--", "true", tmp=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "state" / "dflash-doctor").stat().st_mode & 0o777 == 0o700
    (tmp_path / "state" / "dflash-doctor").chmod(0o755)  # as an older version left it
    run("exec", "--target", "local", "--", "true", tmp=tmp_path)
    assert (tmp_path / "state" / "dflash-doctor").stat().st_mode & 0o777 == 0o700
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "a-file")}
    (tmp_path / "a-file").write_text("not a directory")
    unusable = subprocess.run(
        [SCRIPT, "-q", "exec", "--target", "local", "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    one_line(unusable, "cannot use it as the state directory")


@pytest.fixture(scope="module")
def finished_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A real diagnosis of an empty workspace: its state directory and session id."""
    import sys

    tmp = tmp_path_factory.mktemp("session")
    (tmp / "ws").mkdir()
    result = run(
        "diagnose",
        "--target",
        "local",
        "--workspace",
        str(tmp / "ws"),
        "--interpreter",
        sys.executable,
        "--non-interactive",
        tmp=tmp,
    )
    assert result.returncode in (0, 1), result.stderr[-2000:]
    (session,) = (tmp / "state" / "dflash-doctor" / "sessions").iterdir()
    return tmp, session.name


@pytest.mark.parametrize("name", ["session.json", "redaction.json", "graph.sqlite"])
@pytest.mark.parametrize("content", ["[1,2", "[]", '{"maps": 5, "target": 5}', ""])
def test_resume_on_a_damaged_state_file_is_one_line(
    name: str, content: str, finished_session: tuple[Path, str], tmp_path: Path
) -> None:
    """Resuming a session whose state file is truncated, empty or of the wrong shape is one
    line naming that file."""
    import shutil

    source, session = finished_session
    shutil.copytree(source / "state", tmp_path / "state")
    damaged = tmp_path / "state" / "dflash-doctor" / "sessions" / session / name
    damaged.write_text(content)
    one_line(run("resume", session, tmp=tmp_path), str(damaged))


@pytest.mark.timeout(60)
def test_the_command_time_limit_bounds_connecting_too(tmp_path: Path) -> None:
    """A port that accepts and never sends an SSH banner held ``exec --timeout 3`` for 45 s
    (three retries of every connect timeout); the limit now covers reaching the host."""
    import socket
    import threading
    import time

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.5)
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                held.append(server.accept()[0])  # accepted, and never a byte sent
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    port = server.getsockname()[1]
    try:
        started = time.monotonic()
        result = run(
            "exec",
            "--target",
            f"ssh://127.0.0.1:{port}",
            "--timeout",
            "3",
            "--",
            "true",
            tmp=tmp_path,
        )
        took = time.monotonic() - started
    finally:
        done.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()
    assert result.returncode == 255, result.stderr[-2000:]
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "cannot connect" in lines[0], lines
    assert took < 15, f"exec --timeout 3 took {took:.1f}s to give up connecting"


COMMANDS = ["exec", "facts", "snapshot", "diagnose", "resume", "replay", "report"]


@pytest.mark.parametrize("command", [*COMMANDS, "init", "health"])
def test_every_commands_help_is_shown(command: str, tmp_path: Path) -> None:
    """Help texts are plain text (a "[/HOP…]" in one read as a Rich closing tag once
    crashed `exec --help`)."""
    result = run(command, "--help", tmp=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "Usage: dflash-doctor" in result.stdout


def test_an_unknown_option_is_one_line(tmp_path: Path) -> None:
    """An unknown option or command is one usage line, exit 2, like the doctor's own
    errors."""
    refused(run("diagnose", "--no-such-option", tmp=tmp_path), "No such option: --no-such-option")
    refused(run("no-such-command", tmp=tmp_path), "No such command 'no-such-command'")


@pytest.mark.parametrize(
    "command", [["facts"], ["diagnose", "--non-interactive"], ["snapshot", "-n", "x"]]
)
@pytest.mark.parametrize("where", ["missing", "a-file"])
def test_a_workspace_that_is_not_a_directory_is_one_line(
    command: list[str], where: str, tmp_path: Path
) -> None:
    """Issue 25: ``--workspace`` naming nothing (or a file) ran a full sweep of nothing
    and exited 0. The layout probe's own word stops it: exit 2, naming the path."""
    ws = tmp_path / where
    if where == "a-file":
        ws.write_text("not a workspace\n")
    result = run(*command, "--target", "local", "--workspace", str(ws), tmp=tmp_path)
    # Which settings apply is said first, as for every command that reaches a target.
    said = result.stderr.splitlines()
    assert said[0].startswith("settings: no profile: local"), said
    rest = subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout, "\n".join(said[1:])
    )
    one_line(rest, f"--workspace {ws}: not a directory on the target")


def test_health_on_a_workspace_that_is_not_there_says_so(tmp_path: Path) -> None:
    """A health check of a missing workspace is a target not checked (exit 2), its reason
    the layout probe's word, never "healthy" about nothing."""
    ws = tmp_path / "missing"
    result = run(
        "health", "--target", "local", "--workspace", str(ws), "--format", "json", tmp=tmp_path
    )
    assert result.returncode == 2, result.stderr[-2000:]
    (target,) = json.loads(result.stdout)["targets"]
    assert target["status"] == "could_not_check"
    assert target["reason"].startswith(f"--workspace {ws}: not a directory on the target ("), target
