"""Carrying this machine's py-spy to a target that has none, for the live probe's stacks.

py-spy is a dependency of the controller (a static binary wheel from PyPI). Where the
target has none on its PATH or beside its Python, diagnose sends this one over the
transport into a private temporary directory on the target (``mktemp -d``, mode 700,
under its ``TMPDIR``), the live probe runs it from there, and the directory is removed
after; the live fact says it was carried. Only where the target's kernel and machine
(``uname -sm``) are this machine's: a binary for another architecture would not run.
Health checks never carry (their transport runs registered probe bundles only).
"""

from __future__ import annotations

import platform
import re
import shutil
import sys
from pathlib import Path

from tools.transport.base import KeyedStdin, Transport

__all__ = ["CarriedPySpy", "carry_py_spy", "local_py_spy"]

PREFIX = "dflash-doctor-py-spy."
_PUT = (
    'umask 077; d=$(mktemp -d "${TMPDIR:-/tmp}/' + PREFIX + 'XXXXXX") || exit 1; '
    'cat > "$d/py-spy" && chmod 700 "$d/py-spy" && printf "%s\\n" "$d/py-spy"'
)
_OURS = re.compile(r"^/[^\0\n]*/" + re.escape(PREFIX) + r"[A-Za-z0-9]{6}/py-spy$")
# The replay key of the upload: the question is "carry py-spy", whatever its build.
_KEY = "py-spy carried by dflash-doctor"


def local_py_spy() -> Path | None:
    """This machine's py-spy: beside the controller's Python (its virtualenv), else on
    its PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    if beside.is_file():
        return beside
    found = shutil.which("py-spy")
    return Path(found) if found else None


class CarriedPySpy:
    """A py-spy put on the target; ``remove`` takes its directory away."""

    def __init__(self, transport: Transport, path: str) -> None:
        self.transport, self.path = transport, path

    def remove(self) -> str | None:
        """Remove the directory it was put in; why not, where that failed."""
        if not _OURS.match(self.path):
            return f"{self.path} is not a directory this app made: left as it is"
        done = self.transport.run(["rm", "-rf", "--", str(Path(self.path).parent)], timeout=60)
        if done.rc != 0:
            return f"rm of {Path(self.path).parent} exited {done.rc}"
        return None


def carry_py_spy(transport: Transport, binary: Path) -> tuple[CarriedPySpy | None, str]:
    """Put ``binary`` on the target; the carried file, or None and why not."""
    here = f"{platform.system()} {platform.machine()}"
    probe = transport.run(["uname", "-sm"], timeout=30)
    there = probe.stdout.decode("utf-8", "replace").strip()
    if probe.rc != 0 or there != here:
        return None, f"the target is {there or 'unknown'} and this machine's py-spy is for {here}"
    try:
        data = binary.read_bytes()
    except OSError as exc:
        return None, f"{binary}: {exc.strerror}"
    put = transport.run(["sh", "-c", _PUT], stdin=KeyedStdin(data, _KEY), timeout=300)
    path = put.stdout.decode("utf-8", "replace").strip()
    if put.rc != 0 or not _OURS.match(path):
        said = put.stderr.decode("utf-8", "replace").strip()[-200:]
        return None, f"could not put py-spy on the target (rc {put.rc}): {said}"
    return CarriedPySpy(transport, path), f"carried to {path}"
