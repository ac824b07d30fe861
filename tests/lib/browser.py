"""A real headless browser (Debian's chromium) opening a report page: its DOM as the
browser parsed it, or a screenshot."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.lib.need import need

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    need(found is not None, "chromium", "install Debian's chromium (make test does so as root)")
    assert found is not None
    return found


def browse(html: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp / 'profile'}", *args, html.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
