"""One shell command line, read as the shell reads it, so that a playbook can add to it
without changing what was there.

``shlex.split`` and ``shlex.join`` lose the line's shell meaning: ``"$@"`` becomes a
literal ``$@``, ``>> log 2>&1`` becomes two arguments, ``$(nproc)`` and globs are quoted,
a trailing comment becomes arguments. So the playbooks never re-quote a launch line: they
find the *spans* of its words here and insert or replace text at those spans, leaving every
other byte as it was.

The lexer knows POSIX ``sh`` quoting (single, double, backslash, line continuations),
expansions (``$name``, ``${…}``, ``$(…)``, ``$((…))``, backticks), redirections
(``[n]>``, ``>>``, ``<``, ``>&``, ``<&``, ``>|``, ``<>``, bash's ``&>``), comments and the
operators that end a simple command (``;``, ``&``, ``|``, ``&&``, ``||``, a newline). What
it cannot edit safely (a here-document, an unterminated quote) is refused with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools.errors import DoctorError


class ShellLineError(DoctorError):
    """A launch line the playbooks cannot edit without changing its meaning."""


_OPERATORS = ("&&", "||", ";;", ";", "&", "|", "(", ")")
_REDIRECTS = (">>", ">&", ">|", "<>", "<&", "<<", "&>", ">", "<")
_GLOB = frozenset("*?[")


@dataclass(frozen=True)
class Word:
    """A word of the command: where it is in the text (``start``..``end``), its text
    there, and its value with the quotes removed. ``literal``: the value is exactly what
    the program receives (no expansion, no glob), so it can be compared with a flag."""

    start: int
    end: int
    raw: str
    value: str
    literal: bool


@dataclass(frozen=True)
class Command:
    """A simple command: its words (redirections left out), the spans of its
    redirections, and where it ends (before a comment, an operator or the newline)."""

    words: tuple[Word, ...]
    redirects: tuple[tuple[int, int], ...]
    end: int


def command_at(text: str, start: int) -> Command:
    """The simple command that begins at offset ``start`` of ``text``."""
    words: list[Word] = []
    redirects: list[tuple[int, int]] = []
    i = start
    last_end = start
    pending: int | None = None  # where a redirection operator waiting for its target began
    n = len(text)
    while i < n:
        c = text[i]
        if c in " \t":
            i += 1
            continue
        if text.startswith("\\\n", i):
            i += 2
            continue
        if c == "\n" or (c == "#" and pending is None):
            break  # the newline, or a comment: the rest of the line is not the command's
        redirect = _redirect_at(text, i)
        if redirect is not None:
            if pending is not None:
                raise ShellLineError("the launch line has a redirection with no target")
            if text.startswith("<<", i + redirect[1]):
                raise ShellLineError("the launch line holds a here-document (<<)")
            pending = i
            i += redirect[0]
            continue
        if any(text.startswith(o, i) for o in _OPERATORS):
            break
        word_end, value, literal = _word(text, i)
        if pending is not None:
            redirects.append((pending, word_end))
            pending = None
        else:
            words.append(
                Word(start=i, end=word_end, raw=text[i:word_end], value=value, literal=literal)
            )
        i = word_end
        last_end = i
    if pending is not None:
        raise ShellLineError("the launch line ends in a redirection with no target")
    return Command(words=tuple(words), redirects=tuple(redirects), end=last_end)


def _redirect_at(text: str, i: int) -> tuple[int, int] | None:
    """(length of the operator with its fd digits, offset of the operator) at ``i``."""
    j = i
    while j < len(text) and text[j].isdigit():
        j += 1
    op = next((o for o in _REDIRECTS if text.startswith(o, j)), None)
    if op is None:
        return None
    return j - i + len(op), j - i


_WORD_ENDS = frozenset(" \t\n;&|()<>")


def _word(text: str, i: int) -> tuple[int, str, bool]:
    """The word starting at ``i``: (its end, its value unquoted, whether it is literal)."""
    out: list[str] = []
    literal = True
    n = len(text)
    while i < n:
        c = text[i]
        if c in _WORD_ENDS:
            break
        if c == "\\":
            if i + 1 >= n:
                raise ShellLineError("the launch line ends in a lone backslash")
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        if c == "'":
            close = text.find("'", i + 1)
            if close < 0:
                raise ShellLineError("the launch line has an unterminated ' quote")
            out.append(text[i + 1 : close])
            i = close + 1
            continue
        if c == '"':
            i, value, plain = _double_quoted(text, i + 1)
            out.append(value)
            literal = literal and plain
            continue
        if c in "$`":
            end = _expansion_end(text, i)
            out.append(text[i:end])
            literal = False
            i = end
            continue
        if c in _GLOB:
            literal = False
        out.append(c)
        i += 1
    return i, "".join(out), literal


def _double_quoted(text: str, i: int) -> tuple[int, str, bool]:
    out: list[str] = []
    plain = True
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return i + 1, "".join(out), plain
        if c == "\\" and i + 1 < n and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        if c == "$" or c == "`":
            end = _expansion_end(text, i)
            out.append(text[i:end])
            plain = False
            i = end
            continue
        out.append(c)
        i += 1
    raise ShellLineError('the launch line has an unterminated " quote')


def _expansion_end(text: str, i: int) -> int:
    """The end of the expansion starting at ``i`` (``$…`` or a backtick)."""
    n = len(text)
    if text[i] == "`":
        j = i + 1
        while j < n and text[j] != "`":
            j += 2 if text[j] == "\\" else 1
        if j >= n:
            raise ShellLineError("the launch line has an unterminated ` command substitution")
        return j + 1
    if i + 1 < n and text[i + 1] in "({":
        return _balanced(text, i + 1)
    j = i + 1
    if j < n and (text[j].isalnum() or text[j] == "_"):
        while j < n and (text[j].isalnum() or text[j] == "_"):
            j += 1
        return j
    if j < n and text[j] in "@*#?$!-0123456789":
        return j + 1
    return j  # a lone "$": literal to the shell, kept as text


def _balanced(text: str, i: int) -> int:
    """The end of the bracketed group opening at ``i`` (``(`` or ``{``), quotes inside
    respected."""
    pairs = {"(": ")", "{": "}"}
    stack = [pairs[text[i]]]
    j = i + 1
    n = len(text)
    while j < n and stack:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "'":
            close = text.find("'", j + 1)
            if close < 0:
                break
            j = close + 1
            continue
        if c == '"':
            j, _, _ = _double_quoted(text, j + 1)
            continue
        if c in pairs:
            stack.append(pairs[c])
        elif c == stack[-1]:
            stack.pop()
        j += 1
    if stack:
        raise ShellLineError("the launch line has an unterminated $( or ${")
    return j


def quote(value: str) -> str:
    """``value`` as one shell word meaning exactly it (bare when that is safe)."""
    if value and all(c.isalnum() or c in "@%+=:,./-_" for c in value):
        return value
    return "'" + value.replace("'", "'\"'\"'") + "'"


def double_quote_body(value: str) -> str:
    """``value`` escaped for use inside double quotes."""
    return "".join("\\" + c if c in '$`"\\' else c for c in value)
