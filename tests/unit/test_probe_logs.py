"""The trainlog and stdoutlog probes around their parsers: paths that cannot be read."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.lib.probe_workspace import as_nobody, make_workspace, world_readable_dir
from tools.probes import checkpoints, stdoutlog, trainlog
from tools.probes._common import Context, ProbeFailure


@pytest.mark.parametrize("probe", [trainlog, stdoutlog])
def test_missing_log(tmp_path: Path, probe: object) -> None:
    """A log path with no file fails the probe as not_found, not as an empty log."""
    with pytest.raises(ProbeFailure) as err:
        probe.collect({"path": str(tmp_path / "train_log.jsonl")}, Context())  # type: ignore[attr-defined]
    assert err.value.kind == "not_found"


@pytest.mark.parametrize("probe", [trainlog, stdoutlog])
def test_fifo_where_the_log_belongs_does_not_hang(tmp_path: Path, probe: object) -> None:
    """A FIFO would block a reader forever: it is refused before opening."""
    fifo = tmp_path / "log"
    os.mkfifo(fifo)
    with pytest.raises(ProbeFailure) as err:
        probe.collect({"path": str(fifo)}, Context())  # type: ignore[attr-defined]
    assert err.value.kind == "not_a_file"


def test_permission_denied_on_logs_and_checkpoints() -> None:
    """As nobody (a forked child that dropped root): a 0600 log and a 0700 checkpoint
    directory are "permission denied" failures that name the path."""
    d = world_readable_dir()
    try:
        ws = make_workspace(d)
        log = ws / "checkpoints" / "train_log.jsonl"
        log.chmod(0o600)
        (ws / "checkpoints").chmod(0o711)  # enterable, not listable
        step = ws / "checkpoints" / "step_600"
        step.chmod(0o700)

        def attempt() -> list[tuple[str, str | None]]:
            out: list[tuple[str, str | None]] = []
            for probe, params in (
                (trainlog, {"path": str(log)}),
                (checkpoints, {"path": str(ws / "checkpoints")}),
            ):
                try:
                    probe.collect(params, Context())
                    out.append(("ok", None))
                except ProbeFailure as exc:
                    out.append((exc.kind, exc.path))
            return out

        assert as_nobody(attempt) == [
            ("permission_denied", str(log)),
            ("permission_denied", str(ws / "checkpoints")),
        ]
    finally:
        shutil.rmtree(d)


def test_unreadable_step_directory_is_a_fact_not_a_failure() -> None:
    """One unreadable step_N among readable ones: listed with its error."""
    d = world_readable_dir()
    try:
        ws = make_workspace(d)
        (ws / "checkpoints" / "step_600").chmod(0o700)
        out = as_nobody(lambda: checkpoints.collect({"path": str(ws / "checkpoints")}, Context()))
        first = out["steps"][0]
        assert first["error_kind"] == "permission_denied"
        assert out["steps"][1]["files"]
    finally:
        shutil.rmtree(d)
