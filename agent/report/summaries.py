"""One-line summaries of probe values for tables. Presentation only: each summary shows
values the fact holds, under the fact's id; it draws no conclusion."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent.model.facts import Fact
from agent.model.shown import shown_value


def _pyenv(v: dict[str, Any]) -> str:
    torch = v.get("torch") or {}
    py = v.get("python") or {}
    git = (torch.get("git_version") or "")[:12]
    return (
        f"python {py.get('version')} · torch {torch.get('version')} ({git}) · "
        f"triton {(v.get('key_packages') or {}).get('triton')}"
    )


def _gpus(v: dict[str, Any]) -> str:
    if not v.get("available"):
        return f"no GPUs visible: {v.get('reason')}"
    names = sorted({g.get("name") for g in v.get("gpus", [])})
    return f"{v.get('count')} × {', '.join(map(str, names))}"


def _caches(v: dict[str, Any]) -> str:
    parts = []
    for c in v.get("caches", []):
        state = f"{c.get('files')} files" if c.get("exists") else "absent"
        parts.append(f"{c.get('cache')} {state} ({c.get('source')})")
    return " · ".join(parts)


def _checkpoints(v: dict[str, Any]) -> str:
    steps = [s.get("name") for s in v.get("steps", [])]
    return f"{len(steps)} checkpoints: {', '.join(steps[-4:]) or 'none'}"


def _number(value: object) -> str:
    """A figure as a claim's sentence shows it (``shown_value``); anything else as it is."""
    return shown_value(value) if isinstance(value, int | float) else str(value)


def _trainlog(v: dict[str, Any]) -> str:
    tp = v.get("throughput") or {}
    steps = v.get("steps") or {}
    schema = v.get("schema") or {}
    read = ""
    if schema:
        # What was inferred, so a wrong guess is visible at a glance (and fixable in
        # the profile's log_fields).
        fields = ", ".join(
            f"{role}={schema.get(role)}"
            for role in ("step", "loss", "throughput")
            if schema.get(role) is not None
        )
        read = f"{schema.get('format')} ({fields or 'no known fields'}), "
    found = v.get("speed")
    speed: dict[str, Any] = found if isinstance(found, dict) else {}
    recent = speed.get("recent") if isinstance(speed.get("recent"), dict) else None
    if recent is not None and not v.get("group_fields"):
        said = (
            f"speed {_number(recent.get('value'))} {speed.get('unit', '')} ({recent.get('how')}), "
        )
    else:
        said = f"recent median {_number(tp.get('recent_median'))} {tp.get('unit', '')}, "
    return (
        f"{read}{v.get('records')} records, steps {steps.get('min')}–{steps.get('max')}, "
        f"{said}malformed {v.get('malformed')}"
    )


def _stdoutlog(v: dict[str, Any]) -> str:
    seen = {k: s.get("count") for k, s in (v.get("signatures") or {}).items() if s.get("count")}
    text = "signatures: " + (", ".join(f"{k}×{n}" for k, n in seen.items()) or "none")
    causes = {k: c.get("count") for k, c in (v.get("exception_causes") or {}).items()}
    if causes:
        text += " · exception lines by cause: " + ", ".join(f"{k}×{n}" for k, n in causes.items())
    return text


def _torch_source(v: dict[str, Any]) -> str:
    binds = (v.get("binds_check_at_wrap") or {}).get("value")
    holds = (v.get("holds_compiling_flag") or {}).get("value")
    return f"binds check at wrap: {binds} · holds compiling flag: {holds}"


def _torch_runtime(v: dict[str, Any]) -> str:
    check = v.get("is_fx_symbolic_tracing") or {}
    config = v.get("dynamo_config") or {}
    return (
        f"is_fx_symbolic_tracing from {check.get('module')} · "
        f"error_on_nested_fx_trace={config.get('error_on_nested_fx_trace')}"
    )


def _integrity(v: dict[str, Any]) -> str:
    parts = []
    for p in v.get("packages", []):
        if not p.get("installed"):
            parts.append(f"{p.get('package')} not installed")
        else:
            parts.append(f"{p.get('package')} {p.get('mismatched_count')} changed files")
    return " · ".join(parts)


def _layout(v: dict[str, Any]) -> str:
    def best(role: str) -> str:
        found = [c for c in v.get(role) or [] if c.get("path")]
        return str(found[0]["path"]) if found else "none"

    counts = ", ".join(
        f"{len([c for c in v.get(r) or [] if c.get('path')])} {r.replace('_', ' ')}"
        for r in ("scripts", "configs", "launch_files", "envs", "unrecognised")
    )
    return (
        f"checkpoints {best('checkpoint_dirs')} · train log {best('train_logs')} · "
        f"console {best('stdout_logs')} · {counts}"
        + (f" · walk truncated at {v.get('entries')} entries" if v.get("truncated") else "")
    )


def _files(v: dict[str, Any]) -> str:
    files = v.get("files", [])
    return f"{len(files)} files" + (
        f", {len(v.get('unmatched', []))} unmatched" if v.get("unmatched") else ""
    )


SUMMARIES: dict[str, Callable[[dict[str, Any]], str]] = {
    "host": lambda v: f"{v.get('hostname')} · up {v.get('uptime_s')}s · {v.get('cpu_count')} cpus",
    "pyenv": _pyenv,
    "interpreter": lambda v: f"{v.get('path')}: {v.get('chosen_because')}",
    "gpus": _gpus,
    "processes": lambda v: f"{len(v.get('processes', []))} matching processes",
    "layout": _layout,
    "caches": _caches,
    "checksums": _files,
    "script_patches": lambda v: f"{v.get('patches')} patches",
    "checkpoints": _checkpoints,
    "trainlog": _trainlog,
    "stdoutlog": _stdoutlog,
    "dataset": _files,
    "torch_source": _torch_source,
    "torch_runtime": _torch_runtime,
    "integrity": _integrity,
}


def fact_summary(fact: Fact) -> str:
    if not fact.ok:
        return f"FAILED: {fact.error}"
    value = fact.value
    summary = SUMMARIES.get(fact.probe)
    if summary is None or not isinstance(value, dict):
        text = repr(value)
        return text if len(text) <= 100 else text[:97] + "..."
    try:
        return summary(value)
    except (AttributeError, TypeError) as exc:  # a value of another shape: show, don't guess
        return f"(value not summarised: {exc})"
