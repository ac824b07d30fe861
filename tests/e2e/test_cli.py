"""The installed `dflash-doctor` console script, run as a user runs it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.lib.cli import cli
from tests.lib.sshd import SSHServer
from tools.transcript import read_transcript


def test_version() -> None:
    """``--version`` exits 0 and prints the program's name and version."""
    result = cli("--version")
    assert result.returncode == 0
    assert result.stdout.decode().startswith("dflash-doctor ")


def test_exec_passes_output_and_exit_code_through() -> None:
    """The Done-when line: `exec --target local -- sh -c 'exit 7'` exits 7."""
    result = cli(
        "-q", "exec", "--target", "local", "--", "sh", "-c", "printf out; printf err >&2; exit 7"
    )
    assert result.returncode == 7
    assert result.stdout == b"out"
    assert result.stderr == b"err"


@pytest.mark.parametrize(
    ("uri", "part"),
    [
        ("ssh://root@:22", "missing host"),
        ("local/pct:abc", "'abc'"),
        ("gpu-host", "no scheme"),
        ("ssh://h:99999/pct:200", "bad port '99999'"),
    ],
)
def test_malformed_target_is_one_line_exit_2(uri: str, part: str) -> None:
    """A malformed target URI is one line on stderr, exit 2, naming what is wrong with
    it."""
    result = cli("exec", "--target", uri, "--", "true")
    assert result.returncode == 2
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("dflash-doctor: error: bad target URI")
    assert part in lines[0]


@pytest.mark.ssh
def test_exec_through_ssh_and_pct_logs_and_records(sshd_server: SSHServer, tmp_path: Path) -> None:
    """Through the real sshd and the stand-in pct: output, exit code, a JSON log event with
    session/target/argv digest/rc/duration, and the command in the session transcript."""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    result = cli(
        "--log-json",
        "exec",
        "--target",
        f"{sshd_server.uri}/pct:200",
        "--identity",
        str(sshd_server.identity),
        "--known-hosts",
        str(sshd_server.known_hosts),
        "--",
        "sh",
        "-c",
        "printf '%s' \"$0\"; exit 9",
        "it's $(here)",
        env=env,
    )
    assert result.returncode == 9
    assert result.stdout == b"it's $(here)"
    events = [json.loads(line) for line in result.stderr.decode().splitlines()]
    command = next(e for e in events if e["event"] == "command")
    assert command["rc"] == 9
    assert command["target"] == f"{sshd_server.uri}/pct:200"
    assert {"session", "argv_digest", "duration", "timestamp"} <= command.keys()
    transcripts = list(tmp_path.glob("dflash-doctor/sessions/*/transcript.jsonl"))
    assert len(transcripts) == 1
    _, recorded = read_transcript(transcripts[0])
    assert recorded[0]["rc"] == 9
    assert recorded[0]["argv"][-1] == "it's $(here)"


@pytest.mark.ssh
def test_unreachable_host_is_one_line_exit_255(sshd_server: SSHServer) -> None:
    """A host that refuses the connection gives exit 255 and one error line, the last,
    naming the URI; the retry is logged as an event, not as another error."""
    sshd_server.stop()
    result = cli(
        "-q",
        "exec",
        "--target",
        sshd_server.uri,
        "--identity",
        str(sshd_server.identity),
        "--known-hosts",
        str(sshd_server.known_hosts),
        "--retries",
        "1",
        "--",
        "true",
    )
    assert result.returncode == 255
    # Retry warnings are log events; the error itself is exactly one line, the last.
    lines = result.stderr.decode().splitlines()
    errors = [line for line in lines if line.startswith("dflash-doctor: error:")]
    assert errors == [lines[-1]]
    assert lines[-1] == f"dflash-doctor: error: {sshd_server.uri}: connection refused"
    assert sum("ssh_connect_retry" in line for line in lines) == 1


@pytest.mark.ssh
def test_unknown_host_key_refused_then_accepted_on_request(sshd_server: SSHServer) -> None:
    """An unknown host key is refused until ``--accept-new-host-key`` is given; once
    accepted, it is remembered for the next run."""
    sshd_server.known_hosts.write_text("")
    common = [
        "--target",
        sshd_server.uri,
        "--identity",
        str(sshd_server.identity),
        "--known-hosts",
        str(sshd_server.known_hosts),
    ]
    refused = cli("-q", "exec", *common, "--", "true")
    assert refused.returncode == 255
    assert "unknown host key" in refused.stderr.decode()
    accepted = cli("-q", "exec", *common, "--accept-new-host-key", "--", "true")
    assert accepted.returncode == 0
    assert cli("-q", "exec", *common, "--", "true").returncode == 0
