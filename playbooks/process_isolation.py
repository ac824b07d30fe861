"""process-isolation: one process per device, so torch's process-global tracing flags are
no longer shared between the devices' compilations and calls. The launch file declares how
(the reference trainer: ``--workers processes``)."""

from __future__ import annotations

from playbooks.base import FX_TRACE, FileChange, TrainerSite, unified
from playbooks.launch import with_flag
from playbooks.remote import Remote


class ProcessIsolation:
    name = "process-isolation"
    requires = frozenset({"fx_trace_race"})
    answers = "fx_trace_race"
    signature = FX_TRACE

    def __init__(self, flag: str = "--workers", value: str = "processes") -> None:
        self.flag = flag
        self.value = value

    def changes(self, site: TrainerSite, remote: Remote) -> list[FileChange]:
        before_sha = remote.sha256(site.launch_file)
        text = remote.read(site.launch_file).decode()
        after = with_flag(text, site.launch_file, self.flag, self.value)
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
