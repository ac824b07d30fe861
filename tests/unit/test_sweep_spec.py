"""tools.sweep.spec: what a sweep looks at on one target, as plain frozen data. A spec for a
workspace names only the workspace (its layout is found on the target), with whatever a
profile or the command line sets on top; the limits a sweep runs under are bounded, and a
field the spec does not know is refused."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tools.sweep.spec import SweepSpec


@pytest.mark.parametrize(
    ("given", "workspace"),
    [
        ("/workspace", "/workspace"),
        ("/data/run//", "/data/run"),
        ("/", "/"),
        ("///", "/"),
        ("relative/ws/", "relative/ws"),
    ],
    ids=["plain", "trailing-slashes-dropped", "root-kept", "root-spelt-with-slashes", "relative"],
)
def test_a_workspace_spec_names_the_workspace_without_trailing_slashes(
    given: str, workspace: str
) -> None:
    """Trailing slashes are dropped so one workspace has one spelling; the root stays
    ``/``."""
    assert SweepSpec.for_workspace(given).workspace == workspace


def test_a_workspace_spec_assumes_nothing_else() -> None:
    """Only the workspace is set: no log, checkpoint directory, compile cache or launch
    file is assumed, the defaults hold (``python3`` as given, four probes at a time, the
    incident metadata names, processes matching ``train``)."""
    spec = SweepSpec.for_workspace("/ws")
    assert spec == SweepSpec(workspace="/ws")
    assert (spec.train_log, spec.checkpoints, spec.inductor_cache, spec.launch) == (
        None,
        None,
        None,
        None,
    )
    assert (spec.interpreter, spec.discover_interpreter, spec.parallel) == ("python3", False, 4)
    assert spec.metadata_names == (
        "metadata.json",
        "meta.json",
        "checkpoint_meta.json",
        "trainer_state.json",
    )
    assert spec.process_match == ("train",)


def test_overrides_are_kept_beside_the_workspace() -> None:
    """Paths and limits a profile or the command line gives are kept as given, beside
    the normalised workspace."""
    spec = SweepSpec.for_workspace("/ws/", train_log="/logs/train.log", parallel=2)
    assert (spec.workspace, spec.train_log, spec.parallel) == ("/ws", "/logs/train.log", 2)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"parallel": 0}, "parallel"),
        ({"parallel": 33}, "parallel"),
        ({"max_scan_bytes": 0}, "max_scan_bytes"),
        ({"integrity_mode": "some"}, "integrity_mode"),
        ({"throughput_unit": "tok/min"}, "throughput_unit"),
        ({"train_logs": "/x.log"}, "train_logs"),
    ],
    ids=[
        "no-probe-at-a-time",
        "more-than-32-at-a-time",
        "nothing-to-scan",
        "unknown-integrity-mode",
        "unknown-throughput-unit",
        "unknown-field",
    ],
)
def test_out_of_bounds_or_unknown_fields_are_refused_by_name(
    fields: dict[str, Any], field: str
) -> None:
    """A spec is validated when built: a limit out of its bounds, a value outside its
    choices and a misspelt field are each refused, the error naming the field."""
    with pytest.raises(ValidationError) as caught:
        SweepSpec(**fields)
    assert [e["loc"] for e in caught.value.errors()] == [(field,)]


@pytest.mark.parametrize("parallel", [1, 32], ids=["one", "thirty-two"])
def test_the_parallel_bounds_are_inclusive(parallel: int) -> None:
    """One probe at a time and thirty-two at a time are both allowed."""
    assert SweepSpec(parallel=parallel).parallel == parallel


def test_a_spec_is_frozen() -> None:
    """A spec does not change once built: assigning a field is refused."""
    spec = SweepSpec.for_workspace("/ws")
    with pytest.raises(ValidationError, match="frozen"):
        spec.workspace = "/elsewhere"  # type: ignore[misc]
