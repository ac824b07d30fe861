"""The checkpoints fact's paths (tools.probes.checkpoint_paths): each resolves in the
probe's real listing of a workspace, and a checkpoint's path names it whatever its place
in the list."""

from __future__ import annotations

import pytest

from agent.model.claims import MISSING, resolve
from agent.model.facts import Fact
from tests.lib.probe_workspace import make_workspace
from tools.probes import checkpoint_paths as ckpt_paths
from tools.probes import checkpoints
from tools.probes._common import Context

CONSTANTS = sorted(
    name for name, value in vars(ckpt_paths).items() if name.isupper() and isinstance(value, tuple)
)


@pytest.fixture(scope="module")
def listing(tmp_path_factory: pytest.TempPathFactory) -> Fact:
    """The probe's listing of the incident workspace: step_600 and step_690, each with
    its metadata (tests/lib/probe_workspace.py)."""
    ws = make_workspace(tmp_path_factory.mktemp("ckpt"))
    value = checkpoints.collect({"path": str(ws / "checkpoints")}, Context())
    return Fact(probe="checkpoints", target="local", value=dict(value))


@pytest.mark.parametrize("name", CONSTANTS)
def test_every_path_resolves_in_a_real_listing(listing: Fact, name: str) -> None:
    """Each constant names a part the probe writes."""
    assert resolve(listing, getattr(ckpt_paths, name)) is not MISSING, name


def test_a_checkpoint_is_found_by_its_name(listing: Fact) -> None:
    """``entry`` picks the checkpoint by name: step_690 is the second in the list and its
    step is 690; ``entry_name`` reads the name back, and is None for any other path."""
    path = ckpt_paths.entry("step_690", "step")
    assert path == ("steps", "@name=step_690", "step")
    assert resolve(listing, path) == 690
    assert ckpt_paths.entry_name(path) == "step_690"
    assert ckpt_paths.entry_name(("steps", 0, "step")) is None
    assert ckpt_paths.entry_name(("recorded", "torch")) is None
    assert ckpt_paths.entry_name(()) is None
