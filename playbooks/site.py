"""Where a trainer the doctor has never seen lives, and how it is started: a
``TrainerSite`` from what the profile says or, failing that, from the running trainer.

The launch comes from, in order:

1. the profile's ``launch`` naming a file: a shell script whose ``exec`` line starts the
   trainer (the playbooks edit that line);
2. the profile's ``launch`` as a command line (``cd /ws && python train.py --x``);
3. the running trainer process the processes probe saw: its command line, working
   directory and the environment variables that steer it (``CUDA_VISIBLE_DEVICES``,
   ``TORCHINDUCTOR_*``, ``PYTHONPATH``…, as that probe reads them), and where its
   stdout and stderr go.

For 2 and 3 the doctor writes the launch file itself (``STATE/launch.sh``, only when a fix
is applied: until then it is the text ``TrainerSite.launch_text``), with the command as
one ``exec`` line to edit. Nothing here assumes a layout: the logs are the ones the
sweep was told about (profile or workspace discovery).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from playbooks.base import TrainerSite
from tools.errors import ApplyError
from tools.probes.applies import STATE_DIR

__all__ = ["REDACTED", "running_trainer", "script_from_command", "script_from_process", "site"]

# What the processes probe puts in place of a credential's value (never read back).
REDACTED = "<redacted>"
_HEADER = "#!/bin/sh\n# Written by dflash-doctor from {source}.\nset -e\n"
_SEPARATORS = ("&&", ";")
_REDIRECTS = (">", ">>", "<", ">&", "&>")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _state(workspace: str) -> str:
    return f"{workspace.rstrip('/')}/{STATE_DIR}"


def _is_one_path(launch: str) -> bool:
    try:
        words = shlex.split(launch)
    except ValueError:
        return False
    return len(words) == 1


def script_from_command(command: str, cwd: str, source: str) -> str:
    """A launch script running ``command`` from ``cwd``: what precedes its last ``&&`` or
    ``;`` as lines of their own, redirections on an ``exec`` line of their own, and the
    trainer's command as the one ``exec`` line the playbooks edit."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    tokens = list(lexer)
    segments: list[list[str]] = [[]]
    for token in tokens:
        if token in _SEPARATORS:
            segments.append([])
        else:
            segments[-1].append(token)
    segments = [s for s in segments if s]
    if not segments:
        raise ApplyError(f"the launch command {command!r} runs nothing")
    *before, last = segments
    words: list[str] = []
    redirects: list[str] = []
    index = 0
    while index < len(last):
        token = last[index]
        if token in ("|", "||", "&"):
            raise ApplyError(
                f"the launch command {command!r} pipes or backgrounds the trainer; "
                "give the profile a launch file whose exec line starts it"
            )
        if token in _REDIRECTS and index + 1 < len(last):
            fd = words.pop() if words and words[-1].isdigit() else ""
            redirects.append(f"{fd}{token}{shlex.quote(last[index + 1])}")
            index += 2
            continue
        words.append(token)
        index += 1
    if words and words[0] == "exec":
        words = words[1:]
    if words and _ASSIGNMENT.match(words[0]):
        words = ["env", *words]  # ``exec`` takes a command, not ``VAR=value cmd``
    lines = [f"cd {shlex.quote(cwd)}", *(shlex.join(s) for s in before)]
    if redirects:
        lines.append("exec " + " ".join(redirects))
    lines.append(shlex.join(["exec", *words]))
    return _HEADER.format(source=source) + "\n".join(lines) + "\n"


def script_from_process(
    argv: Sequence[str],
    cwd: str,
    env: Mapping[str, str],
    source: str,
    stdio: Mapping[str, str | None] | None = None,
) -> str:
    """A launch script that starts the trainer again as it runs now."""
    secret = sorted(k for k, v in env.items() if v == REDACTED)
    if secret:
        raise ApplyError(
            f"the running trainer's environment holds {', '.join(secret)}, whose value the "
            "doctor does not read back; give the profile a launch file"
        )
    lines = [f"cd {shlex.quote(cwd)}"]
    out, err = (stdio or {}).get("1"), (stdio or {}).get("2")
    redirects = []
    if out:
        redirects.append(f">>{shlex.quote(out)}")
    if err and err == out:
        redirects.append("2>&1")
    elif err:
        redirects.append(f"2>>{shlex.quote(err)}")
    if redirects:
        lines.append("exec " + " ".join(redirects))
    assignments = [f"{k}={v}" for k, v in sorted(env.items())]
    lines.append(shlex.join(["exec", *(["env", *assignments] if assignments else []), *argv]))
    return _HEADER.format(source=source) + "\n".join(lines) + "\n"


def running_trainer(processes: Any, workspace: str | None) -> dict[str, Any] | None:
    """The trainer among the processes probe's matches: a Python process that runs in
    the workspace (or names it), the parent of the others (a launcher's workers are its
    children); None when none is."""
    found = []
    for proc in (processes or {}).get("processes", []) if isinstance(processes, dict) else []:
        exe = os.path.basename(str(proc.get("exe") or ""))
        if not exe.startswith("python") or not proc.get("cmdline"):
            continue
        cmd = " ".join(proc["cmdline"])
        cwd = str(proc.get("cwd") or "")
        ws = (workspace or "").rstrip("/")
        if ws and not (f"{cwd}/".startswith(f"{ws}/") or ws in cmd):
            continue
        found.append(proc)
    pids = {p.get("pid") for p in found}
    roots = [p for p in found if p.get("ppid") not in pids]
    return min(roots, key=lambda p: int(p.get("pid") or 0)) if roots else None


def site(
    *,
    workspace: str,
    train_log: str | None,
    stdout_log: str | None,
    interpreter: str = "python3",
    launch: str | None = None,
    process: Mapping[str, Any] | None = None,
    python: str | None = None,
    stdio: Mapping[str, str | None] | None = None,
    pid_file: str | None = None,
    launch_source: str | None = None,
    log_fields: Mapping[str, Any] | None = None,
    throughput_unit: str | None = None,
    extra_signatures: Sequence[Mapping[str, Any]] = (),
) -> TrainerSite:
    """The trainer's site. ``process`` is the running trainer (``running_trainer``),
    ``python`` the interpreter found for it (replaces a bare ``python`` argv[0], which
    the doctor's restart would look up on another PATH), ``stdio`` where its stdout and
    stderr go (``Remote.stdio``), ``pid_file`` the trainer's own pid file if it keeps
    one, ``launch_source`` where a launch file came from (default: the profile)."""
    ws = workspace.rstrip("/")
    if not train_log or not stdout_log:
        missing = " and ".join(
            n for n, v in (("train log", train_log), ("stdout log", stdout_log)) if not v
        )
        raise ApplyError(
            f"no {missing} known for the trainer (profile: train_log / stdout_log): a fix "
            "could not be verified"
        )
    common: dict[str, Any] = {
        "workspace": ws,
        # Without one of its own: the doctor's record of the trainer it started.
        "pid_file": pid_file or f"{_state(ws)}/started.pid",
        "train_log": train_log,
        "stdout_log": stdout_log,
        "interpreter": interpreter,
        "log_fields": dict(log_fields or {}),
        "throughput_unit": throughput_unit,
        "extra_signatures": tuple(dict(row) for row in extra_signatures),
    }
    own = f"{_state(ws)}/launch.sh"
    if launch and _is_one_path(launch):
        path = shlex.split(launch)[0]
        path = path if path.startswith("/") else f"{ws}/{path}"
        source = launch_source or f"the profile's launch file {path}"
        return TrainerSite(**common, launch_file=path, launch_source=source)
    if launch:
        source = "the profile's launch command"
        text = script_from_command(launch, ws, source)
        return TrainerSite(**common, launch_file=own, launch_source=source, launch_text=text)
    if process is not None and process.get("cmdline") and process.get("cwd"):
        pid = int(process["pid"])
        argv = [str(a) for a in process["cmdline"]]
        if python and "/" not in argv[0]:
            argv[0] = python
        env = {str(k): str(v) for k, v in (process.get("env") or {}).items()}
        kept = ", ".join(sorted(env)) or "none of those it reads"
        source = (
            f"the running trainer (process {pid}): its command line, working directory "
            f"{process['cwd']} and environment ({kept})"
        )
        text = script_from_process(argv, str(process["cwd"]), env, source, stdio)
        return TrainerSite(
            **common,
            launch_file=own,
            launch_source=source,
            launch_text=text,
            cwd=str(process["cwd"]),
            trainer_pid=pid,
        )
    raise ApplyError(
        "no launch known for the trainer: the profile names no launch file or command, "
        "and no running trainer process was seen in the workspace"
    )
