"""``break``: change a workspace the way the incident's environment was changed.

These act on files only (no torch import), after or between runs, so an investigator
finds exactly the kind of evidence the incident left: a wiped compile cache, a training
script whose md5 no longer matches the checkpoints, a truncated checkpoint file.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .config import Workspace

SCRIPT_EDIT = "# edited after the last good checkpoint (dflash_trainer break script)\n"


def wipe_compile_cache(cache: Path) -> str:
    existed = cache.exists()
    shutil.rmtree(cache, ignore_errors=True)
    return f"{'wiped' if existed else 'no cache at'} {cache}"


def change_script(ws: Workspace) -> str:
    if not ws.launcher.exists():
        raise FileNotFoundError(f"{ws.launcher} missing: create it with `init` first")
    with ws.launcher.open("a", encoding="utf-8") as fh:
        fh.write(SCRIPT_EDIT)
    return f"appended a line to {ws.launcher}"


def truncate_checkpoint(ws: Workspace, step: int | None, name: str = "drafter.pt") -> str:
    if step is None:
        found = sorted(
            int(d.name.removeprefix("step_"))
            for d in ws.checkpoints.glob("step_*")
            if d.name.removeprefix("step_").isdigit()
        )
        if not found:
            raise FileNotFoundError(f"no step_N checkpoint under {ws.checkpoints}")
        step = found[-1]
    path = ws.step_dir(step) / name
    size = path.stat().st_size
    with path.open("r+b") as fh:
        fh.truncate(size // 2)
    return f"truncated {path} from {size} to {size // 2} bytes"
