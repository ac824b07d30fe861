"""The probes' fact paths (tools.probes.value_paths): each path is walked through the
type its probe declares for its value, key by key, so a field renamed in a probe's
``…Value`` fails here rather than turning a claim unverifiable."""

from __future__ import annotations

import types
import typing
from typing import Any

import pytest

from tools.probes import value_paths as vp
from tools.probes.caches import CachesValue
from tools.probes.checksums import ChecksumsValue
from tools.probes.dataset import DatasetValue
from tools.probes.host import HostValue
from tools.probes.interpreter import InterpreterValue
from tools.probes.layout import LayoutValue
from tools.probes.processes import ProcessesValue
from tools.probes.script_patches import ScriptPatchesValue
from tools.probes.torch_source import TorchSourceValue


def walk(declared: Any, path: tuple[str | int, ...]) -> Any:
    """The declared type at ``path``: a TypedDict's key, a list's item (by index, or by
    an ``@key=value`` pick), a dict's value; ``None`` left out of a union. Raises
    KeyError for a key the type does not declare."""
    for part in path:
        args = [a for a in typing.get_args(declared) if a is not type(None)]
        if isinstance(declared, types.UnionType) or typing.get_origin(declared) is typing.Union:
            (declared,) = args
            args = [a for a in typing.get_args(declared) if a is not type(None)]
        origin = typing.get_origin(declared)
        if origin is list:
            assert isinstance(part, int) or str(part).startswith("@"), (declared, part)
            (declared,) = args
        elif origin is dict:
            declared = args[1]
        else:
            declared = typing.get_type_hints(declared)[str(part)]
    return declared


# (the path, the probe's declared value type, the type the path must end at)
PATHS: list[tuple[tuple[str | int, ...], Any, Any]] = [
    (vp.LAUNCH_FILES, LayoutValue, None),
    (vp.TRAIN_LOGS, LayoutValue, None),
    (vp.STDOUT_LOGS, LayoutValue, None),
    (vp.INTERPRETER_PATH, InterpreterValue, str),
    (vp.PROCESSES, ProcessesValue, None),
    (vp.IN_WORKSPACE, ProcessesValue, None),
    (vp.process(0, "start_time"), ProcessesValue, float | None),
    (vp.HOST_NOW, HostValue, float),
    (vp.CACHES, CachesValue, None),
    (vp.FX_CHECK_PATCHES, ScriptPatchesValue, int),
    (vp.HOLDS_COMPILING_FLAG, TorchSourceValue, bool | None),
    (vp.FILES, ChecksumsValue, None),
    (vp.file("/w/train.py", "md5"), ChecksumsValue, None),
    (vp.FILES, DatasetValue, None),
    (vp.file("/w/p.jsonl", "line_bytes", "max"), DatasetValue, None),
]


@pytest.mark.parametrize(
    ("path", "value_type", "ends_at"), PATHS, ids=[f"{t.__name__}:{p}" for p, t, _ in PATHS]
)
def test_every_path_is_declared_by_its_probe(
    path: tuple[str | int, ...], value_type: Any, ends_at: Any
) -> None:
    """Each path's keys are fields of its probe's declared value, and where the reader
    needs a kind of value (a path, a time, a count), the field is declared as that."""
    found = walk(value_type, path)
    if ends_at is not None:
        assert found == ends_at, (path, found)


def test_a_path_the_probe_does_not_declare_is_caught() -> None:
    """The walk is a real check: a misspelt key, or a key under a list without an index,
    fails."""
    with pytest.raises(KeyError):
        walk(HostValue, ("nwo",))
    with pytest.raises(AssertionError):
        walk(ChecksumsValue, ("files", "md5"))


def test_a_file_and_a_process_are_picked_as_the_facts_hold_them() -> None:
    """A file by its path (whatever its place in the list), a process by its place."""
    assert vp.file("/w/train.py", "md5") == ("files", "@path=/w/train.py", "md5")
    assert vp.process(2, "start_time") == ("processes", 2, "start_time")
