"""The commented doctor.toml that ``init`` writes (tools._profile_template): every setting a
target profile takes is named in it, and each example setting it shows, uncommented, is a
valid profile that takes the example's value."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools._profile_template import TEMPLATE
from tools.profile import DoctorConfig, ExtraSignature, TargetProfile, load_config


@pytest.fixture(autouse=True)
def _no_profile_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment's DFLASH_DOCTOR_* settings would override the file under test."""
    for key in list(os.environ):
        if key.startswith("DFLASH_DOCTOR_"):
            monkeypatch.delenv(key)


def _loaded(tmp_path: Path, lines: list[str]) -> DoctorConfig:
    path = tmp_path / "doctor.toml"
    path.write_text("\n".join(lines) + "\n")
    return load_config(path)


def _uncommented(setting: str, nth: int = 0) -> list[str]:
    """The template's lines with the ``nth`` commented example of ``setting`` uncommented."""
    lines = TEMPLATE.splitlines()
    at = [i for i, line in enumerate(lines) if line.startswith(f"# {setting} = ")][nth]
    lines[at] = lines[at][2:]
    return lines


def test_every_setting_of_a_target_profile_is_in_the_template() -> None:
    """Each field a target profile takes is in the template, as a setting (``name = …``,
    commented or not) or as the table it heads (``[targets.trainer.name]``)."""
    lines = TEMPLATE.splitlines()
    missing = [
        name
        for name in TargetProfile.model_fields
        if not any(
            line.lstrip("# ").startswith(f"{name} = ")
            or line.lstrip("# ").strip("[]") == f"targets.trainer.{name}"
            for line in lines
        )
    ]
    assert missing == []


@pytest.mark.parametrize(
    ("setting", "nth", "value"),
    [
        ("interpreter", 0, "/workspace/.venv/bin/python"),
        ("checkpoint_pattern", 0, r"^ckpt_e(?P<epoch>\d+)_s(?P<step>\d+)$"),
        ("checkpoints", 0, "/workspace/checkpoints"),
        ("train_log", 0, "/workspace/checkpoints/train_log.jsonl"),
        ("stdout_log", 0, "/workspace/checkpoints/train_stdout.log"),
        ("scripts", 0, ["/workspace/train_dflash.py", "/workspace/configs/*.yaml"]),
        ("dataset", 0, ["/workspace/data/prompts.jsonl"]),
        ("flight_recorder", 0, ["/tmp/nccl_trace_rank_*"]),
        ("torch_trace", 0, ["/var/tmp/torch_trace"]),
        ("inductor_cache", 0, "/workspace/compile_cache"),
        ("extra_caches", 0, ["/workspace/compile_cache"]),
        ("triton_cache", 0, "/root/.triton/cache"),
        ("launch", 0, "/workspace/launch.sh"),
        ("launch", 1, "cd /workspace && python train_dflash.py --resume"),
        ("process_match", 0, ["train_dflash.py"]),
        ("py_spy", 0, "/opt/tools/bin/py-spy"),
        ("metadata_names", 0, ["metadata.json"]),
        ("metadata_keys", 0, {"torch": "env.pt_ver", "dataset_size": "data.n_prompts"}),
        ("env_files", 0, ["/workspace/pip-freeze.txt"]),
        ("integrity_packages", 0, ["torch", "triton"]),
        ("integrity_mode", 0, "py"),
        ("torch_import", 0, True),
        ("timeouts", 0, {"trainlog": 300, "integrity": 600}),
        ("parallel", 0, 4),
    ],
    ids=[
        "interpreter",
        "checkpoint_pattern",
        "checkpoints",
        "train_log",
        "stdout_log",
        "scripts",
        "dataset",
        "flight_recorder",
        "torch_trace",
        "inductor_cache",
        "extra_caches",
        "triton_cache",
        "launch-script",
        "launch-command",
        "process_match",
        "py_spy",
        "metadata_names",
        "metadata_keys",
        "env_files",
        "integrity_packages",
        "integrity_mode",
        "torch_import",
        "timeouts",
        "parallel",
    ],
)
def test_a_targets_example_setting_takes_its_value(
    tmp_path: Path, setting: str, nth: int, value: object
) -> None:
    """Each example setting of the target's table, uncommented alone, loads, and the target
    takes the value the example shows."""
    target = _loaded(tmp_path, _uncommented(setting, nth)).target("trainer")
    assert getattr(target, setting) == value


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("format", "csv"),
        ("step", "global_step"),
        ("tokens", "num_input_tokens_seen"),
        ("throughput", "tps"),
        ("throughput_unit", "tok/s"),
        ("group", ["role", "device"]),
    ],
    ids=["format", "step", "tokens", "throughput", "throughput_unit", "group"],
)
def test_a_log_field_example_takes_its_value(tmp_path: Path, setting: str, value: object) -> None:
    """Each example of the log_fields table, uncommented alone, loads into that table."""
    target = _loaded(tmp_path, _uncommented(setting)).target("trainer")
    assert getattr(target.log_fields, setting) == value


def test_the_default_target_example_names_the_templates_target(tmp_path: Path) -> None:
    """The default_target example, uncommented, makes the template's one target the default."""
    config = _loaded(tmp_path, _uncommented("default_target"))
    assert config.default_target == "trainer"
    assert config.target().uri == "local"


def test_the_signature_example_is_one_extra_signature(tmp_path: Path) -> None:
    """The extra error signature example, its table and lines uncommented together, is one
    signature with the id, pattern, meaning and needles shown."""
    lines = TEMPLATE.splitlines()
    at = lines.index("# [[targets.trainer.signatures]]")
    lines[at:] = [line[2:] for line in lines[at:]]
    target = _loaded(tmp_path, lines).target("trainer")
    assert target.signatures == [
        ExtraSignature(
            id="my_assert",
            pattern="AssertionError: shapes",
            means="the collate function produced mismatched shapes",
            needles=["AssertionError"],
        )
    ]
