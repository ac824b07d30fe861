"""The launch file: a shell script whose ``exec`` line starts the trainer. Playbooks edit
that one line (add a flag, set an environment variable) and nothing else in the file.

Where a trainer has no launch file of its own (a launch command in the profile, or only
the running process), ``playbooks.site`` writes one from that command; ``current`` reads
whichever applies."""

from __future__ import annotations

import os
import re
import shlex

from playbooks.base import TrainerSite
from playbooks.remote import ApplyError, Remote


def current(site: TrainerSite, remote: Remote) -> tuple[str, str | None]:
    """The launch script as it is now, and its sha256 (None: the doctor's own launch
    file, not written yet: the script is the one it would write)."""
    sha = remote.sha256(site.launch_file)
    if sha is None and site.launch_text is not None:
        return site.launch_text, None
    return remote.read(site.launch_file).decode(), sha


def trainer_script(text: str, path: str, cwd: str) -> str | None:
    """The Python file the exec line runs (``python X.py``, ``python -m pkg.mod``),
    absolute; relative names are taken from the script's last ``cd`` before it, else
    ``cwd``. None when the exec line runs no Python file it names."""
    where = cwd
    for line in text.splitlines():
        words = line.strip().split(None, 1)
        if len(words) == 2 and words[0] == "cd":
            target = shlex.split(words[1])[0] if words[1].strip() else ""
            where = target if target.startswith("/") else os.path.join(where, target)
    words = exec_words(text, path)
    for index, word in enumerate(words):
        if word.endswith(".py"):
            return word if word.startswith("/") else os.path.join(where, word)
        if word == "-m" and index + 1 < len(words):
            module = os.path.join(where, *words[index + 1].split("."))
            return module + ".py"
    return None


_REDIRECTION = re.compile(r"\d*(>>?|<|>&)")


def _exec_line(text: str, path: str) -> int:
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if not line.lstrip().startswith("exec "):
            continue
        # ``exec >log 2>&1`` only redirects the script's own output: not the trainer.
        if all(_REDIRECTION.match(w) for w in line.split()[1:]):
            continue
        return index
    raise ApplyError(
        f"{path}: no 'exec …' line to edit (the launch file must start the trainer with exec)"
    )


def exec_words(text: str, path: str) -> list[str]:
    """The exec line's words, ``exec`` included (as the shell would split them)."""
    return shlex.split(text.splitlines()[_exec_line(text, path)])


def with_flag(text: str, path: str, flag: str, value: str | None = None) -> str:
    """``text`` whose exec line carries ``flag`` (with ``value``); unchanged if it does."""
    lines = text.splitlines(keepends=True)
    index = _exec_line(text, path)
    ending = "\n" if lines[index].endswith("\n") else ""
    words = shlex.split(lines[index])
    if flag in words:
        at = words.index(flag)
        if value is None or (at + 1 < len(words) and words[at + 1] == value):
            return text
        words[at + 1] = value
    else:
        words += [flag] if value is None else [flag, value]
    lines[index] = shlex.join(words) + ending
    return "".join(lines)


def with_env(text: str, path: str, env: dict[str, str]) -> str:
    """``text`` whose exec line runs under ``env`` (``exec env K=V … cmd``)."""
    lines = text.splitlines(keepends=True)
    index = _exec_line(text, path)
    ending = "\n" if lines[index].endswith("\n") else ""
    words = shlex.split(lines[index])[1:]  # drop "exec"
    current: dict[str, str] = {}
    if words and words[0] == "env":
        words = words[1:]
        while words and "=" in words[0] and not words[0].startswith("-"):
            key, _, val = words.pop(0).partition("=")
            current[key] = val
    merged = {**current, **env}
    if merged == current:
        return text
    assignments = [f"{k}={v}" for k, v in merged.items()]
    lines[index] = shlex.join(["exec", "env", *assignments, *words]) + ending
    return "".join(lines)
