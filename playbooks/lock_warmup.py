"""lock-warmup: serialize compilation against compiled calls with a process-wide lock and
warm every (device, shape) before the worker threads start.

Two routes: the trainer's own knob where it has one (the reference trainer's
``--compile-lock``: the lock *and* the serial warm-up), or, for a threaded trainer with
none, the start-up hook in ``compile_lock_hook`` (the lock, without editing the trainer's
source; it cannot warm shapes it does not know).
"""

from __future__ import annotations

from playbooks.base import FX_TRACE, FileChange, TrainerSite, unified
from playbooks.compile_lock_hook import HOOK_SOURCE
from playbooks.launch import with_env, with_flag
from playbooks.remote import Remote


class LockWarmup:
    name = "lock-warmup"
    requires = frozenset({"fx_trace_race"})
    answers = "fx_trace_race"
    signature = FX_TRACE

    def __init__(self, knob: str | None = "--compile-lock") -> None:
        self.knob = knob

    def changes(self, site: TrainerSite, remote: Remote) -> list[FileChange]:
        before_sha = remote.sha256(site.launch_file)
        text = remote.read(site.launch_file).decode()
        if self.knob is not None:
            after = with_flag(text, site.launch_file, self.knob)
            if after == text:
                return []
            return [
                FileChange(
                    path=site.launch_file,
                    before_sha256=before_sha,
                    after=after,
                    diff=unified(site.launch_file, text, after),
                )
            ]
        hook_dir = f"{site.state_dir}/hook"
        hook = f"{hook_dir}/sitecustomize.py"
        after = with_env(
            text, site.launch_file, {"PYTHONPATH": hook_dir, "DFLASH_DOCTOR_COMPILE_LOCK": "1"}
        )
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
                )
            )
        if after != text:
            out.append(
                FileChange(
                    path=site.launch_file,
                    before_sha256=before_sha,
                    after=after,
                    diff=unified(site.launch_file, text, after),
                )
            )
        return out
