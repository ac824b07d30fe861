"""The bundle's output read back: its one JSON document into typed results, each probe's
value checked against the type the probe declares."""

from __future__ import annotations

import functools
import json
from typing import Any

from pydantic import TypeAdapter, ValidationError

from tools.interpreter import shown
from tools.probes import module
from tools.probes._runner import FORMAT, SENTINEL
from tools.sweep.plan import Plan
from tools.sweep.results import ProbeError, ProbeResult, SweepResult
from tools.transport.base import CommandResult, digest


@functools.cache
def _adapter(name: str) -> TypeAdapter[Any]:
    return TypeAdapter(module(name).VALUE)


def _problems(name: str, value: Any) -> str | None:
    try:
        _adapter(name).validate_python(value)
    except ValidationError as exc:
        errors = exc.errors()[:3]
        return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors)
    return None


def _document(stdout: bytes) -> dict[str, Any] | None:
    """The bundle's document: the last stdout line that starts with the sentinel."""
    marker = SENTINEL.encode()
    for line in reversed(stdout.splitlines()):
        if line.startswith(marker):
            try:
                doc = json.loads(line[len(marker) :])
            except ValueError:
                return None
            return doc if isinstance(doc, dict) else None
    return None


def _tail(data: bytes, n: int = 2000) -> str:
    return data[-n:].decode("utf-8", "replace")


def parse_output(result: CommandResult, plan: Plan) -> SweepResult:
    """Turn the bundle's CommandResult into a SweepResult (also used on replays)."""
    common: dict[str, Any] = {
        "target": result.target,
        "argv": shown(result.argv),
        "rc": result.rc,
        "stdin_digest": result.stdin_digest,
        "stdout_digest": digest(result.stdout),
        "stderr_digest": digest(result.stderr),
    }
    doc = _document(result.stdout)
    fatal: str | None = None
    if doc is None:
        if result.rc == 127 and plan.discovery is not None:
            fatal = (
                "no Python found on the target: no trainer process, workspace environment, "
                f"launch file or PATH entry offered one, and {plan.interpreter!r} is not "
                "there (exit 127)"
            )
        elif result.rc == 127:
            fatal = f"interpreter {plan.interpreter!r} not found on the target (exit 127)"
        else:
            why = _tail(result.stderr, 600).strip() or _tail(result.stdout, 600).strip()
            fatal = f"the bundle printed no result (exit {result.rc}): {why or 'no output'}"
    elif doc.get("format") != FORMAT:
        fatal = f"bundle answered in format {doc.get('format')!r}, expected {FORMAT}"
    elif "fatal" in doc:
        fatal = f"the bundle could not start: {doc['fatal']}"
    by_name: dict[str, Any] = {}
    if doc is not None and fatal is None:
        for r in doc.get("results", []):
            if isinstance(r, dict) and "probe" in r:
                by_name[r["probe"]] = r
    results = []
    for planned in plan.probes:
        base = {**common, "probe": planned.name, "params": planned.params}
        if planned.params is None:
            results.append(
                ProbeResult(
                    **{**base, "rc": None},
                    ok=False,
                    error=ProbeError(kind="skipped", message=planned.reason),
                )
            )
            continue
        if fatal is not None:
            results.append(
                ProbeResult(**base, ok=False, error=ProbeError(kind="bundle_failed", message=fatal))
            )
            continue
        results.append(_probe_result(base, planned.name, by_name.get(planned.name)))
    return SweepResult(
        **common,
        duration=result.duration,
        bundle_duration=doc.get("duration") if doc else None,
        python=doc.get("python") if doc else None,
        stderr_tail=_tail(result.stderr),
        results=tuple(results),
    )


def _probe_result(base: dict[str, Any], name: str, raw: Any) -> ProbeResult:
    if not isinstance(raw, dict):
        return ProbeResult(
            **base,
            ok=False,
            error=ProbeError(kind="malformed", message="no result in the bundle's answer"),
        )
    commands = tuple(
        tuple(str(a) for a in c.get("argv", ()))
        for c in raw.get("commands") or ()
        if isinstance(c, dict)
    )
    err = raw.get("error")
    error = None
    if isinstance(err, dict):
        error = ProbeError(
            kind=str(err.get("kind", "error")),
            message=str(err.get("message", "")),
            path=err.get("path"),
        )
    ok = bool(raw.get("ok")) and error is None
    value = raw.get("value")
    if ok:
        problem = _problems(name, value)
        if problem is not None:
            ok = False
            error = ProbeError(kind="malformed", message=f"value not as declared: {problem}")
    return ProbeResult(
        **base,
        ok=ok,
        value=value,
        error=error,
        duration=float(raw.get("duration") or 0.0),
        commands=commands,
    )
