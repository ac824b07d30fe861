"""The start-up hook that changes how a PyTorch trainer compiles without editing its
source. It is shipped to the target as ``sitecustomize.py`` in a directory the launch file
puts first on ``PYTHONPATH`` (one file, whichever playbooks use it), and each part acts
only when its environment variable is set on the launch line:

``DFLASH_DOCTOR_RECOMPILE_LIMIT=N`` (playbook recompile-limit) raises dynamo's
per-function recompile limit to ``N`` in every thread. A value set on
``torch._dynamo.config`` holds only in the thread that set it where the build keeps config
overrides per thread (torch 2.13: a ``ContextVar`` per entry,
``torch/utils/_config_module.py``), so the hook raises the entry's *default*, which every
thread reads where it set nothing itself, and sets the value in the main thread too (all
an older build, whose overrides are shared, needs). The name is the build's:
``recompile_limit``, or ``cache_size_limit`` before it.

``DFLASH_DOCTOR_COMPILE_LOCK=1`` (playbook lock-warmup) wraps ``torch.compile`` so that
every compiled *function* takes a process-wide readers/writer lock: a call with an input
signature (shapes, dtypes, devices) that wrapper has not seen — a call that may compile —
holds it alone; any other call shares it. While one thread compiles, no other thread is
inside a compiled call, so no call can observe the FX-tracing flag a compilation sets.
(Compiled ``nn.Module``s are left alone: their state must keep working as a module; a
trainer that compiles modules needs the trainer's own lock.) It cannot warm shapes it
does not know; the trainer's own knob can.
"""

from __future__ import annotations

from pathlib import Path

from playbooks.base import FileChange, TrainerSite, unified
from playbooks.launch import with_env
from playbooks.remote import Remote

LIMIT_ENV = "DFLASH_DOCTOR_RECOMPILE_LIMIT"
LOCK_ENV = "DFLASH_DOCTOR_COMPILE_LOCK"

# The hook as shipped: a real module beside this one, so the linters and mypy read it.
HOOK_SOURCE = Path(__file__).with_name("_sitecustomize.py").read_text(encoding="utf-8")


def hook_changes(
    site: TrainerSite,
    remote: Remote,
    text: str,
    before_sha: str | None,
    env: dict[str, str],
    why: str,
) -> list[FileChange]:
    """The hook file (where it is not this one already) and the launch file's exec line
    with its directory first on ``PYTHONPATH`` and ``env`` set."""
    hook_dir = f"{site.state_dir}/hook"
    hook = f"{hook_dir}/sitecustomize.py"
    after = with_env(text, site.launch_file, {"PYTHONPATH": hook_dir, **env})
    hook_sha = remote.sha256(hook)
    hook_text = remote.read(hook).decode() if hook_sha else ""
    out = []
    if hook_text != HOOK_SOURCE:
        out.append(
            FileChange(
                path=hook,
                before_sha256=hook_sha,
                after=HOOK_SOURCE,
                diff=unified(hook, hook_text, HOOK_SOURCE),
                why="the dflash-doctor start-up hook",
            )
        )
    if after != text:
        out.append(
            FileChange(
                path=site.launch_file,
                before_sha256=before_sha,
                after=after,
                diff=unified(site.launch_file, text, after),
                why=why,
            )
        )
    return out
