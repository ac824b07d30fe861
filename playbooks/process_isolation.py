"""process-isolation: one process per device, so torch's process-global tracing flags are
no longer shared between the devices' compilations and calls. Only the trainer can do
that, through an option of its own (``--workers processes`` by default): the playbook
applies where the trainer's code declares that option and value (``Remote.knob``), and
is not offered, saying why, where it does not."""

from __future__ import annotations

from playbooks.base import FX_TRACE, FileChange, TrainerSite, launch_change
from playbooks.launch import current, trainer_script, with_flag
from playbooks.remote import Remote
from tools.errors import ApplyError


class ProcessIsolation:
    name = "process-isolation"
    requires = frozenset({"fx_trace_race"})
    answers = "fx_trace_race"
    signature = FX_TRACE

    def __init__(self, flag: str = "--workers", value: str = "processes") -> None:
        self.flag = flag
        self.value = value

    def changes(self, site: TrainerSite, remote: Remote) -> list[FileChange]:
        text, before_sha = current(site, remote)
        script = trainer_script(text, site.launch_file, site.start_dir)
        declared = remote.knob(script, self.flag, self.value) if script else None
        if declared is None:
            raise ApplyError(
                f"the trainer declares no {self.flag} {self.value} option (not in "
                f"{script or 'its launch line'} nor in the modules it imports from its "
                "tree): only the trainer can run one process per device"
            )
        after = with_flag(text, site.launch_file, self.flag, self.value)
        why = f"the trainer declares {self.flag} {self.value} ({declared})"
        return launch_change(site, text, before_sha, after, why)
