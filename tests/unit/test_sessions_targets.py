"""Resolving what the user typed (``agent.sessions.targets``): ``--target`` read as a URI
or as a profile's name, the profile that applies (named, the default, the only one, or
the one whose uri was typed), the workspace and interpreter options on top, and the one
sentence that says which settings apply; a profile that cannot be chosen is an error
saying why."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.sessions.targets import resolve_target
from tools.errors import ConfigError


@pytest.fixture(autouse=True)
def no_profile_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``doctor.toml`` in the working directory or the config home unless a test
    writes one, and no profile settings from the environment."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config-home"))
    for name in [n for n in os.environ if n.startswith("DFLASH_DOCTOR_")]:
        monkeypatch.delenv(name)


def profile(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


TWO = """\
default_target = "lab"

[targets.lab]
uri = "ssh://root@lab-1:2222"
workspace = "/srv/lab"

[targets.box]
uri = "local/pct:200"
workspace = "/srv/box"
"""


@pytest.mark.parametrize(
    "uri",
    ["local", "local/pct:200", "local/docker:trainer", "ssh://root@gpu-7:2222", "ssh://gpu/pct:1"],
    ids=["local", "local-container", "local-docker", "ssh", "ssh-hop"],
)
def test_a_uri_without_config_runs_with_the_defaults_and_says_so(uri: str) -> None:
    """A target that is a URI (``local``, ``local/…`` or has ``://``), with no
    ``--config``, is that URI with the default settings, no profile, and the trainer's
    Python found by discovery."""
    resolved = resolve_target(uri)
    assert (str(resolved.uri), resolved.profile, resolved.name) == (uri, None, None)
    assert resolved.settings == f"no profile: {uri} with the default settings and no workspace"
    assert resolved.spec.discover_interpreter is True


def test_a_uri_with_a_workspace_says_which() -> None:
    """``--workspace`` with a URI and no profile sweeps that workspace, still discovering
    the interpreter, and the settings sentence names it."""
    resolved = resolve_target("local", workspace="/srv/ws")
    assert (resolved.spec.workspace, resolved.spec.discover_interpreter) == ("/srv/ws", True)
    assert (
        resolved.settings == "no profile: local with the default settings and the workspace /srv/ws"
    )


@pytest.mark.parametrize(
    "typed",
    ["localhost", "local-gpu", "gpu:22", "ssh-box"],
    ids=["localhost", "local-dash", "port", "ssh-dash"],
)
def test_anything_else_is_a_profiles_name(typed: str, tmp_path: Path) -> None:
    """A target that is not ``local``, does not start ``local/`` and has no ``://`` is
    looked up as a profile's name; one the profile lacks is an error listing those it
    has."""
    config = profile(tmp_path / "doctor.toml", TWO)
    with pytest.raises(ConfigError) as info:
        resolve_target(typed, config=config)
    assert str(info.value) == f"no target {typed!r} in the profile (targets: box, lab)"


def test_a_profile_named_gives_its_uri_and_workspace(tmp_path: Path) -> None:
    """A profile named by ``--target`` gives its own uri and workspace, its name, and a
    sentence naming the profile, the file and that it was named."""
    config = profile(tmp_path / "doctor.toml", TWO)
    resolved = resolve_target("box", config=config)
    assert (str(resolved.uri), resolved.name, resolved.spec.workspace) == (
        "local/pct:200",
        "box",
        "/srv/box",
    )
    assert resolved.settings == f"profile 'box' of {config} (named by --target)"


def test_without_a_target_the_default_target_applies(tmp_path: Path) -> None:
    """With no ``--target`` the profile's ``default_target`` applies and the sentence says
    it was the default."""
    config = profile(tmp_path / "doctor.toml", TWO)
    resolved = resolve_target(None, config=config)
    assert (str(resolved.uri), resolved.name) == ("ssh://root@lab-1:2222", "lab")
    assert resolved.settings == f"profile 'lab' of {config} (the default target)"


def test_the_workspace_and_interpreter_options_win_over_the_profile(tmp_path: Path) -> None:
    """``--workspace`` replaces the profile's workspace, and ``--interpreter`` its
    interpreter, with discovery off and the reason said."""
    config = profile(tmp_path / "doctor.toml", TWO)
    spec = resolve_target(
        "lab", config=config, workspace="/tmp/ws", interpreter="/v/bin/python"
    ).spec
    assert (spec.workspace, spec.interpreter, spec.discover_interpreter) == (
        "/tmp/ws",
        "/v/bin/python",
        False,
    )
    assert spec.interpreter_reason == "given by --interpreter (no discovery)"


def test_the_profile_file_in_the_working_directory_is_read_without_config(
    tmp_path: Path,
) -> None:
    """Without ``--config``, a ``doctor.toml`` in the working directory is the profile,
    and the sentence names that file."""
    profile(tmp_path / "doctor.toml", TWO)
    resolved = resolve_target(None)
    assert resolved.name == "lab"
    assert resolved.settings == f"profile 'lab' of {tmp_path / 'doctor.toml'} (the default target)"


def test_with_no_target_and_no_profile_file_the_target_is_local(tmp_path: Path) -> None:
    """No ``--target``, no ``--config`` and no profile file anywhere: the target is
    ``local`` with the default settings, the workspace and interpreter given still
    applying."""
    resolved = resolve_target(None, workspace="/srv/ws", interpreter="/v/bin/python")
    assert (str(resolved.uri), resolved.profile) == ("local", None)
    assert (
        resolved.settings == "no profile: local with the default settings and the workspace /srv/ws"
    )
    assert (resolved.spec.workspace, resolved.spec.interpreter) == ("/srv/ws", "/v/bin/python")
    assert resolved.spec.discover_interpreter is False


def test_a_uri_is_matched_as_parsed_not_as_typed(tmp_path: Path) -> None:
    """The profile for a typed URI is the one whose uri means the same target, though it
    is spelled differently (here, with a trailing slash)."""
    config = profile(tmp_path / "doctor.toml", '[targets.gpu]\nuri = "ssh://root@gpu-7/"\n')
    resolved = resolve_target("ssh://root@gpu-7", config=config)
    assert resolved.name == "gpu"
    assert resolved.settings == f"profile 'gpu' of {config} (its uri is ssh://root@gpu-7)"


def test_a_uri_against_a_profile_with_no_targets_lists_none(tmp_path: Path) -> None:
    """A URI with a ``--config`` that names no targets is refused, listing the profiles
    as "none" and saying how to go on."""
    config = profile(tmp_path / "doctor.toml", "# nothing yet\n")
    with pytest.raises(ConfigError) as info:
        resolve_target("local", config=config)
    assert str(info.value) == (
        f"{config}: no profile has uri local (profiles: none); "
        "name one with --target NAME, or leave out --config"
    )


def test_several_profiles_for_a_uri_none_the_default_is_ambiguous(tmp_path: Path) -> None:
    """Two profiles with the typed URI, neither the default target, are refused naming
    how many, which (sorted) and how to choose; the default target being a third does
    not help."""
    text = (
        TWO
        + '\n[targets.twin]\nuri = "local/pct:200"\n\n[targets.another]\nuri = "local/pct:200"\n'
    )
    config = profile(tmp_path / "doctor.toml", text)
    with pytest.raises(ConfigError) as info:
        resolve_target("local/pct:200", config=config)
    assert str(info.value) == (
        f"{config}: 3 profiles have uri local/pct:200 (another, box, twin) and none is the "
        "default_target; name one with --target NAME"
    )


def test_without_a_target_a_file_of_one_profile_applies_it_by_name(tmp_path: Path) -> None:
    """A profile file holding one profile and no default_target: that profile applies, and
    the result carries its name as well as the sentence does (health labels a target by
    it; it was None, so the target was shown as its URI)."""
    config = profile(tmp_path / "doctor.toml", '[targets.gpu]\nuri = "local/pct:200"\n')
    resolved = resolve_target(None, config=str(config))
    assert resolved.name == "gpu"
    assert resolved.settings == f"profile 'gpu' of {config} (the default target)"
