"""doctor.toml profiles: the template, loading, overrides, and profiles that do not hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.errors import ConfigError, UsageError
from tools.profile import (
    TEMPLATE,
    TargetProfile,
    load_config,
    write_template,
)
from tools.sweep import SweepSpec, build_plan


@pytest.fixture(autouse=True)
def _no_profile_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("DFLASH_DOCTOR_"):
            monkeypatch.delenv(key)


def test_template_loads_and_means_the_incident_layout(tmp_path: Path) -> None:
    """The file `init` writes is valid as written, and its one target sweeps /workspace:
    no path is assumed, the probes are sent the workspace to find them in."""
    path = write_template(tmp_path / "doctor.toml")
    profile = load_config(path).target()
    spec = profile.sweep_spec()
    assert spec.workspace == "/workspace"
    assert (spec.train_log, spec.stdout_log, spec.checkpoints, spec.scripts) == (
        None,
        None,
        None,
        (),
    )
    params = {p.name: p.params or {} for p in build_plan(spec).probes}
    for probe in ("layout", "checkpoints", "trainlog", "stdoutlog", "checksums", "dataset"):
        assert params[probe].get("workspace") == "/workspace"
    assert "# " in TEMPLATE and "[targets.trainer]" in TEMPLATE


def test_template_is_not_overwritten(tmp_path: Path) -> None:
    """Writing the template over an existing file is refused and the file kept; with force it is
    replaced."""
    path = write_template(tmp_path / "doctor.toml")
    path.write_text("# mine\n")
    with pytest.raises(UsageError, match="exists"):
        write_template(path)
    assert path.read_text() == "# mine\n"
    write_template(path, force=True)
    assert "[targets.trainer]" in path.read_text()


def test_full_profile(tmp_path: Path) -> None:
    """Every field of a full profile reaches the sweep: the given paths, the process to match taken
    from the launch command, log fields, throughput unit, timeouts and signatures; what is not given
    is left for the target to find."""
    path = tmp_path / "doctor.toml"
    path.write_text("""
default_target = "h200"
[targets.h200]
uri = "ssh://root@gpu-host/pct:200"
interpreter = "/workspace/.venv/bin/python"
workspace = "/workspace"
train_log = "/logs/train.jsonl"
launch = "cd /workspace && python train_dflash.py --resume"
timeouts = { trainlog = 300 }
[targets.h200.log_fields]
throughput = "tps"
throughput_unit = "ktok/s"
group = ["device"]
[[targets.h200.signatures]]
id = "shapes"
pattern = "shapes differ"
""")
    profile = load_config(path).target()
    assert profile.uri == "ssh://root@gpu-host/pct:200"
    spec = profile.sweep_spec()
    assert spec.train_log == "/logs/train.jsonl"  # given
    assert spec.checkpoints is None  # found on the target
    assert spec.process_match == ("train_dflash.py",)  # from the launch command
    assert spec.log_fields == {"throughput": "tps", "group": ["device"]}
    assert spec.throughput_unit == "ktok/s"
    assert spec.timeouts == {"trainlog": 300}
    assert spec.extra_signatures[0]["id"] == "shapes"
    assert profile.sweep_spec(workspace="/other").workspace == "/other"


def test_environment_overrides_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An environment variable overrides the profile file's value for that target's field."""
    path = write_template(tmp_path / "doctor.toml")
    monkeypatch.setenv("DFLASH_DOCTOR_TARGETS__TRAINER__INTERPRETER", "/opt/venv/bin/python")
    assert load_config(path).target("trainer").interpreter == "/opt/venv/bin/python"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[targets.x\n", "not valid TOML"),
        ('[targets.x]\nuri = "ssh://"\n', "targets.x.uri"),
        ('[targets.x]\nuri = "local"\nworkspce = "/w"\n', "targets.x.workspce"),
        ('[targets.x]\nuri = "local"\ntimeouts = { gpu = 3 }\n', "unknown probe"),
        ('[targets.x]\nuri = "local"\nparallel = 0\n', "targets.x.parallel"),
        (
            '[targets.x]\nuri = "local"\n[targets.x.log_fields]\nthroughput_unit = "tok/h"\n',
            "throughput_unit",
        ),
    ],
)
def test_bad_profiles_name_the_problem(tmp_path: Path, text: str, needle: str) -> None:
    """A profile that is not TOML, has a bad URI, a misspelt key, an unknown probe, a bad number or
    an unknown unit is refused naming the file and the offending key."""
    path = tmp_path / "doctor.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=needle) as err:
        load_config(path)
    assert str(path) in str(err.value)


def test_missing_file_and_unknown_target(tmp_path: Path) -> None:
    """A profile file that does not exist, or a target it does not define, is an error; the latter
    lists the targets it does define."""
    with pytest.raises(ConfigError, match="no such profile"):
        load_config(tmp_path / "nope.toml")
    path = write_template(tmp_path / "doctor.toml")
    with pytest.raises(ConfigError, match=r"no target 'gpu'.*trainer"):
        load_config(path).target("gpu")


def test_default_path_may_be_absent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --profile and without a doctor.toml anywhere: no targets, no error."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    config = load_config()
    assert config.targets == {}
    with pytest.raises(ConfigError, match="no target named"):
        config.target()


def test_workspace_without_profile() -> None:
    """A sweep from a workspace alone normalises the path and assumes nothing else: checkpoints are
    found on the target, and no cache is made up."""
    spec = SweepSpec.for_workspace("/workspace/")
    assert spec == SweepSpec.for_workspace("/workspace")
    assert spec.workspace == "/workspace" and spec.checkpoints is None
    assert spec.extra_caches == ()  # no cache is made up for a trainer


def test_process_patterns() -> None:
    """The trainer's process is matched by 'train' by default, by the script of the launch command
    when there is one, and by an explicit match when given."""
    assert TargetProfile(uri="local").process_patterns() == ["train"]
    assert TargetProfile(uri="local", launch="torchrun --nproc 8 /w/run.py").process_patterns() == [
        "run.py"
    ]
    assert TargetProfile(uri="local", process_match=["x"]).process_patterns() == ["x"]


def test_checkpoint_pattern_and_extra_caches_reach_the_probes(tmp_path: Path) -> None:
    """A profile's checkpoint name pattern goes to the checkpoints probe, its extra caches
    to the caches probe; a pattern that cannot be used is refused in one line."""
    path = tmp_path / "doctor.toml"
    path.write_text(
        '[targets.t]\nuri = "local"\nworkspace = "/w"\n'
        'checkpoint_pattern = "^snap(?P<step>\\\\d+)$"\nextra_caches = ["/w/cc"]\n'
    )
    spec = load_config(path).target().sweep_spec()
    params = {p.name: p.params for p in build_plan(spec).probes}
    assert params["checkpoints"] is not None and params["caches"] is not None
    assert params["checkpoints"]["pattern"] == r"^snap(?P<step>\d+)$"
    assert params["caches"]["extra"] == ["/w/cc"]
    path.write_text('[targets.t]\nuri = "local"\ncheckpoint_pattern = "^snap(\\\\d+)$"\n')
    with pytest.raises(ConfigError, match="needs a group named step or epoch"):
        load_config(path)
