"""The launch file: a shell script whose ``exec`` line starts the trainer. Playbooks edit
that one line (add a flag, set an environment variable) and nothing else in the file.

Where a trainer has no launch file of its own (a launch command in the profile, or only
the running process), ``playbooks.site`` writes one from that command; ``current`` reads
whichever applies."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence

from playbooks.base import TrainerSite
from playbooks.remote import Remote
from playbooks.shell_line import (
    Command,
    ShellLineError,
    Word,
    command_at,
    double_quote_body,
    quote,
)
from tools.errors import ApplyError


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
    where = exec_dir(text, cwd)
    words = exec_words(text, path)
    for index, word in enumerate(words):
        if word.endswith(".py"):
            return word if word.startswith("/") else os.path.join(where, word)
        if word == "-m" and index + 1 < len(words):
            module = os.path.join(where, *words[index + 1].split("."))
            return module + ".py"
    return None


def exec_dir(text: str, cwd: str) -> str:
    """The directory the exec line runs in: the script's last ``cd`` before it (relative
    to the one before), else ``cwd``."""
    where = cwd
    for line in text.splitlines():
        words = line.strip().split(None, 1)
        if len(words) == 2 and words[0] == "cd":
            try:
                target = shlex.split(words[1])[0] if words[1].strip() else ""
            except (ValueError, IndexError):
                continue  # a cd the shell would reject: the trainer never ran from it
            where = target if target.startswith("/") else os.path.join(where, target)
    return where


# Path-like variables a playbook puts an entry in front of: the trainer's own entries, as
# the shell would expand them when the launch file runs, are kept after it.
PATH_LIKE = frozenset({"PYTHONPATH", "PATH", "LD_LIBRARY_PATH", "LD_PRELOAD"})


def _parsed(text: str, path: str) -> Command:
    try:
        return command_at(text, _exec_offset(text, path))
    except ShellLineError as exc:
        raise ApplyError(f"{path}: cannot edit its exec line without changing it: {exc}") from None


def _exec_offset(text: str, path: str) -> int:
    """Where the exec line that starts the trainer begins in ``text``: the one line
    ``exec CMD …``. Two of them (one under ``if [ -n "$ALT" ]``, say) are refused: which
    one runs is the script's own condition, and a fix on the other changes nothing."""
    offset = 0
    found: list[tuple[int, int]] = []  # (line number, offset)
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        stripped = line.lstrip()
        if stripped.startswith("exec ") or stripped.startswith("exec\t"):
            at = offset + len(line) - len(stripped)
            try:
                command = command_at(text, at)
            except ShellLineError:
                command = None
            # ``exec >log 2>&1`` only redirects the script's own output: not the trainer.
            if command is None or len(command.words) > 1:
                found.append((number, at))
        offset += len(line)
    if not found:
        raise ApplyError(
            f"{path}: no 'exec …' line to edit (the launch file must start the trainer with exec)"
        )
    if len(found) > 1:
        lines = ", ".join(str(number) for number, _ in found)
        raise ApplyError(
            f"{path}: {len(found)} exec lines start a command (lines {lines}); which one runs"
            " is up to the script's own conditions, so a fix on one of them may change"
            " nothing: keep one exec line for the trainer"
        )
    return found[0][1]


def exec_words(text: str, path: str) -> list[str]:
    """The exec line's words, ``exec`` included, unquoted as the shell would (an
    expansion is kept as its text: ``"$@"`` is ``$@``); redirections left out."""
    return [w.value for w in _parsed(text, path).words]


def _insert(text: str, at: int, piece: str) -> str:
    return text[:at] + piece + text[at:]


def with_flag(text: str, path: str, flag: str, value: str | None = None) -> str:
    """``text`` whose exec line carries ``flag`` (with ``value``); unchanged if it does.
    Only the flag (and its value) is written: the rest of the line keeps its bytes."""
    words = _parsed(text, path).words
    for index, word in enumerate(words):
        if word.literal and word.value == flag:
            if value is None:
                return text
            following = words[index + 1] if index + 1 < len(words) else None
            if following is None:
                return _insert(text, word.end, " " + quote(value))
            if following.literal and following.value == value:
                return text
            return text[: following.start] + quote(value) + text[following.end :]
        if value is not None and word.literal and word.value.startswith(flag + "="):
            if word.value == f"{flag}={value}":
                return text
            return text[: word.start] + quote(f"{flag}={value}") + text[word.end :]
    piece = " " + quote(flag) + ("" if value is None else " " + quote(value))
    # After the last word, so it reads before any redirection that ends the line.
    return _insert(text, words[-1].end, piece)


def with_env(text: str, path: str, env: dict[str, str]) -> str:
    """``text`` whose exec line runs under ``env`` (``exec env K=V … cmd``). A path-like
    variable (``PATH_LIKE``) gets the value as its first entry, the trainer's own entries
    kept after it: what the line set, else what the environment holds when it runs."""
    for key, value in env.items():
        text = _with_one(text, path, key, value)
    return text


# env's own options that take the next word as their value (GNU: -u NAME, -C DIR; BSD:
# -P PATH); a short cluster ending in one ("-iu NAME") does too.
_ENV_VALUE_OPTIONS = ("--unset", "--chdir")
_ENV_VALUE_LETTERS = "uCP"


def _after_env_options(words: Sequence[Word], path: str) -> tuple[int, int]:
    """Where env's options end on the exec line (an assignment goes after them: one put
    before ``-i`` makes env run ``-i`` as the command) and the index of the word after
    them. ``-S`` splits a string into the command line itself: not edited."""
    at, i = words[1].end, 2
    while i < len(words) and words[i].value.startswith("-"):
        flag = words[i].value
        at, i = words[i].end, i + 1
        if flag == "--":
            break
        if flag.startswith(("--split-string", "-S")) or (
            not flag.startswith("--") and "S" in flag[1:]
        ):
            raise ApplyError(f"{path}: its exec line runs env -S, whose command is one string")
        takes_value = flag in _ENV_VALUE_OPTIONS or (
            not flag.startswith("--") and flag[-1:] in _ENV_VALUE_LETTERS
        )
        if takes_value and i < len(words):
            at, i = words[i].end, i + 1
    return at, i


def _with_one(text: str, path: str, key: str, value: str) -> str:
    words = _parsed(text, path).words
    if len(words) < 2:
        raise ApplyError(f"{path}: its exec line runs no command")
    if words[1].literal and words[1].value == "env":
        at, first = _after_env_options(words, path)
        for word in words[first:]:
            name, sep, current = word.value.partition("=")
            if not sep or word.value.startswith("-") or not name.isidentifier():
                break
            at = word.end
            if name != key:
                continue
            if key in PATH_LIKE:
                if current == value or current.startswith((f"{value}:", f"{value}${{{key}:+:")):
                    return text
                if not word.raw.startswith(f"{key}="):
                    raise ApplyError(f"{path}: cannot extend its quoted {key} assignment")
                # Our entry in front, the assignment's own text (quotes, expansions) after.
                piece = f"{key}={quote(value)}:" + word.raw[len(key) + 1 :]
                return text[: word.start] + piece + text[word.end :]
            if word.literal and current == value:
                return text
            return text[: word.start] + quote(f"{key}={value}") + text[word.end :]
        prefix = " "  # after the assignments already there
    else:
        at, prefix = words[0].end, " env "
    if key in PATH_LIKE:
        # Extends what the environment holds when the line runs; quoted, so an entry
        # with a space is not split.
        assignment = f'"{key}={double_quote_body(value)}${{{key}:+:${key}}}"'
    else:
        assignment = quote(f"{key}={value}")
    return _insert(text, at, prefix + assignment)
