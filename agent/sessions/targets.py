"""Resolve what the user typed (a URI or a profile name, a workspace, an interpreter)
into the target URI and the sweep spec for it, and say which settings apply.

``--target`` is a profile name in doctor.toml, or a URI (``local``, ``local/pct:200``,
``ssh://…``). With a URI and ``--config``, the profile whose ``uri`` is that URI applies
(the default target when several do); none, or several and none the default, is a
one-line ``ConfigError`` — a profile the user named is never silently ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.errors import ConfigError
from tools.profile import DoctorConfig, TargetProfile, default_config_path, load_config
from tools.sweep import SweepSpec
from tools.transport import TargetURI, parse_target


@dataclass(frozen=True)
class Resolved:
    uri: TargetURI
    spec: SweepSpec
    profile: TargetProfile | None = None
    name: str | None = None
    settings: str = ""  # which settings apply, as one sentence for the output


def _looks_like_uri(text: str) -> bool:
    return "://" in text or text == "local" or text.startswith("local/")


def _matching(loaded: DoctorConfig, uri: TargetURI, config: str) -> str:
    """The name of the profile for ``uri`` in ``config``, or a ConfigError saying why
    there is none."""
    matches = sorted(n for n, p in loaded.targets.items() if parse_target(p.uri) == uri)
    if len(matches) == 1:
        return matches[0]
    if loaded.default_target in matches:
        return loaded.default_target
    listed = ", ".join(f"{n} ({p.uri})" for n, p in sorted(loaded.targets.items())) or "none"
    if not matches:
        raise ConfigError(
            f"{config}: no profile has uri {uri} (profiles: {listed}); "
            "name one with --target NAME, or leave out --config"
        )
    raise ConfigError(
        f"{config}: {len(matches)} profiles have uri {uri} ({', '.join(matches)}) and none "
        "is the default_target; name one with --target NAME"
    )


def _with_interpreter(spec: SweepSpec, interpreter: str | None) -> SweepSpec:
    if not interpreter:
        return spec
    return spec.model_copy(
        update={
            "interpreter": interpreter,
            "discover_interpreter": False,
            "interpreter_reason": "given by --interpreter (no discovery)",
        }
    )


def resolve_target(
    target: str | None,
    *,
    workspace: str | None = None,
    interpreter: str | None = None,
    config: str | None = None,
) -> Resolved:
    """``--target`` is a URI or a profile name in doctor.toml; without it, the profile's
    default target, else ``local``. ``--workspace`` means that workspace (the incident's
    layout there, unless the profile says otherwise); ``--interpreter`` turns discovery
    of the trainer's Python off."""
    if target is not None and _looks_like_uri(target):
        uri = parse_target(target)
        if config is None:
            spec = SweepSpec.for_workspace(workspace) if workspace else SweepSpec()
            spec = spec.model_copy(update={"discover_interpreter": True})
            where = f"the workspace {workspace}" if workspace else "no workspace"
            return Resolved(
                uri,
                _with_interpreter(spec, interpreter),
                settings=f"no profile: {uri} with the default settings and {where}",
            )
        loaded = load_config(config)
        name = _matching(loaded, uri, config)
        profile = loaded.targets[name]
        spec = _with_interpreter(profile.sweep_spec(workspace), interpreter)
        return Resolved(
            uri, spec, profile, name, settings=f"profile {name!r} of {config} (its uri is {uri})"
        )
    loaded = load_config(config)
    if target is None and not loaded.targets:
        if config is not None:
            raise ConfigError(f"{config}: the profile names no targets; give --target URI")
        return resolve_target("local", workspace=workspace, interpreter=interpreter)
    profile = loaded.target(target)
    name = target or loaded.default_target or next(iter(loaded.targets))
    spec = _with_interpreter(profile.sweep_spec(workspace), interpreter)
    source = config or str(default_config_path())
    how = "named by --target" if target else "the default target"
    return Resolved(
        parse_target(profile.uri),
        spec,
        profile,
        name,
        settings=f"profile {name!r} of {source} ({how})",
    )
