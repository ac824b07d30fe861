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

from playbooks.base import FileChange, TrainerSite, unified
from playbooks.launch import with_env
from playbooks.remote import Remote

LIMIT_ENV = "DFLASH_DOCTOR_RECOMPILE_LIMIT"
LOCK_ENV = "DFLASH_DOCTOR_COMPILE_LOCK"

HOOK_SOURCE = r"""
# Written by dflash-doctor (playbooks lock-warmup and recompile-limit, hook route).
# Remove the launch file's PYTHONPATH entry, or unset DFLASH_DOCTOR_COMPILE_LOCK and
# DFLASH_DOCTOR_RECOMPILE_LIMIT, to turn it off.
import os
import sys

if os.environ.get("DFLASH_DOCTOR_RECOMPILE_LIMIT", "").isdigit():
    import torch._dynamo

    _wanted = int(os.environ["DFLASH_DOCTOR_RECOMPILE_LIMIT"])
    _config = torch._dynamo.config
    _name = "recompile_limit" if hasattr(_config, "recompile_limit") else "cache_size_limit"
    _entry = getattr(_config, "_config", {}).get(_name)
    if _entry is not None and hasattr(_entry, "default"):
        _entry.default = _wanted  # what every thread reads where it set nothing
    setattr(_config, _name, _wanted)
    sys.stderr.write(
        "dflash-doctor recompile-limit hook active (%s = %d in every thread)\n"
        % (_name, _wanted)
    )

if os.environ.get("DFLASH_DOCTOR_COMPILE_LOCK") == "1":
    import functools
    import threading

    import torch

    class _Gate:
        def __init__(self):
            self.cond = threading.Condition()
            self.readers = 0
            self.writing = False
            self.waiting = 0

        def shared(self):
            with self.cond:
                self.cond.wait_for(lambda: not self.writing and not self.waiting)
                self.readers += 1

        def release_shared(self):
            with self.cond:
                self.readers -= 1
                self.cond.notify_all()

        def exclusive(self):
            with self.cond:
                self.waiting += 1
                self.cond.wait_for(lambda: not self.writing and not self.readers)
                self.waiting -= 1
                self.writing = True

        def release_exclusive(self):
            with self.cond:
                self.writing = False
                self.cond.notify_all()

    _GATE = _Gate()
    _ORIGINAL = torch.compile

    def _signature(args, kwargs):
        out = []
        for value in list(args) + [kwargs[k] for k in sorted(kwargs)]:
            if isinstance(value, torch.Tensor):
                out.append((tuple(value.shape), str(value.dtype), str(value.device)))
            else:
                out.append(type(value).__name__)
        return tuple(out)

    def _locked(compiled):
        seen = set()

        @functools.wraps(compiled)
        def call(*args, **kwargs):
            key = _signature(args, kwargs)
            if key in seen:
                _GATE.shared()
                try:
                    return compiled(*args, **kwargs)
                finally:
                    _GATE.release_shared()
            _GATE.exclusive()
            try:
                out = compiled(*args, **kwargs)
                seen.add(key)
                return out
            finally:
                _GATE.release_exclusive()

        return call

    def compile(model=None, **kwargs):
        if model is None:
            return lambda m: compile(m, **kwargs)
        compiled = _ORIGINAL(model, **kwargs)
        if isinstance(compiled, torch.nn.Module):
            return compiled
        return _locked(compiled)

    torch.compile = compile
    sys.stderr.write("dflash-doctor compile-lock hook active (torch.compile wrapped)\n")
"""


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
