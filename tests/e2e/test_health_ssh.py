"""`dflash-doctor health` as cron runs it, against real reference-trainer workspaces
through the real test sshd and the stand-in pct hop.

Every workspace was produced by the trainer itself (tests/lib/workspaces.py); each test takes
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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent.analysis.baseline import baseline_store
from agent.graph.gather import SweepGatherer
from agent.health.output import junit as health_junit
from agent.health.output.names import FILES
from agent.model.facts import Fact, Ledger
from tests.lib import oracle
from tests.lib.cli import cli
from tests.lib.need import need
from tests.lib.sshd import SSHServer, free_port
from tests.lib.workspaces import Scenario, clone, trainer
from tools.sweep import SweepSpec
from tools.transcript import read_transcript
from tools.transport import LocalTransport

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
    """Run the console script; return its exit code, its JSON document (its figures
    held to the raw logs by the oracle), and seconds."""
    started = time.monotonic()
    done = cli("-q", "health", "--format", "json", *args)
    elapsed = time.monotonic() - started
    assert done.stdout, done.stderr.decode()
    doc = json.loads(done.stdout)
    assert oracle.check_health(doc) == []
    return done.returncode, doc, elapsed


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
    assert all(listed[c]["command"] == f"{sys.executable} -B -" for c in cites)


def only_the_bundle_ran(target: dict[str, Any]) -> None:
    """The session's transcript holds one command: the probe bundle."""
    _header, events = read_transcript(Path(target["transcript"]))
    commands = [e for e in events if e["type"].startswith("command")]
    assert [e["argv"] for e in commands] == [[sys.executable, "-B", "-"]]
    assert not [e for e in events if e["type"] in ("plan", "approval", "apply", "refused")]


@dataclass(frozen=True)
class Fleet:
    """Copies of the good workspace, each with the facts of its good state; all but
    ``healthy`` then damaged by the trainer's own `break` command. Health checks only
    read, so the tests of this module share them."""

    workspaces: dict[str, Path]
    good_facts: dict[str, list[Fact]]

    def install_baselines(self) -> None:
        for name, facts in self.good_facts.items():
            baseline_store().save(f"good-{name}", "local", facts)


# name -> (the trainer's `break` damage, the family it must verify, a sentence it cites)
DAMAGE = {
    "script": ("script", "script_changed", "md5 of {ws}/train_dflash.py (now)"),
    "truncated": (
        "truncate-checkpoint",
        "checkpoint_integrity",
        "checkpoint files with problems = 1",
    ),
    "cache": (
        "compile-cache",
        "compile_cache_cold",
        "extra compile cache {ws}/compile_cache: exists = False",
    ),
}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, good_workspace: Path) -> Fleet:
    root = tmp_path_factory.mktemp("fleet")
    workspaces = {name: clone(good_workspace, root / name) for name in ["healthy", *DAMAGE]}
    with ThreadPoolExecutor(len(workspaces)) as pool:  # one bundle per copy, side by side
        facts = dict(zip(workspaces, pool.map(gather_good, workspaces.values()), strict=True))
    for name, (damage, _family, _sentence) in DAMAGE.items():
        assert trainer("break", damage, "--workspace", workspaces[name]).returncode == 0
    return Fleet(workspaces, facts)


def gather_good(ws: Path) -> list[Fact]:
    """``gather_local`` with the profile's cache, in several threads at once (the
    bundle's render is safe there: ``tools.sweep.bundle``)."""
    spec = SweepSpec.for_workspace(
        str(ws), interpreter=sys.executable, extra_caches=(f"{ws}/compile_cache",)
    )
    return SweepGatherer(LocalTransport(), spec, Ledger())(None)


def profile(path: Path, targets: dict[str, tuple[str, Path]]) -> Path:
    lines = []
    for name, (uri, ws) in targets.items():
        lines += [
            f"[targets.{name}]",
            f'uri = "{uri}"',
            f'workspace = "{ws}"',
            f'interpreter = "{sys.executable}"',
            # The reference trainer sets its cache directory in code: the profile names it.
            f'extra_caches = ["{ws}/compile_cache"]',
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_healthy_target_exits_0(fleet: Fleet, sshd_server: SSHServer) -> None:
    """A healthy target through the real sshd and the pct hop exits 0: every check passed,
    the figures read, and only the bundle run there."""
    fleet.install_baselines()
    uri = f"{sshd_server.uri}/pct:200"
    ws = fleet.workspaces["healthy"]
    rc, doc, _ = health(
        "--target", uri, "-b", "good-healthy", *workspace_args(ws), *ssh_args(sshd_server)
    )
    assert rc == 0, doc["exit_reason"]
    (target,) = doc["targets"]
    assert target["status"] == "healthy" and target["target"] == uri
    assert {c["status"] for c in target["checks"]} == {"passed"}
    assert target["metrics"]["tokens_per_s"]["value"] > 0
    assert target["metrics"]["last_step"]["value"] == 40
    only_the_bundle_ran(target)


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_mixed_fleet_each_family_regressed_one_down_one_healthy(
    fleet: Fleet, sshd_server: SSHServer, tmp_path: Path
) -> None:
    """The nightly run over a fleet from a profile (--all): one copy healthy, one per
    regression family, one host down. Exit 1 (a regression outranks "could not check");
    each target gets its own result — each family verified with its cited verdict — and
    every output format lands in --out: JUnit valid against its schema, the Prometheus
    file parseable."""
    fleet.install_baselines()
    targets = {name: (f"{sshd_server.uri}/pct:200", ws) for name, ws in fleet.workspaces.items()}
    targets["down"] = (f"ssh://{sshd_server.user}@127.0.0.1:{free_port()}", tmp_path)
    config = profile(tmp_path / "doctor.toml", targets)
    # One baseline for all (the down host's), one per copy by TARGET=NAME.
    baselines = ["-b", "good-healthy"]
    for name in fleet.workspaces:
        baselines += ["-b", f"{name}=good-{name}"]
    out = tmp_path / "out"
    args = ["--config", str(config), "--all", "--out", str(out), "--jobs", "5"]
    done = cli("-q", "health", *args, *baselines, *ssh_args(sshd_server))
    assert done.returncode == 1, done.stderr
    assert b"regression found on script, truncated, cache (could not check down)" in done.stdout
    doc = json.loads((out / "health.json").read_text())
    assert oracle.check_health_dir(out, FILES) == []
    by_name = {t["target"]: t for t in doc["targets"]}
    assert {k: t["status"] for k, t in by_name.items()} == {
        "healthy": "healthy",
        "script": "regressed",
        "truncated": "regressed",
        "cache": "regressed",
        "down": "could_not_check",
    }
    assert "connection refused" in by_name["down"]["reason"]
    assert {c["status"] for c in by_name["healthy"]["checks"]} == {"passed"}
    for name, (_damage, family, sentence) in DAMAGE.items():
        target = by_name[name]
        assert target["baseline"] == f"good-{name}"
        failed = check(target, family)
        assert failed["status"] == "failed", target["checks"]
        ws = fleet.workspaces[name]
        assert any(sentence.format(ws=ws) in line["text"] for line in failed["lines"]), failed
        assert all(line["outcome"] == "holds" for line in failed["lines"])
        assert failed["since"] is not None
        assert_cited(target, failed)
        only_the_bundle_ran(target)

    need(
        importlib.util.find_spec("xmlschema") is not None,
        "xmlschema",
        "pip install xmlschema (the dev extra)",
    )
    import xmlschema

    xsd = Path(health_junit.__file__).parent / health_junit.XSD
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
    assert flags == {"healthy": 0, "script": 1, "truncated": 1, "cache": 1, "down": 0}
    markdown = (out / "health.md").read_text()
    assert markdown.startswith("# dflash-doctor health: 3 regressed, 1 could not check, 1 healthy")
    assert len(list(out.glob("trend-*.svg"))) == 4


@pytest.mark.torch
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_incident_race_exits_1_with_torchs_error_cited(
    race_scenario: Scenario, sshd_server: SSHServer
) -> None:
    """The incident's race over SSH exits 1: the race check fails quoting torch's FX-trace
    error, dataset churn fails too, and the race's lines are cited."""
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


@pytest.mark.slow
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
