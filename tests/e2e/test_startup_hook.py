"""The start-up hook's recompile limit, on the installed torch: a script that raises the
limit to 64 in its main thread and compiles in a worker thread on twelve lengths hits
torch's default of 8 there (this build keeps config overrides per thread); with the hook
on PYTHONPATH and DFLASH_DOCTOR_RECOMPILE_LIMIT=24, the worker reads 24, compiles every
length and torch says nothing. The hook's other part (the compile lock) stays off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from playbooks.startup_hook import HOOK_SOURCE, LIMIT_ENV

SCRIPT = textwrap.dedent(
    """\
    import json, threading
    import torch, torch._dynamo

    torch._dynamo.config.recompile_limit = 64  # the main thread only, in this build
    f = torch.compile(lambda x: x.sin().sum(), backend="eager", dynamic=False)
    seen = {}

    def work():
        seen["worker"] = torch._dynamo.config.recompile_limit
        for n in range(4, 16):
            f(torch.randn(n))

    t = threading.Thread(target=work)
    t.start()
    t.join()
    seen["main"] = torch._dynamo.config.recompile_limit
    print(json.dumps(seen))
    """
)


def run(tmp_path: Path, hooked: bool) -> tuple[dict[str, int], str]:
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(HOOK_SOURCE)
    (tmp_path / "train.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFLASH_DOCTOR_")}
    if hooked:
        env.update(PYTHONPATH=str(hook), **{LIMIT_ENV: "24"})
    done = subprocess.run(
        [sys.executable, "train.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.mark.parametrize("hooked", [False, True], ids=["as-written", "with-the-hook"])
def test_the_limit_reaches_the_worker_thread_only_with_the_hook(
    tmp_path: Path, hooked: bool
) -> None:
    """Without the hook the worker thread compiles under torch's default limit of 8 and hits
    it; with the hook the raised limit reaches the worker and nothing is hit."""
    seen, stderr = run(tmp_path, hooked)
    if not hooked:
        assert seen == {"worker": 8, "main": 64}, seen
        assert "torch._dynamo hit config.recompile_limit (8)" in stderr, stderr[-2000:]
        return
    assert seen == {"worker": 24, "main": 64}, seen
    assert "dflash-doctor recompile-limit hook active (recompile_limit = 24" in stderr
    assert "hit config." not in stderr, stderr[-2000:]
    assert "compile-lock hook active" not in stderr
