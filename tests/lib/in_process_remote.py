"""A transport that runs the fix operations program (``playbooks/_remote_ops.py``) in
this process, on a workspace under the test's ``tmp_path``: the unit tests of the
playbooks see the program's real answers without starting an interpreter per operation."""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import playbooks._remote_ops as ops
from playbooks.base import TrainerSite
from playbooks.remote import Remote
from tools.transport.base import CommandResult


@dataclass
class InProcess:
    """Carries the operations program's argv to its ``main`` in this process."""

    name: str = "here"

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
    ) -> CommandResult:
        ops.op.clear()
        out = io.StringIO()
        saved = sys.argv
        sys.argv = ["-c", argv[-1]]
        try:
            with contextlib.redirect_stdout(out):
                ops.main()
        finally:
            sys.argv = saved
            ops.op.clear()  # the program's global: no operation outlives its run
        return CommandResult(tuple(argv), 0, out.getvalue().encode(), b"", 0.0, self.name)

    def close(self) -> None:
        pass


def trainer_site(ws: Path, launch: str, trainer: str | None) -> tuple[TrainerSite, Remote]:
    """A trainer's site in ``ws``: its ``launch.sh`` holding ``launch`` and (where given)
    its ``train.py`` holding ``trainer``, with a remote that runs the operations here."""
    (ws / "launch.sh").write_text(launch)
    if trainer is not None:
        (ws / "train.py").write_text(trainer)
    site = TrainerSite(str(ws), f"{ws}/launch.sh", f"{ws}/p", f"{ws}/t.log", f"{ws}/o.log")
    return site, Remote(InProcess())
