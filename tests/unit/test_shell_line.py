"""One shell command line read as POSIX sh reads it (playbooks.shell_line): the spans, values and
literalness of a simple command's words, the spans of its redirections, where it ends, the lines
it refuses to edit, and quoting a value back into one word."""

from __future__ import annotations

import shlex

import pytest

from playbooks.shell_line import Command, ShellLineError, Word, command_at, double_quote_body, quote


def lit(start: int, text: str) -> Word:
    """A literal, unquoted word at ``start``."""
    return Word(start=start, end=start + len(text), raw=text, value=text, literal=True)


@pytest.mark.parametrize(
    ("text", "start", "command"),
    [
        (
            "exec python t.py --lr 3e-4",
            0,
            Command(
                words=(
                    lit(0, "exec"),
                    lit(5, "python"),
                    lit(12, "t.py"),
                    lit(17, "--lr"),
                    lit(22, "3e-4"),
                ),
                redirects=(),
                end=26,
            ),
        ),
        (
            'exec "$PY" t.py "$@" >> "$LOG" 2>&1 # run it',
            0,
            Command(
                words=(
                    lit(0, "exec"),
                    Word(5, 10, '"$PY"', "$PY", False),
                    lit(11, "t.py"),
                    Word(16, 20, '"$@"', "$@", False),
                ),
                redirects=((21, 30), (31, 35)),
                end=35,
            ),
        ),
        (
            "exec echo 'a b' c\\ d",
            0,
            Command(
                words=(
                    lit(0, "exec"),
                    lit(5, "echo"),
                    Word(10, 15, "'a b'", "a b", True),
                    Word(16, 20, "c\\ d", "c d", True),
                ),
                redirects=(),
                end=20,
            ),
        ),
        (
            'exec echo "a \\"b\\" \\$c"',
            0,
            Command(
                words=(
                    lit(0, "exec"),
                    lit(5, "echo"),
                    Word(10, 23, '"a \\"b\\" \\$c"', 'a "b" $c', True),
                ),
                redirects=(),
                end=23,
            ),
        ),
        (
            "exec ls data/*.json",
            0,
            Command(
                words=(
                    lit(0, "exec"),
                    lit(5, "ls"),
                    Word(8, 19, "data/*.json", "data/*.json", False),
                ),
                redirects=(),
                end=19,
            ),
        ),
        (
            "exec t --workers $(nproc --all) x",
            0,
            Command(
                words=(
                    lit(0, "exec"),
                    lit(5, "t"),
                    lit(7, "--workers"),
                    Word(17, 31, "$(nproc --all)", "$(nproc --all)", False),
                    lit(32, "x"),
                ),
                redirects=(),
                end=33,
            ),
        ),
        (
            'exec x $(echo ")") y',
            0,
            Command(
                words=(
                    lit(0, "exec"),
                    lit(5, "x"),
                    Word(7, 18, '$(echo ")")', '$(echo ")")', False),
                    lit(19, "y"),
                ),
                redirects=(),
                end=20,
            ),
        ),
        (
            "exec a \\\n  b\nexec c",
            0,
            Command(words=(lit(0, "exec"), lit(5, "a"), lit(11, "b")), redirects=(), end=12),
        ),
        (
            "exec a && b",
            0,
            Command(words=(lit(0, "exec"), lit(5, "a")), redirects=(), end=6),
        ),
        (
            "exec a;b",
            0,
            Command(words=(lit(0, "exec"), lit(5, "a")), redirects=(), end=6),
        ),
        (
            "exec cmd &>out",
            0,
            Command(words=(lit(0, "exec"), lit(5, "cmd")), redirects=((9, 14),), end=14),
        ),
        (
            "exec a 2>/dev/null <in",
            0,
            Command(words=(lit(0, "exec"), lit(5, "a")), redirects=((7, 18), (19, 22)), end=22),
        ),
        (
            "cd /w\nexec x\n",
            6,
            Command(words=(lit(6, "exec"), lit(11, "x")), redirects=(), end=12),
        ),
    ],
    ids=[
        "plain",
        "expansions-redirections-comment",
        "single-quote-and-backslash",
        "escapes-in-double-quotes",
        "glob",
        "command-substitution",
        "quoted-paren-inside-substitution",
        "line-continuation",
        "and-list",
        "semicolon",
        "bash-and-redirect",
        "fd-redirect-and-input",
        "from-an-offset",
    ],
)
def test_a_simple_command_is_read_as_the_shell_reads_it(
    text: str, start: int, command: Command
) -> None:
    """Each word keeps its span and raw text, its value unquoted, and whether that value is exactly
    what the program receives; redirections are spans apart from the words; the command ends
    before a comment, an operator or the newline (a continued line goes on)."""
    assert command_at(text, start) == command


def test_the_spans_are_the_words_as_written() -> None:
    """A word's span cuts its raw text out of the line, so a playbook can replace it in place."""
    text = "exec \"$PY\" 'my dir/t.py' --tag=a\\ b >> log"
    command = command_at(text, 0)
    assert [text[w.start : w.end] for w in command.words] == [w.raw for w in command.words]
    assert [text[a:b] for a, b in command.redirects] == [">> log"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("exec cat <<EOF", r"^the launch line holds a here-document \(<<\)$"),
        ("exec a >\n", "^the launch line ends in a redirection with no target$"),
        ("exec a > > b", "^the launch line has a redirection with no target$"),
        ("exec 'a", "^the launch line has an unterminated ' quote$"),
        ('exec "a', '^the launch line has an unterminated " quote$'),
        ("exec a\\", "^the launch line ends in a lone backslash$"),
        ("exec `a", "^the launch line has an unterminated ` command substitution$"),
        ("exec $(a", r"^the launch line has an unterminated \$\( or \$\{$"),
        ("exec ${a", r"^the launch line has an unterminated \$\( or \$\{$"),
    ],
    ids=[
        "here-document",
        "dangling-redirection",
        "redirection-without-target",
        "open-single-quote",
        "open-double-quote",
        "lone-backslash",
        "open-backtick",
        "open-substitution",
        "open-parameter",
    ],
)
def test_a_line_that_cannot_be_edited_safely_is_refused_with_the_reason(
    text: str, message: str
) -> None:
    """A here-document, a redirection without a target or an unterminated quote or expansion is
    refused, the message saying which."""
    with pytest.raises(ShellLineError, match=message):
        command_at(text, 0)


@pytest.mark.parametrize(
    ("value", "word"),
    [
        ("train.py", "train.py"),
        ("--flag=1,2", "--flag=1,2"),
        ("/p/a-b_c@d%e+f:g", "/p/a-b_c@d%e+f:g"),
        ("", "''"),
        ("a b", "'a b'"),
        ("$HOME", "'$HOME'"),
        ("a*b", "'a*b'"),
        ("it's", "'it'\"'\"'s'"),
    ],
    ids=[
        "name",
        "flag-with-value",
        "safe-punctuation",
        "empty",
        "space",
        "dollar",
        "glob",
        "quote",
    ],
)
def test_a_value_is_quoted_as_one_word_meaning_exactly_it(value: str, word: str) -> None:
    """A value of safe characters stays bare; any other (empty, spaces, $, globs, quotes) is single
    quoted, a quote inside closed and reopened; the shell (and this lexer) reads it back as the
    value, literally."""
    assert quote(value) == word
    assert shlex.split(word) == [value]
    (parsed,) = command_at(word, 0).words
    assert (parsed.value, parsed.literal) == (value, True)


def test_a_value_escaped_for_double_quotes_reads_back_unchanged() -> None:
    """Inside double quotes $, backtick, double quote and backslash are escaped and nothing else,
    so the quoted word reads back as the value, with no expansion."""
    value = 'a"b$c`d\\e f'
    body = double_quote_body(value)
    assert body == 'a\\"b\\$c\\`d\\\\e f'
    (parsed,) = command_at(f'"{body}"', 0).words
    assert (parsed.value, parsed.literal) == (value, True)
