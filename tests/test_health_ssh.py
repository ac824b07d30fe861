"""`dflash-doctor health` as cron runs it, against real reference-trainer workspaces
through the real test sshd and the stand-in pct hop.

Every workspace was produced by the trainer itself (tests/workspaces.py); each test takes
its baseline while its copy is good, breaks it with the trainer's own `break` command (or
the emulated race run), and checks it. Exit codes and per-target results are read from
the console script, as a scheduler would.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agent
from agent import health_junit
from agent.runner import baseline_store
from tests.conftest import need
from tests.sshd import SSHServer, free_port
from tests.test_cli import cli
from tests.workspaces import Scenario, clone, gather_local, trainer
from tools.transcript import read_transcript

pytestmark = [pytest.mark.ssh]


def ssh_args(server: SSHServer) -> list[str]:
    return [
        "--identity",
        str(server.identity),
        "--known-hosts",
        str(server.known_hosts),
        "--connect-timeout",
        "3",
        "--retries",
        "0",
    ]


def health(*args: str) -> tuple[int, dict[str, Any], float]:
    """Run the console script; return its exit code, its JSON document, and seconds."""
    started = time.monotonic()
    done = cli("-q", "health", "--format", "json", *args)
    elapsed = time.monotonic() - started
    assert done.stdout, done.stderr.decode()
    return done.returncode, json.loads(done.stdout), elapsed


def workspace_args(ws: Path) -> list[str]:
    return ["--workspace", str(ws), "--interpreter", sys.executable]


def check(target: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in target["checks"] if c["name"] == name)


def assert_cited(target: dict[str, Any], chk: dict[str, Any]) -> None:
    """Every fact a verdict line cites is listed with the command that produced it."""
    listed = {f["id"]: f for f in target["facts"]}
    cites = {c for line in chk["lines"] for c in line["cites"]}
    assert cites, chk
    assert cites <= listed.keys(), cites - listed.keys()
    assert all(listed[c]["command"] == f"{sys.executable} -" for c in cites)


def only_the_bundle_ran(target: dict[str, Any]) -> None:
    """The session's transcript holds one command: the probe bundle."""
    _header, events = read_transcript(Path(target["transcript"]))
    commands = [e for e in events if e["type"].startswith("command")]
    assert [e["argv"] for e in commands] == [[sys.executable, "-"]]
    assert not [e for e in events if e["type"] in ("plan", "approval", "apply", "refused")]


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_healthy_target_exits_0(
    good_workspace: Path, tmp_path: Path, sshd_server: SSHServer
) -> None:
    ws = clone(good_workspace, tmp_path / "ws")
    baseline_store().save("good", "local", gather_local(ws))
    uri = f"{sshd_server.uri}/pct:200"
    rc, doc, _ = health("--target", uri, "-b", "good", *workspace_args(ws), *ssh_args(sshd_server))
    assert rc == 0, doc["exit_reason"]
    (target,) = doc["targets"]
    assert target["status"] == "healthy" and target["target"] == uri
    assert {c["status"] for c in target["checks"]} == {"passed"}
    assert target["metrics"]["tokens_per_s"]["value"] > 0
    assert target["metrics"]["last_step"]["value"] == 40
    only_the_bundle_ran(target)


FAMILIES = [
    ("script", "script_changed", "md5 of {ws}/train_dflash.py (now)"),
    ("truncate-checkpoint", "checkpoint_integrity", "checkpoint files with problems = 1"),
    (
        "compile-cache",
        "compile_cache_cold",
        "extra compile cache {ws}/compile_cache: exists = False",
    ),
]


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize(("damage", "family", "sentence"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_each_regression_family_exits_1_with_its_cited_verdict(
    good_workspace: Path,
    tmp_path: Path,
    sshd_server: SSHServer,
    damage: str,
    family: str,
    sentence: str,
) -> None:
    ws = clone(good_workspace, tmp_path / "ws")
    baseline_store().save("good", "local", gather_local(ws))
    assert trainer("break", damage, "--workspace", ws).returncode == 0
    rc, doc, _ = health(
        "--target", sshd_server.uri, "-b", "good", *workspace_args(ws), *ssh_args(sshd_server)
    )
    assert rc == 1, doc["exit_reason"]
    (target,) = doc["targets"]
    assert target["status"] == "regressed"
    failed = check(target, family)
    assert failed["status"] == "failed", target["checks"]
    assert any(sentence.format(ws=ws) in line["text"] for line in failed["lines"]), failed
    assert all(line["outcome"] == "holds" for line in failed["lines"])
    assert_cited(target, failed)
    assert failed["since"] is not None
    only_the_bundle_ran(target)


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_incident_race_exits_1_with_torchs_error_cited(
    race_scenario: Scenario, sshd_server: SSHServer
) -> None:
    race_scenario.install_baseline("good")
    rc, doc, _ = health(
        "--target",
        sshd_server.uri,
        "-b",
        "good",
        *workspace_args(race_scenario.ws),
        *ssh_args(sshd_server),
    )
    assert rc == 1
    (target,) = doc["targets"]
    race = check(target, "fx_trace_race")
    assert race["status"] == "failed"
    assert any(
        "Detected that you are using FX to symbolically trace" in ln["text"] for ln in race["lines"]
    )
    assert check(target, "dataset_shape_churn")["status"] == "failed"
    assert_cited(target, race)


def test_sshd_down_exits_2_within_the_time_limit(sshd_server: SSHServer, tmp_path: Path) -> None:
    """The host refuses connections: "could not check" for it, exit 2, well inside the
    limit, and the reason names the failure."""
    baseline_store().save("good", "local", [])
    sshd_server.stop()
    rc, doc, elapsed = health(
        "--target",
        sshd_server.uri,
        "-b",
        "good",
        "--workspace",
        str(tmp_path),
        "--target-timeout",
        "20",
        *ssh_args(sshd_server),
    )
    assert rc == 2
    (target,) = doc["targets"]
    assert target["status"] == "could_not_check"
    assert target["reason"].startswith("ConnectError: ")
    assert "connection refused" in target["reason"]
    assert target["duration_s"] < 20
    assert elapsed < 20 + 15  # the limit, plus the console script's own start-up


@pytest.fixture
def silent_host() -> Iterator[int]:
    """A TCP port that accepts connections and never says a word (no SSH banner): a hung
    host, as far as a client can tell."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    server.close()


def test_a_silent_host_is_cut_off_at_the_time_limit(silent_host: int, tmp_path: Path) -> None:
    """With retries that would outlast the limit, the per-target limit still holds: the
    target is "could not check" when its time is up, and the run ends."""
    baseline_store().save("good", "local", [])
    rc, doc, elapsed = health(
        "--target",
        f"ssh://nobody@127.0.0.1:{silent_host}",
        "-b",
        "good",
        "--workspace",
        str(tmp_path),
        "--target-timeout",
        "4",
        "--retries",
        "5",
        "--known-hosts",
        str(tmp_path / "known_hosts"),
    )
    assert rc == 2
    (target,) = doc["targets"]
    assert target["status"] == "could_not_check"
    assert target["reason"] == "time limit of 4s per target exceeded"
    assert elapsed < 4 + 15


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_mixed_fleet_reports_each_target(
    good_workspace: Path, tmp_path: Path, sshd_server: SSHServer
) -> None:
    """One host down, one regressed, one healthy, from a profile with --all: exit 1 (a
    regression outranks "could not check"), each target's own result, and every output
    format in --out: JUnit valid against its schema, the Prometheus file parseable."""
    good = clone(good_workspace, tmp_path / "good")
    broken = clone(good_workspace, tmp_path / "broken")
    baseline_store().save("good-h", "local", gather_local(good))
    baseline_store().save("good-r", "local", gather_local(broken))
    assert trainer("break", "script", "--workspace", broken).returncode == 0
    profile = tmp_path / "doctor.toml"
    profile.write_text(
        "\n".join(
            [
                "[targets.healthy]",
                f'uri = "{sshd_server.uri}/pct:200"',
                f'workspace = "{good}"',
                f'interpreter = "{sys.executable}"',
                "[targets.regressed]",
                f'uri = "{sshd_server.uri}/pct:201"',
                f'workspace = "{broken}"',
                f'interpreter = "{sys.executable}"',
                "[targets.down]",
                f'uri = "ssh://{sshd_server.user}@127.0.0.1:{free_port()}"',
                f'workspace = "{good}"',
                "",
            ]
        )
    )
    out = tmp_path / "out"
    done = cli(
        "-q",
        "health",
        "--config",
        str(profile),
        "--all",
        "-b",
        "good-h",
        "-b",
        "regressed=good-r",
        "--out",
        str(out),
        *ssh_args(sshd_server),
    )
    assert done.returncode == 1, done.stderr
    assert b"regression found on regressed (could not check down)" in done.stdout
    doc = json.loads((out / "health.json").read_text())
    by_name = {t["target"]: t for t in doc["targets"]}
    assert {k: t["status"] for k, t in by_name.items()} == {
        "healthy": "healthy",
        "regressed": "regressed",
        "down": "could_not_check",
    }
    assert check(by_name["regressed"], "script_changed")["status"] == "failed"
    assert by_name["regressed"]["baseline"] == "good-r"
    assert "connection refused" in by_name["down"]["reason"]

    need(
        importlib.util.find_spec("xmlschema") is not None,
        "xmlschema",
        "pip install xmlschema (the dev extra)",
    )
    import xmlschema

    xsd = Path(agent.__file__).parent / health_junit.XSD
    xmlschema.XMLSchema(str(xsd)).validate(str(out / "health.junit.xml"))
    need(
        importlib.util.find_spec("prometheus_client") is not None,
        "prometheus_client",
        "pip install prometheus_client (the dev extra)",
    )
    from prometheus_client.parser import text_string_to_metric_families

    flags = {
        s.labels["target"]: s.value
        for f in text_string_to_metric_families((out / "dflash_doctor_health.prom").read_text())
        for s in f.samples
        if s.name == "dflash_doctor_health_regression"
    }
    assert flags == {"healthy": 0, "regressed": 1, "down": 0}
    markdown = (out / "health.md").read_text()
    assert markdown.startswith("# dflash-doctor health: 1 regressed, 1 could not check, 1 healthy")
    assert list(out.glob("trend-*.svg"))
