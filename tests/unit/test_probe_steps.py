"""_steps: the step and epoch a checkpoint's name carries, for every trainer's naming."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.probes._steps import compile_pattern, holds_state, read_step

# name, is a directory, (step, epoch, incomplete, form) or None for "not a checkpoint"
CASES: list[tuple[str, bool, tuple[int | None, int | None, bool, str] | None]] = [
    ("step_690", True, (690, None, False, "step")),  # the reference trainer
    ("step_000690", True, (690, None, False, "step")),  # zero-padded
    ("step-20", True, (20, None, False, "step")),
    ("checkpoint-500", True, (500, None, False, "checkpoint")),  # HF Trainer
    ("tmp-checkpoint-500", True, (500, None, True, "checkpoint")),  # HF, mid-save
    ("ckpt_7", True, (7, None, False, "checkpoint")),
    ("epoch_0_step_1000", True, (1000, 0, False, "epoch_step")),  # SpecForge DFlash
    ("epoch=1-step=40.ckpt", False, (40, 1, False, "epoch_step")),  # Lightning
    ("epoch=1-step=40-v1.ckpt", False, (40, 1, False, "epoch_step")),  # Lightning, renamed
    ("qwen-dflash-step1000", True, (1000, None, False, "step")),  # <run>-stepN
    ("model_step1000.pt", False, (1000, None, False, "step")),
    ("global_step300", True, (300, None, False, "global_step")),  # DeepSpeed
    ("iter_0000100", True, (100, None, False, "iteration")),  # Megatron
    ("epoch_3", True, (None, 3, False, "epoch")),  # torchtune (with a state file)
    ("epoch=2.ckpt", False, (None, 2, False, "epoch")),
    ("step_40.tmp", True, (40, None, True, "step")),
    ("step_40.partial", True, (40, None, True, "step")),
    ("checkpoint-9.incomplete", True, (9, None, True, "checkpoint")),
    ("epoch=0-step=40.ckpt.tmp", False, (40, 0, True, "epoch_step")),
    ("last.ckpt", False, None),  # Lightning's copy of the newest: no step in the name
    ("train_log.jsonl", False, None),
    ("step_5.log", False, None),  # a log named with a step is no checkpoint file
    ("runs", True, None),
    ("stepper", True, None),
    ("checkpoints", True, None),
]


@pytest.mark.parametrize(("name", "is_dir", "expected"), CASES)
def test_read_step(
    name: str, is_dir: bool, expected: tuple[int | None, int | None, bool, str] | None
) -> None:
    """Each trainer family's checkpoint names yield their step and epoch, with mid-save copies
    marked incomplete; logs, Lightning's last.ckpt and names that merely contain 'step' are no
    checkpoint."""
    got = read_step(name, is_dir)
    if expected is None:
        assert got is None
    else:
        assert got is not None
        assert (got["step"], got["epoch"], got["incomplete"], got["form"]) == expected


def test_profile_pattern_replaces_the_built_in_forms() -> None:
    """A profile's pattern names what the built-in forms cannot, and only that."""
    pattern = compile_pattern(r"snap_e(?P<epoch>\d+)_s(?P<step>\d+)(\.tmp)?")
    got = read_step("snap_e2_s300.tmp", True, pattern)
    assert got == {"step": 300, "epoch": 2, "incomplete": True, "form": "profile"}
    assert read_step("step_20", True, pattern) is None


@pytest.mark.parametrize(
    ("pattern", "why"),
    [("snap(", "missing"), (r"snap(\d+)", "needs a group named step or epoch")],
)
def test_unusable_pattern_says_why(pattern: str, why: str) -> None:
    """A profile pattern that is not a valid regular expression, or has no group named step or
    epoch, is refused saying why."""
    with pytest.raises(ValueError, match=why):
        compile_pattern(pattern)


def test_epoch_directory_needs_a_state_file(tmp_path: Path) -> None:
    """``epoch_0/`` is a checkpoint only when it holds model or optimizer state."""
    (tmp_path / "epoch_0").mkdir()
    (tmp_path / "epoch_0" / "notes.txt").write_text("x")
    assert not holds_state(str(tmp_path / "epoch_0"))
    (tmp_path / "epoch_0" / "model-00001-of-00001.safetensors").write_bytes(b"x")
    assert holds_state(str(tmp_path / "epoch_0"))
    assert not holds_state(str(tmp_path / "missing"))
