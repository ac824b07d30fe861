"""The installed ``dflash-doctor`` console script, run as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = str(Path(sys.executable).parent / "dflash-doctor")


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([SCRIPT, *args], capture_output=True, timeout=120, env=env)
