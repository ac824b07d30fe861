"""Fixtures the end-to-end tests share."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.lib.cli import run_cli


@pytest.fixture(scope="session")
def diagnosed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A state directory holding one finished diagnosis of a small workspace."""
    root = tmp_path_factory.mktemp("diagnosed")
    ws = root / "ws"
    ws.mkdir()
    (ws / "train.jsonl").write_text(
        "".join(f'{{"step": {s}, "loss": 2.0, "tokens_per_sec": 1000.0}}\n' for s in range(50))
    )
    state = root / "state"
    done = run_cli(
        "diagnose", "--target", "local", "--workspace", str(ws), "--non-interactive", "--json",
        state=state,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr.decode()[-2000:]
    (session,) = os.listdir(state / "dflash-doctor" / "sessions")
    return state, session


@pytest.fixture
def saved_session(diagnosed: tuple[Path, str], tmp_path: Path) -> tuple[Path, Path, str]:
    """A copy of the diagnosed state: (state dir, session dir, session id)."""
    state, sid = diagnosed
    copy = tmp_path / "state"
    shutil.copytree(state, copy, symlinks=True)
    return copy, copy / "dflash-doctor" / "sessions" / sid, sid
