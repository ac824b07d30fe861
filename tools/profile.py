"""Target profiles: ``doctor.toml``, read with pydantic-settings.

A profile says how to reach a trainer and where its evidence lies::

    [targets.trainer]
    uri = "ssh://root@gpu-host/pct:200"
    interpreter = "/workspace/.venv/bin/python"
    workspace = "/workspace"

Everything a profile leaves out is found under ``workspace`` on the target
(``tools.probes.layout``: checkpoint directories, train and console logs, scripts,
configs, launch files, prompts, each with the reason it was chosen). Environment
variables override the file
(``DFLASH_DOCTOR_DEFAULT_TARGET``, ``DFLASH_DOCTOR_TARGETS__TRAINER__INTERPRETER``…).

Public API::

    config = load_config(path)              # DoctorConfig; ConfigError when it does not hold
    profile = config.target("trainer")      # TargetProfile (or config.target(None): default)
    spec = profile.sweep_spec()             # tools.sweep.SweepSpec for sweep()
    write_template(path)                    # the commented doctor.toml ``init`` writes
    spec = SweepSpec.for_workspace("/workspace")  # no profile: the layout is found there
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from tools._profile_template import TEMPLATE
from tools.errors import ConfigError, TargetURIError, UsageError
from tools.localfile import read_regular
from tools.parsers.logformats import FORMATS as LOG_FORMATS
from tools.probes._canonical import QUANTITIES
from tools.probes._steps import compile_pattern
from tools.statedir import xdg_home
from tools.sweep import PROBES, SweepSpec
from tools.transport.base import check_timeout
from tools.transport.uri import parse_target

__all__ = [
    "CONFIG_NAME",
    "TEMPLATE",
    "DoctorConfig",
    "ExtraSignature",
    "LogFields",
    "TargetProfile",
    "default_config_path",
    "load_config",
    "write_template",
]

CONFIG_NAME = "doctor.toml"


class LogFields(BaseModel):
    """Where ``train_log.jsonl`` keeps what the doctor reads; unset fields are found
    among common names (``tok/s``, ``tokens_per_sec``, ``ktok_s``, …)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: str | None = Field(
        None, description="the log's format (jsonl, csv, trainer_state, text); unset: sniffed"
    )
    step: str | None = None
    loss: str | None = None
    throughput: str | None = None
    time: str | None = None
    tokens: str | None = Field(
        None, description="a token count (running total or per step) to derive tokens/s from"
    )
    group: list[str] | None = Field(
        None, description="fields that split the log into series, e.g. ['role', 'device']"
    )
    throughput_unit: Literal["tok/s", "ktok/s", "mtok/s"] | None = None

    @field_validator("format")
    @classmethod
    def _known_format(cls, v: str | None) -> str | None:
        if v is not None and v not in LOG_FORMATS:
            raise ValueError(f"unknown log format {v!r}; known: {', '.join(LOG_FORMATS)}")
        return v

    def as_params(self) -> dict[str, str | list[str]]:
        out: dict[str, str | list[str]] = {}
        for key in ("format", "step", "loss", "throughput", "time", "tokens"):
            value = getattr(self, key)
            if value:
                out[key] = value
        if self.group is not None:
            out["group"] = list(self.group)
        return out


class ExtraSignature(BaseModel):
    """An extra error signature for ``train_stdout.log`` (see tools.parsers.stdoutlog)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    pattern: str
    means: str = ""
    needles: list[str] = Field(default_factory=list)


class TargetProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    uri: str = Field(description="how to reach the trainer: local, ssh://user@host[:port]/hop…")
    interpreter: str | None = Field(
        None, description="the trainer's Python; unset, it is found on the target"
    )
    workspace: str | None = None
    checkpoints: str | None = None
    checkpoint_pattern: str | None = Field(
        None, description="regex with named groups step/epoch for checkpoint names"
    )
    train_log: str | None = None
    stdout_log: str | None = None
    scripts: list[str] | None = None
    dataset: list[str] | None = None
    flight_recorder: list[str] | None = Field(
        None, description="torch's Flight Recorder dumps, one per rank (paths or globs)"
    )
    torch_trace: list[str] | None = Field(
        None, description="torch's structured trace (TORCH_TRACE): directories or files"
    )
    inductor_cache: str | None = None
    extra_caches: list[str] | None = Field(
        None, description="other compile-cache directories the trainer is set up to fill"
    )
    triton_cache: str | None = None
    launch: str | None = Field(
        None, description="the trainer's launch file on the target, or its launch command"
    )
    process_match: list[str] | None = None
    py_spy: str | None = Field(
        None, description="py-spy on the target (the live probe's stacks); unset: its PATH"
    )
    log_fields: LogFields = Field(default_factory=LogFields)
    signatures: list[ExtraSignature] = Field(default_factory=list)
    metadata_names: list[str] | None = None
    metadata_keys: dict[str, str] = Field(
        default_factory=dict,
        description="canonical quantity -> the dotted key a checkpoint records it under",
    )
    env_files: list[str] | None = None
    integrity_packages: list[str] = Field(default_factory=lambda: ["torch", "triton"])
    integrity_mode: Literal["py", "all"] = "py"
    torch_import: bool | None = Field(
        None,
        description="true: every sweep imports torch on the target (torch_runtime); "
        "false: never; unset: only when the probe is asked for by name",
    )
    timeouts: dict[str, float] = Field(default_factory=dict)
    parallel: int = Field(4, ge=1, le=32)

    @field_validator("uri")
    @classmethod
    def _uri_parses(cls, v: str) -> str:
        try:
            return str(parse_target(v.strip()))
        except TargetURIError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("metadata_keys")
    @classmethod
    def _known_quantities(cls, v: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(v) - set(QUANTITIES))
        if unknown:
            raise ValueError(
                f"unknown quantity {', '.join(unknown)}; known: {', '.join(QUANTITIES)}"
            )
        return v

    @field_validator("checkpoint_pattern")
    @classmethod
    def _pattern_compiles(cls, v: str | None) -> str | None:
        compile_pattern(v)  # ValueError saying why it cannot be used
        return v

    @field_validator("timeouts")
    @classmethod
    def _known_probes(cls, v: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(v) - set(PROBES))
        if unknown:
            raise ValueError(f"unknown probe(s) {', '.join(unknown)}")
        for probe, t in v.items():
            check_timeout(t, f"timeouts.{probe}")
        return v

    def process_patterns(self) -> list[str]:
        """What identifies the trainer in a process list: the profile's patterns, else
        the script the launch command runs, else ``train``."""
        if self.process_match:
            return list(self.process_match)
        if self.launch:
            try:
                words = shlex.split(self.launch)
            except ValueError:
                words = self.launch.split()
            scripts = [os.path.basename(w) for w in words if w.endswith(".py")]
            if scripts:
                return scripts[:1]
        return ["train"]

    def sweep_spec(self, workspace: str | None = None) -> SweepSpec:
        """The sweep for this target; ``workspace`` (a CLI ``--workspace``) overrides."""
        ws = workspace or self.workspace
        base: dict[str, Any] = {}
        if ws:
            base = SweepSpec.for_workspace(ws).model_dump(exclude_unset=True)
        given: dict[str, Any] = {
            "checkpoints": self.checkpoints,
            "train_log": self.train_log,
            "stdout_log": self.stdout_log,
            "scripts": self.scripts,
            "dataset": self.dataset,
            "flight_recorder": self.flight_recorder,
            "torch_trace": self.torch_trace,
            "inductor_cache": self.inductor_cache,
            "extra_caches": self.extra_caches,
            "checkpoint_pattern": self.checkpoint_pattern,
            "triton_cache": self.triton_cache,
            "metadata_names": self.metadata_names,
            "metadata_keys": self.metadata_keys or None,
            "env_files": self.env_files,
        }
        base.update({k: v for k, v in given.items() if v is not None})
        base.update(
            interpreter=self.interpreter or "python3",
            discover_interpreter=self.interpreter is None,
            interpreter_reason="the profile's interpreter (no discovery)",
            launch=self.launch,
            process_match=tuple(self.process_patterns()),
            py_spy=self.py_spy,
            log_fields=self.log_fields.as_params(),
            throughput_unit=self.log_fields.throughput_unit,
            extra_signatures=tuple(
                {"id": s.id, "pattern": s.pattern, "means": s.means, "needles": s.needles}
                for s in self.signatures
            ),
            integrity_packages=tuple(self.integrity_packages),
            integrity_mode=self.integrity_mode,
            torch_import=self.torch_import,
            timeouts=dict(self.timeouts),
            parallel=self.parallel,
        )
        try:
            return SweepSpec(**base)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, "profile")) from None


class DoctorConfig(BaseSettings):
    """The whole ``doctor.toml``: named targets and which one is the default."""

    model_config = SettingsConfigDict(
        env_prefix="DFLASH_DOCTOR_",
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
    )

    default_target: str | None = None
    targets: dict[str, TargetProfile] = Field(default_factory=dict)

    def target(self, name: str | None = None) -> TargetProfile:
        """The profile called ``name`` (the default target when None)."""
        key = name or self.default_target
        if key is None:
            if len(self.targets) == 1:
                return next(iter(self.targets.values()))
            raise ConfigError(
                "no target named and no default_target set; targets: "
                + (", ".join(sorted(self.targets)) or "none")
            )
        try:
            return self.targets[key]
        except KeyError:
            known = ", ".join(sorted(self.targets)) or "none"
            raise ConfigError(f"no target {key!r} in the profile (targets: {known})") from None


def default_config_path() -> Path:
    """``./doctor.toml`` when there is one, else ``$XDG_CONFIG_HOME/dflash-doctor/``."""
    here = Path.cwd() / CONFIG_NAME
    if here.exists():
        return here
    return xdg_home("XDG_CONFIG_HOME", ".config") / "dflash-doctor" / CONFIG_NAME


def _describe(exc: ValidationError, where: str) -> str:
    lines = [f"{where}: {exc.error_count()} problem(s)"]
    for e in exc.errors()[:10]:
        loc = ".".join(str(x) for x in e["loc"]) or "(top)"
        lines.append(f"  {loc}: {e['msg']}")
    return "\n".join(lines)


# The profile's settings pydantic-settings reads from the environment as JSON.
def _read_as_json(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_read_as_json(arg) for arg in typing.get_args(annotation))
    if origin in (list, dict, tuple):
        return True
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


_TABLE_SETTINGS = tuple(
    "__" + name.upper()
    for name, field in TargetProfile.model_fields.items()
    if _read_as_json(field.annotation)
)


def _nul_in(value: Any, where: str = "") -> str | None:
    """The dotted key of the first string (or key) in a TOML document holding a NUL:
    no path, command line or pattern can carry one (the OS refuses it)."""
    if isinstance(value, str):
        return (where or "(top)") if "\x00" in value else None
    if isinstance(value, dict):
        items: list[tuple[str, Any]] = list(value.items())
    elif isinstance(value, list):
        items = [(f"[{i}]", v) for i, v in enumerate(value)]
    else:
        return None
    for key, item in items:
        here = f"{where}{key}" if key.startswith("[") else f"{where}.{key}".lstrip(".")
        if "\x00" in key:
            return here
        found = _nul_in(item, here)
        if found is not None:
            return found
    return None


def _not_json_variables() -> list[str]:
    """The ``DFLASH_DOCTOR_`` variables pydantic-settings reads as JSON (a table or list
    setting: the value opens with ``{`` or ``[``) that are not JSON, each shown clipped."""
    prefix = str(DoctorConfig.model_config.get("env_prefix") or "")
    out = []
    for name, value in sorted(os.environ.items()):
        if not name.upper().startswith(prefix.upper()):
            continue
        try:
            json.loads(value)
        except ValueError:
            if value.lstrip()[:1] in ("{", "[") or name.upper().endswith(_TABLE_SETTINGS):
                out.append(f"{name}={value[:40]!r}")
    return out


def load_config(path: str | Path | None = None) -> DoctorConfig:
    """Read ``doctor.toml`` (``default_config_path()`` when None) plus the environment.

    A path named explicitly must exist; the default one may be absent (no targets).
    Any problem — unreadable file, bad TOML, a value that does not hold — is a
    ConfigError that names the file and the field."""
    explicit = path is not None
    file = Path(path) if path is not None else default_config_path()
    if not file.exists():
        if explicit:
            raise ConfigError(f"{file}: no such profile file")
        file_source: Path | None = None
    else:
        try:
            # Parse once ourselves: pydantic-settings would raise tomllib's error without
            # the file name, and an unreadable file deserves its own message.
            document = tomllib.loads(read_regular(file, 16 << 20).decode("utf-8"))
        except OSError as exc:
            raise ConfigError(f"{file}: cannot read: {exc.strerror}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{file}: not valid TOML: {exc}") from None
        except RecursionError:
            raise ConfigError(
                f"{file}: arrays or tables nested deeper than the TOML reader follows"
                f" ({sys.getrecursionlimit()} levels)"
            ) from None
        where = _nul_in(document)
        if where is not None:
            raise ConfigError(f"{file}: {where} holds a NUL character (\\u0000)")
        file_source = file

    class _FromFile(DoctorConfig):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
            if file_source is not None:
                sources.append(TomlConfigSettingsSource(settings_cls, toml_file=file_source))
            return tuple(sources)

    try:
        loaded = _FromFile()
    except ValidationError as exc:
        raise ConfigError(_describe(exc, str(file))) from None
    except SettingsError as exc:
        culprits = ", ".join(_not_json_variables()) or "a DFLASH_DOCTOR_ variable"
        raise ConfigError(
            f"environment: {culprits} is not JSON, as a table or list setting must be ({exc})"
        ) from None
    return DoctorConfig.model_construct(**dict(loaded))


def write_template(path: str | Path, *, force: bool = False) -> Path:
    """Write the commented template to ``path``; an existing file is kept unless
    ``force`` (UsageError otherwise, so ``init`` never overwrites a profile)."""
    target = Path(path)
    if target.exists() and not force:
        raise UsageError(f"{target} exists; not overwriting it (use --force)")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(TEMPLATE, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{target}: cannot write the profile: {exc.strerror}") from None
    return target
