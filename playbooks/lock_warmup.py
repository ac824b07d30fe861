"""lock-warmup: serialize compilation against compiled calls with a process-wide lock and
warm every (device, shape) before the worker threads start.

Two routes: the trainer's own knob where it declares one (``--compile-lock`` by default:
the lock *and* the serial warm-up), or, for a threaded trainer with none, the start-up
hook in ``startup_hook`` (the lock, without editing the trainer's source; it cannot
warm shapes it does not know). Whether the trainer declares the knob is read from its own
code (``Remote.knob``: the script its launch line runs and the modules that script
imports from its tree), never assumed.
"""

from __future__ import annotations

from playbooks.base import FX_TRACE, FileChange, TrainerSite, launch_change
from playbooks.launch import current, trainer_script, with_flag
from playbooks.remote import Remote
from playbooks.startup_hook import LOCK_ENV, hook_changes


class LockWarmup:
    name = "lock-warmup"
    requires = frozenset({"fx_trace_race"})
    answers = "fx_trace_race"
    signature = FX_TRACE

    def __init__(self, knob: str | None = "--compile-lock") -> None:
        self.knob = knob

    def changes(self, site: TrainerSite, remote: Remote) -> list[FileChange]:
        text, before_sha = current(site, remote)
        script = trainer_script(text, site.launch_file, site.start_dir)
        declared = remote.knob(script, self.knob) if self.knob and script else None
        if self.knob is not None and declared is not None:
            after = with_flag(text, site.launch_file, self.knob)
            why = f"the trainer declares {self.knob} ({declared})"
            return launch_change(site, text, before_sha, after, why)
        if self.knob is None:
            why = "the hook route (no knob asked for)"
        else:
            why = (
                f"the trainer declares no {self.knob} (not in {script or 'its launch line'} "
                "nor in the modules it imports from its tree): the start-up hook wraps "
                "torch.compile with the lock instead"
            )
        return hook_changes(site, remote, text, before_sha, {LOCK_ENV: "1"}, why)
