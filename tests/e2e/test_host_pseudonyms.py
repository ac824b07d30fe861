"""Issue 24, item 9: an ssh_config alias reaches no file the controller writes.

A real sshd on 127.0.0.1 behind the alias ``trainer-alias`` (and a second alias on a
port nobody listens on, whose transport error quotes its name). The real CLI diagnoses,
snapshots, checks health twice into ``--out`` and resumes; then every file under the
state directory and the output directory, its name and its bytes (graph.sqlite's pages
too), is searched for the alias and for the name the host probe reads. The files name
the host by one pseudonym, the same in every file and every night, and ``resume`` still
reaches the target: it was kept sealed, not lost.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from pathlib import Path

import pytest

from tests.lib.cli import run_cli
from tests.lib.probe_workspace import write_run
from tests.lib.sshd import SSHServer

pytestmark = [pytest.mark.ssh, pytest.mark.slow]

PSEUDONYM = re.compile(r"host-[0-9a-f]{12}")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _names_on_disk(roots: list[Path], word: re.Pattern[bytes]) -> list[str]:
    """Each file (or directory) under ``roots`` whose name or bytes hold ``word``."""
    found = []
    for root in roots:
        for path in [root, *root.rglob("*")]:
            if word.search(os.fsencode(path.relative_to(root.parent))):
                found.append(f"name: {path}")
            if path.is_file() and word.search(path.read_bytes()):
                found.append(f"bytes: {path}")
    return found


def test_the_alias_is_in_no_file_and_resume_still_reaches_the_target(
    sshd_server: SSHServer, tmp_path: Path
) -> None:
    """No file the controller writes names the ssh_config alias or this host: every output
    holds one pseudonym per host, yet the terminal shows the target as typed and resume
    reaches it."""
    ws = tmp_path / "ws"
    write_run(ws)
    config = tmp_path / "ssh_config"
    config.write_text(
        sshd_server.ssh_config().read_text()
        + f"Host dead-alias\n  HostName 127.0.0.1\n  Port {_closed_port()}\n"
    )
    state, out = tmp_path / "state", tmp_path / "out"
    common = ["--ssh-config", str(config), "--workspace", str(ws)]
    common += ["--interpreter", sys.executable]
    alias = ["--target", "ssh://trainer-alias"]

    diagnosed = run_cli(
        "-q", "diagnose", *alias, *common, "--non-interactive", "--json", state=state
    )
    assert b"Traceback" not in diagnosed.stderr, diagnosed.stderr.decode()[-3000:]
    # The terminal shows the target as it was typed.
    assert json.loads(diagnosed.stdout)["target"] == "ssh://trainer-alias"
    snapshot = run_cli("-q", "snapshot", "--name", "good", *alias, *common, state=state)
    assert snapshot.returncode == 0, snapshot.stderr.decode()[-3000:]
    for _ in range(2):  # two nights: a trend chart, two history lines a target
        health = run_cli(
            "-q", "health", *alias, "--target", "ssh://dead-alias", "--baseline",
            "ssh://trainer-alias=good", "--out", str(out), "--target-timeout", "60",
            *common, state=state,
        )  # fmt: skip
        # 2: dead-alias could not be checked (1 where the other target regressed).
        assert health.returncode in (1, 2), health.stderr.decode()[-3000:]
    (session,) = (state / "dflash-doctor" / "sessions").glob(
        json.loads(diagnosed.stdout)["session"]
    )
    resumed = run_cli("-q", "resume", session.name, "--json", state=state)
    assert b"Traceback" not in resumed.stderr, resumed.stderr.decode()[-3000:]
    assert json.loads(resumed.stdout)["target"] == "ssh://trainer-alias"

    names = ["trainer-alias", "dead-alias", os.uname().nodename]
    word = re.compile(
        rb"(?<![\w.-])(?:%s)(?![\w-])" % b"|".join(re.escape(n.encode()) for n in names)
    )
    assert _names_on_disk([state, out], word) == []

    # One pseudonym a host, in every file, both nights; the dead host's error quoted it.
    report = json.loads((out / "health.json").read_text())
    by_uri = {t["uri"]: t for t in report["targets"]}
    assert len(by_uri) == 2 and all(PSEUDONYM.fullmatch(u.removeprefix("ssh://")) for u in by_uri)
    dead = next(t for t in report["targets"] if t["status"] == "could_not_check")
    assert dead["uri"] in dead["reason"] or dead["uri"].removeprefix("ssh://") in dead["reason"]
    alive = next(t for t in report["targets"] if t["status"] != "could_not_check")
    assert len(alive["trend"]) == 2, alive["trend"]
    history = (state / "dflash-doctor" / "health" / "history.jsonl").read_text().splitlines()
    assert {json.loads(line)["uri"] for line in history} == set(by_uri)
    saved = json.loads((state / "dflash-doctor" / "baselines" / "good.json").read_text())
    assert saved["target"] == alive["uri"]
    session_json = json.loads((session / "session.json").read_text())
    assert session_json["target"] == alive["uri"] and session_json["target_sealed"]
    assert list(out.glob("trend-*.svg"))
