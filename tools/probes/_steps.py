"""The step (and epoch) a checkpoint's name carries, whatever trainer wrote it.

Trainers name checkpoints differently: the reference trainer ``step_N``, some zero-pad
it (``step_000690``), Hugging Face's Trainer ``checkpoint-N`` (saved first as
``tmp-checkpoint-N``), SpecForge's DFlash trainer ``epoch_E_step_S``, DeepSpeed
``global_stepN``, Megatron ``iter_0000100``, Lightning's ModelCheckpoint files
``epoch=E-step=S.ckpt``, many scripts ``<run>-stepN.pt``, and torchtune a directory per
epoch (``epoch_N/``). A ``.tmp``/``.partial``/``.incomplete`` suffix marks a save that never
finished. A profile's ``checkpoint_pattern`` (a regex with named groups ``step`` and/or
``epoch``) replaces the built-in forms.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ..parsers._bounded import Budget, Overran
from ._common import TypedDict

__all__ = [
    "CHECKPOINT_EXTENSIONS",
    "STATE_FILE_EXTENSIONS",
    "StepName",
    "Watched",
    "compile_pattern",
    "holds_state",
    "read_step",
]

# Files that are a whole checkpoint by themselves (Lightning's .ckpt, a bare torch.save).
CHECKPOINT_EXTENSIONS = (".ckpt", ".pt", ".pth", ".bin", ".safetensors", ".tar", ".pkl")
# What makes a bare ``epoch_N/`` directory a checkpoint rather than, say, a log folder.
STATE_FILE_EXTENSIONS = (*CHECKPOINT_EXTENSIONS, ".distcp")
INCOMPLETE_SUFFIXES = (".tmp", ".partial", ".incomplete")
INCOMPLETE_PREFIXES = ("tmp-", "tmp_")

_SEP = r"[_=-]?"
_PREFIX = r"^(?:.*[_.-])?"  # a run name before the step: ``run-step1000``
_VERSION = r"(?:-v\d+)?$"  # Lightning's ``-v1`` when a name is taken
# Ordered: the first form that matches names the checkpoint.
FORMS = (
    (
        "epoch_step",
        _PREFIX + "epoch" + _SEP + r"(?P<epoch>\d+)[_.-](?:global_)?step" + _SEP + r"(?P<step>\d+)",
    ),
    ("global_step", _PREFIX + "global" + _SEP + "step" + _SEP + r"(?P<step>\d+)"),
    ("step", _PREFIX + "step" + _SEP + r"(?P<step>\d+)"),
    ("checkpoint", _PREFIX + "(?:checkpoint|ckpt)" + _SEP + r"(?P<step>\d+)"),
    ("iteration", "^iter(?:ation)?" + _SEP + r"(?P<step>\d+)"),
    ("epoch", _PREFIX + "epoch" + _SEP + r"(?P<epoch>\d+)"),
)
_COMPILED = tuple((form, re.compile(regex + _VERSION, re.I)) for form, regex in FORMS)


class StepName(TypedDict):
    step: int | None
    epoch: int | None
    incomplete: bool  # a save that never finished (.tmp suffix, tmp- prefix)
    form: str  # which naming it follows: step | epoch_step | checkpoint | profile | ...


def compile_pattern(pattern: str | None) -> re.Pattern[str] | None:
    """A profile's ``checkpoint_pattern``; ValueError saying why it cannot be used."""
    if not pattern:
        return None
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"checkpoint_pattern {pattern!r}: {exc}") from None
    if not {"step", "epoch"} & set(compiled.groupindex):
        raise ValueError(f"checkpoint_pattern {pattern!r}: needs a group named step or epoch")
    return compiled


NAME_SECONDS = 1.0  # a profile's pattern against one name: a sane one takes microseconds


class Watched:
    """A profile's compiled pattern whose every match is bounded (``_bounded``): the
    first name it overruns on abandons it, and ``abandoned`` says on which name."""

    def __init__(self, pattern: re.Pattern[str], seconds: float = NAME_SECONDS) -> None:
        self.pattern = pattern
        self.budget = Budget(seconds)
        self.abandoned: dict[str, Any] | None = None

    def fullmatch(self, name: str) -> re.Match[str] | None:
        try:
            return self.budget.run(self.pattern.fullmatch, name)
        except Overran:
            if self.abandoned is None:
                self.abandoned = {
                    "pattern": self.pattern.pattern,
                    "name": name,
                    "seconds": self.budget.per_call,
                    "why": (
                        f"matching the profile's checkpoint_pattern against {name!r} ran"
                        f" past {self.budget.per_call:g} s (a pattern whose time grows"
                        " exponentially with the name): the built-in namings were read"
                        " instead"
                    ),
                }
            return None


def _split(name: str, is_dir: bool) -> tuple[str, bool] | None:
    """The name without its incomplete markers and (for a file) its extension, and
    whether it was marked incomplete; None for a file that is no checkpoint format."""
    stem = name
    incomplete = False
    for suffix in INCOMPLETE_SUFFIXES:
        if stem.lower().endswith(suffix):
            stem, incomplete = stem[: -len(suffix)], True
            break
    for prefix in INCOMPLETE_PREFIXES:
        if stem.lower().startswith(prefix):
            stem, incomplete = stem[len(prefix) :], True
            break
    if not is_dir:
        root, ext = os.path.splitext(stem)
        if ext.lower() not in CHECKPOINT_EXTENSIONS:
            return None
        stem = root
    return stem, incomplete


def _int(groups: dict[str, Any], key: str) -> int | None:
    value = groups.get(key)
    return int(value) if value is not None else None


def read_step(
    name: str, is_dir: bool, pattern: re.Pattern[str] | Watched | None = None
) -> StepName | None:
    """The step and epoch ``name`` carries, or None when it names no checkpoint.

    A profile ``pattern`` is matched against the whole name (extension included: the
    profile says exactly what it means). A bare epoch directory's form is ``epoch``:
    only ``holds_state`` can tell it from a folder that merely has that name."""
    if pattern is not None:
        m = pattern.fullmatch(name)
        if m is None:
            return None
        groups = m.groupdict()
        if groups.get("step") is None and groups.get("epoch") is None:
            return None
        lowered = name.lower()
        incomplete = lowered.endswith(INCOMPLETE_SUFFIXES) or lowered.startswith(
            INCOMPLETE_PREFIXES
        )
        return {
            "step": _int(groups, "step"),
            "epoch": _int(groups, "epoch"),
            "incomplete": incomplete,
            "form": "profile",
        }
    split = _split(name, is_dir)
    if split is None:
        return None
    stem, incomplete = split
    for form, regex in _COMPILED:
        m = regex.match(stem)
        if m is not None:
            groups = m.groupdict()
            return {
                "step": _int(groups, "step"),
                "epoch": _int(groups, "epoch"),
                "incomplete": incomplete,
                "form": form,
            }
    return None


def holds_state(path: str, limit: int = 200) -> bool:
    """Whether directory ``path`` holds a checkpoint file (model/optimizer state) at its
    top level: what makes torchtune's ``epoch_0/`` a checkpoint. Never opens a file."""
    try:
        with os.scandir(path) as it:
            for i, entry in enumerate(it):
                if i >= limit:
                    break
                if entry.name.lower().endswith(STATE_FILE_EXTENSIONS):
                    return True
    except OSError:
        return False
    return False
