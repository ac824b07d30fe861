"""``--config`` with every ``--target`` form (a profile name, ``local``, ``local/HOP``,
``ssh://…``), for every command that takes both: the profile applies and the output says
which, or the command stops with one line saying why it cannot apply."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent.sessions.targets import resolve_target
from tests.lib.cli import cli
from tests.lib.sshd import SSHServer
from tools.errors import ConfigError


def _profile(path: Path, ws: Path, *extra: str) -> Path:
    """One local profile (its own workspace, interpreter, probe settings) and whatever
    ``extra`` tables the test adds."""
    path.write_text(
        "\n".join(
            [
                "[targets.here]",
                'uri = "local"',
                f'interpreter = "{sys.executable}"',
                f'workspace = "{ws}"',
                "torch_import = false",
                "integrity_packages = []",
                "",
                *extra,
            ]
        )
        + "\n"
    )
    return path


@pytest.fixture
def config(tmp_path: Path) -> Path:
    ws = tmp_path / "trainer-ws"
    ws.mkdir()
    return _profile(tmp_path / "doctor.toml", ws)


def _facts(*args: str) -> tuple[dict[str, object], str]:
    done = cli("-q", "facts", "--only", "host,interpreter", "--json", *args)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout), done.stderr.decode()


def _interpreter_reason(document: dict[str, object]) -> str:
    facts = document["facts"]
    assert isinstance(facts, list)
    fact = next(f for f in facts if f["probe"] == "interpreter")
    return str(fact["value"]["chosen_because"])


def test_a_name_and_its_uri_resolve_to_the_same_profile(config: Path) -> None:
    """A profile named by its name or by its uri resolves to the same settings, and the
    settings line says which way it was found."""
    by_name = resolve_target("here", config=str(config))
    by_uri = resolve_target("local", config=str(config))
    assert by_name.spec == by_uri.spec and by_name.name == by_uri.name == "here"
    assert by_name.settings == f"profile 'here' of {config} (named by --target)"
    assert by_uri.settings == f"profile 'here' of {config} (its uri is local)"


def test_facts_applies_the_profile_for_its_uri(config: Path) -> None:
    """`--target local --config X` no longer ignores X: its workspace and interpreter are
    used, and the output says which profile applied."""
    document, err = _facts("--target", "local", "--config", str(config))
    assert f"profile 'here' of {config}" in str(document["settings"])
    assert f"settings: profile 'here' of {config}" in err
    assert _interpreter_reason(document) == "the profile's interpreter (no discovery)"
    facts = document["facts"]
    assert isinstance(facts, list)
    host = next(f for f in facts if f["probe"] == "host")
    assert [d["path"] for d in host["value"]["disks"]] == [str(config.parent / "trainer-ws")]


def test_without_config_a_uri_says_no_profile_applies() -> None:
    """Without a profile, a uri runs with default settings and says so; the interpreter is
    discovered unless ``--interpreter`` names one."""
    resolved = resolve_target("local", interpreter=sys.executable)
    assert resolved.settings == "no profile: local with the default settings and no workspace"
    assert resolved.profile is None
    assert resolved.spec.interpreter_reason == "given by --interpreter (no discovery)"
    assert resolve_target("local").spec.discover_interpreter is True


def test_a_uri_no_profile_has_is_one_line_exit_2(config: Path) -> None:
    """A uri that no profile in ``--config`` has is one line, exit 2, listing the profiles
    there."""
    done = cli("facts", "--target", "local/pct:200", "--config", str(config))
    assert done.returncode == 2
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1
    assert f"{config}: no profile has uri local/pct:200 (profiles: here (local))" in lines[0]


def test_several_profiles_with_the_uri_are_ambiguous_unless_one_is_the_default(
    tmp_path: Path,
) -> None:
    """Two profiles with the same uri are ambiguous (one line, exit 2, naming both) unless
    one is ``default_target``, which then applies."""
    ws = tmp_path / "ws"
    ws.mkdir()
    twin = ["[targets.twin]", 'uri = "local"', f'workspace = "{tmp_path}"']
    path = _profile(tmp_path / "doctor.toml", ws, *twin)
    done = cli("facts", "--target", "local", "--config", str(path))
    assert done.returncode == 2
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and "2 profiles have uri local (here, twin)" in lines[0]
    path.write_text('default_target = "twin"\n' + path.read_text())
    resolved = resolve_target("local", config=str(path))
    assert resolved.name == "twin" and resolved.spec.workspace == str(tmp_path)


def test_a_config_without_targets_is_not_silently_ignored(tmp_path: Path) -> None:
    """A profile naming no targets is an error, not silently ignored."""
    empty = tmp_path / "doctor.toml"
    empty.write_text("# nothing yet\n")
    with pytest.raises(ConfigError, match="the profile names no targets"):
        resolve_target(None, config=str(empty))


def test_the_interpreter_option_overrides_the_profile(config: Path) -> None:
    """``--interpreter`` overrides the profile's interpreter and turns off discovery."""
    spec = resolve_target("local", config=str(config), interpreter="python3").spec
    assert (spec.interpreter, spec.discover_interpreter) == ("python3", False)
    assert spec.interpreter_reason == "given by --interpreter (no discovery)"


def test_snapshot_applies_the_profile_for_its_uri(config: Path) -> None:
    """``snapshot`` with a uri applies the profile that has it and says so."""
    done = cli("-q", "snapshot", "--name", "good", "--target", "local", "--config", str(config))
    assert done.returncode == 0, done.stderr.decode()
    assert f"settings: profile 'here' of {config}" in done.stderr.decode()
    assert "baseline 'good'" in done.stdout.decode()


def test_diagnose_applies_the_profile_for_its_uri(config: Path) -> None:
    """``diagnose`` with a uri applies that profile, and the report says the interpreter
    came from it."""
    done = cli(
        "-q",
        "diagnose",
        "--target",
        "local",
        "--config",
        str(config),
        "--non-interactive",
        "--plan-only",
        "--json",
    )
    assert f"settings: profile 'here' of {config}" in done.stderr.decode()
    report = json.loads(done.stdout)
    assert report["target"] == "local"
    probed = next(s for s in report["sections"] if s["title"] == "probed with")
    assert [line["text"] for line in probed["lines"]] == [
        f"the target's Python {sys.executable}: the profile's interpreter (no discovery)"
    ]


def test_health_labels_the_target_by_the_profile_its_uri_matches(config: Path) -> None:
    """``health`` labels a target given by uri with the name of the profile whose uri it
    is."""
    done = cli(
        "-q", "health", "--format", "json", "--target", "local", "--config", str(config),
        "--baseline", "never-taken",
    )  # fmt: skip
    document = json.loads(done.stdout)
    assert [t["target"] for t in document["targets"]] == ["here"]


def test_health_stops_on_a_uri_no_profile_has(config: Path) -> None:
    """``health`` on a uri no profile has stops in one line, exit 2, rather than running
    unconfigured."""
    done = cli(
        "health", "--target", "ssh://nobody@example.invalid", "--config", str(config),
        "--baseline", "good",
    )  # fmt: skip
    assert done.returncode == 2
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and "no profile has uri ssh://nobody@example.invalid" in lines[0]


def test_an_ssh_uri_finds_its_profile(sshd_server: SSHServer, tmp_path: Path) -> None:
    """Through the real sshd and a container hop: the profile whose uri is the one typed
    gives the workspace; its interpreter is found there (the profile names none)."""
    ws = tmp_path / "remote-ws"
    ws.mkdir()
    uri = f"{sshd_server.uri}/pct:200"
    path = tmp_path / "doctor.toml"
    path.write_text(f'[targets.gpu]\nuri = "{uri}"\nworkspace = "{ws}"\ntorch_import = false\n')
    document, err = _facts(
        "--target",
        uri,
        "--config",
        str(path),
        "--identity",
        str(sshd_server.identity),
        "--known-hosts",
        str(sshd_server.known_hosts),
        "--retries",
        "0",
    )
    assert "settings: profile 'gpu' of" in err
    facts = document["facts"]
    assert isinstance(facts, list)
    chosen = next(f for f in facts if f["probe"] == "interpreter")["value"]
    assert chosen["discovered"] is True, chosen
