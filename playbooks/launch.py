"""The launch file: a shell script whose ``exec`` line starts the trainer. Playbooks edit
that one line (add a flag, set an environment variable) and nothing else in the file."""

from __future__ import annotations

import shlex

from playbooks.remote import ApplyError


def _exec_line(text: str, path: str) -> int:
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.lstrip().startswith("exec "):
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
