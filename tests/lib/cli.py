"""The installed ``dflash-doctor`` console script, run as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPT = str(Path(sys.executable).parent / "dflash-doctor")


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([SCRIPT, *args], capture_output=True, timeout=120, env=env)


def run_cli(
    *args: str | bytes, state: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The console script with its own state directory, no colour and ``env`` added,
    240 s at most."""
    full = {**os.environ, "XDG_STATE_HOME": str(state), "NO_COLOR": "1", **(env or {})}
    return subprocess.run([SCRIPT, *args], capture_output=True, timeout=240, env=full)


def facts_of(run: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    """``facts --json``'s facts by probe, once the run is known to have ended cleanly."""
    assert b"Traceback" not in run.stderr, run.stderr.decode(errors="replace")[-3000:]
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-3000:]
    document: dict[str, Any] = json.loads(run.stdout)
    return {f["probe"]: f for f in document["facts"]}


def gather(ws: Path | bytes, state: Path) -> dict[str, Any]:
    """Every fact of a local sweep of the workspace ``ws``, by probe."""
    where = ws if isinstance(ws, bytes) else str(ws)
    return facts_of(
        run_cli("facts", "--target", "local", "--workspace", where, "--json", state=state)
    )


def one_line_refusal(args: list[str], state: Path, env: dict[str, str] | None = None) -> str:
    """The run's stderr, once it is known to be one ``error:`` line and exit 2."""
    run = run_cli(*args, state=state, env=env)
    err = run.stderr.decode()
    assert run.returncode == 2, (run.returncode, err[-2000:])
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("dflash-doctor: error: "), err
    return lines[0]
