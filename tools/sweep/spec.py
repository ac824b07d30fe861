"""What a sweep looks at on a target: the workspace, the files a profile names, the
limits. Plain data, built from a profile (``TargetProfile.sweep_spec``) or a workspace."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

INCIDENT_METADATA = ("metadata.json", "meta.json", "checkpoint_meta.json", "trainer_state.json")


class SweepSpec(BaseModel):
    """What to look at on one target. Paths are the target's; globs are expanded there."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    interpreter: str = Field("python3", description="the target's Python, e.g. a venv's")
    # Choose the trainer's Python on the target (tools.interpreter); ``interpreter`` is
    # then the fallback. Off: ``interpreter`` is used as given, for ``interpreter_reason``.
    discover_interpreter: bool = False
    interpreter_reason: str = "set in the sweep spec"
    launch: str | None = Field(None, description="the trainer's launch file or command")
    workspace: str | None = None
    checkpoints: str | None = None
    # A regex with named groups ``step``/``epoch`` for checkpoint names the built-in
    # forms (tools.probes._steps) do not know.
    checkpoint_pattern: str | None = None
    train_log: str | None = None
    stdout_log: str | None = None
    scripts: tuple[str, ...] = ()
    dataset: tuple[str, ...] = ()
    # torch's Flight Recorder dumps (paths or globs, one file per rank).
    flight_recorder: tuple[str, ...] = ()
    # torch's structured trace (TORCH_TRACE): directories or files.
    torch_trace: tuple[str, ...] = ()
    inductor_cache: str | None = None
    triton_cache: str | None = None
    extra_caches: tuple[str, ...] = ()
    process_match: tuple[str, ...] = ("train",)
    # py-spy on the target (the live probe's stacks); None: its PATH, or beside its Python.
    py_spy: str | None = None
    # ``py_spy`` is one the doctor carried over the transport (``tools.carry``).
    py_spy_carried: bool = False
    log_fields: dict[str, str | list[str]] = Field(default_factory=dict)
    throughput_unit: Literal["tok/s", "ktok/s", "mtok/s"] | None = None
    metadata_names: tuple[str, ...] = INCIDENT_METADATA
    # Canonical quantity -> the dotted key a trainer's checkpoint records it under
    # ({"torch": "env.pt_ver"}); tried before the built-in names (tools.probes._canonical).
    metadata_keys: dict[str, str] = Field(default_factory=dict)
    # Saved environment files (pip freeze, conda export, collect_env): what was installed
    # when the run worked, read as a baseline where checkpoints record no versions.
    env_files: tuple[str, ...] = ()
    deep_checkpoint_check: bool = False
    integrity_packages: tuple[str, ...] = ("torch", "triton")
    integrity_mode: Literal["py", "all"] = "py"
    extra_signatures: tuple[dict[str, str | list[str]], ...] = ()
    text_field: str | None = None
    # None: torch_runtime (which imports torch on the target) runs only when named.
    torch_import: bool | None = None
    cuda_init: bool = False
    max_scan_bytes: int = Field(512 << 20, gt=0)
    timeouts: dict[str, float] = Field(default_factory=dict)
    parallel: int = Field(4, ge=1, le=32)

    @classmethod
    def for_workspace(cls, workspace: str, **overrides: Any) -> SweepSpec:
        """A sweep of ``workspace`` whose layout is found on the target: the probes that
        read checkpoints, logs, scripts and prompts are given the workspace and look
        (``tools.probes.layout``) in the same round trip. Paths in ``overrides`` (a
        profile's, a CLI's) win; no compile cache is assumed."""
        ws = workspace.rstrip("/") or "/"
        fields: dict[str, Any] = {"workspace": ws}
        fields.update(overrides)
        return cls(**fields)
