"""A sweep's typed results: one ``ProbeResult`` per planned probe, in ``PROBES`` order."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, JsonValue


class ProbeError(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str
    message: str
    path: str | None = None

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


class ProbeResult(BaseModel):
    """One probe's outcome on one target: what the ledger turns into a Fact."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    probe: str
    target: str
    argv: tuple[str, ...]  # the command that carried it: the bundle's ``<python> -B -``
    rc: int | None  # the bundle's exit status (None: never sent)
    ok: bool
    value: JsonValue = None
    error: ProbeError | None = None
    duration: float = 0.0
    commands: tuple[tuple[str, ...], ...] = ()  # what the probe ran there (nvidia-smi …)
    params: dict[str, JsonValue] | None = None
    stdin_digest: str = ""
    stdout_digest: str = ""
    stderr_digest: str = ""

    @property
    def error_text(self) -> str | None:
        return None if self.error is None else str(self.error)


class SweepResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str
    argv: tuple[str, ...]
    rc: int | None
    duration: float  # the round trip as the doctor saw it
    bundle_duration: float | None = None  # as the bundle measured itself
    python: dict[str, JsonValue] | None = None  # the target interpreter that ran it
    stdin_digest: str = ""
    stdout_digest: str = ""
    stderr_digest: str = ""
    stderr_tail: str = ""
    results: tuple[ProbeResult, ...]

    def __getitem__(self, name: str) -> ProbeResult:
        for r in self.results:
            if r.probe == name:
                return r
        raise KeyError(name)

    def get(self, name: str) -> ProbeResult | None:
        try:
            return self[name]
        except KeyError:
            return None

    @property
    def names(self) -> list[str]:
        return [r.probe for r in self.results]

    @property
    def ok(self) -> bool:
        return all(
            r.ok or (r.error is not None and r.error.kind == "skipped") for r in self.results
        )

    def failed(self) -> list[ProbeResult]:
        return [r for r in self.results if not r.ok]
