"""Resolve what the user typed (a URI or a profile name, a workspace, an interpreter)
into the target URI and the sweep spec for it."""

from __future__ import annotations

from dataclasses import dataclass

from tools.bundle import SweepSpec
from tools.profile import TargetProfile, load_config
from tools.transport import TargetURI, parse_target


@dataclass(frozen=True)
class Resolved:
    uri: TargetURI
    spec: SweepSpec
    profile: TargetProfile | None = None
    name: str | None = None


def _looks_like_uri(text: str) -> bool:
    return "://" in text or text == "local" or text.startswith("local/")


def resolve_target(
    target: str | None,
    *,
    workspace: str | None = None,
    interpreter: str | None = None,
    config: str | None = None,
) -> Resolved:
    """``--target`` is a URI or a profile name in doctor.toml; without it, the profile's
    default target, else ``local``. ``--workspace`` means the incident's layout there."""
    if target is not None and _looks_like_uri(target):
        uri = parse_target(target)
        spec = SweepSpec.for_workspace(workspace) if workspace else SweepSpec()
        if interpreter:
            spec = spec.model_copy(update={"interpreter": interpreter})
        return Resolved(uri, spec)
    loaded = load_config(config)
    if target is None and not loaded.targets:
        return resolve_target("local", workspace=workspace, interpreter=interpreter)
    profile = loaded.target(target)
    spec = profile.sweep_spec(workspace)
    if interpreter:
        spec = spec.model_copy(update={"interpreter": interpreter})
    return Resolved(parse_target(profile.uri), spec, profile, target or loaded.default_target)
