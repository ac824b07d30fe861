"""Real virtualenvs for the interpreter-discovery and playbook tests."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path


def make_venv(where: Path, *, torch: bool) -> Path:
    """A real virtualenv; with ``torch``, this test run's site-packages (torch included)
    are visible in it through a .pth file, as a venv that installed torch would see it."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    if torch:
        purelib = sysconfig.get_paths()["purelib"]
        site = next(where.glob("lib/python3*/site-packages"))
        (site / "test_torch_visible.pth").write_text(purelib + "\n")
    return where / "bin" / "python"
