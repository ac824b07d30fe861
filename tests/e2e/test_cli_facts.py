"""`dflash-doctor facts` and `init`, run as a user runs them, against real workspaces."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.lib.cli import cli


def test_facts_json_has_one_fact_per_probe_looked_at(tmp_path: Path) -> None:
    """--json prints {"facts": [{"id", "probe", "value", ...}]}; a workspace that does not
    exist yields failed facts saying so, not a crash."""
    missing = tmp_path / "nowhere"
    result = cli(
        "-q",
        "facts",
        "--target",
        "local",
        "--workspace",
        str(missing),
        "--interpreter",
        sys.executable,
        "--only",
        "host,checkpoints,trainlog",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    by_probe = {f["probe"]: f for f in document["facts"]}
    assert set(by_probe) == {"host", "checkpoints", "trainlog"}
    assert by_probe["host"]["error"] is None and by_probe["host"]["value"]["cpu_count"] >= 1
    for name in ("checkpoints", "trainlog"):
        assert by_probe[name]["error"].startswith("not_found:"), by_probe[name]
        assert str(missing) in by_probe[name]["error"]
    for fact in document["facts"]:
        assert fact["id"].startswith("F-")


def test_facts_unknown_probe_is_exit_2() -> None:
    """An unknown probe name in ``--only`` is one line, exit 2, listing the known probes."""
    result = cli("facts", "--target", "local", "--only", "host,gpu")
    assert result.returncode == 2
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1
    assert "unknown probe(s) gpu in --only (known: host, pyenv, gpus," in lines[0]


def test_facts_table_names_the_ledger(tmp_path: Path) -> None:
    """The facts table names the target, the probes run, and where the ledger was
    written."""
    result = cli(
        "-q", "facts", "--target", "local", "--only", "host", "--interpreter", sys.executable
    )
    assert result.returncode == 0
    out = result.stdout.decode()
    assert "facts on local" in out and "host" in out and "ledger:" in out


def test_init_writes_a_profile_that_facts_can_use(tmp_path: Path) -> None:
    """The template parses; a profile naming a local target drives `facts`."""
    path = tmp_path / "doctor.toml"
    assert cli("init", str(path)).returncode == 0
    assert cli("init", str(path)).returncode == 2  # never overwrites without --force
    path.write_text(
        path.read_text()
        + f'\n[targets.here]\nuri = "local"\ninterpreter = "{sys.executable}"\n'
        + f'workspace = "{tmp_path}"\n'
    )
    result = cli(
        "-q", "facts", "--config", str(path), "--target", "here", "--only", "pyenv", "--json"
    )
    assert result.returncode == 0, result.stderr
    fact = json.loads(result.stdout)["facts"][0]
    assert fact["value"]["python"]["executable"] == sys.executable


def test_bad_profile_is_one_line_exit_2(tmp_path: Path) -> None:
    """A profile with a malformed target URI is one line, exit 2, naming the profile file
    and the problem."""
    path = tmp_path / "doctor.toml"
    path.write_text('[targets.x]\nuri = "ssh://root@:22"\n')
    result = cli("facts", "--config", str(path), "--target", "x")
    assert result.returncode == 2
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and "missing host" in lines[0] and str(path) in lines[0]
