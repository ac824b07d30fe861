"""Where a detect-secrets plugin's match puts the secret (tools._secret_spans): the value
group of an assignment or a URL, else the whole token (its delimiters and a key taken with
it left out, its own characters after the match taken in), only when the plugin confirmed
it; the lines a pattern's matches stand on; and spans merged where they touch."""

from __future__ import annotations

import re

import pytest

from tools._secret_spans import MIN_LENGTH, lines_of, merged, secret_in


def _match(pattern: str, line: str) -> re.Match[str]:
    """The first match of ``pattern`` in ``line`` (there must be one)."""
    found = re.search(pattern, line)
    assert found is not None
    return found


def _span_of(line: str, part: str) -> tuple[int, int]:
    """Where ``part`` stands in ``line`` (once)."""
    assert line.count(part) == 1
    return line.index(part), line.index(part) + len(part)


# -- secret_in ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "line", "confirmed", "secret"),
    [
        (r"key=(\w+)", "key=abc123 x", {"abc123"}, "abc123"),
        (r"://[^:\s]+:([^@\s]+)@", "https://alice:pa55word@host/x", {"pa55word"}, "pa55word"),
        (r"pwd[:=](\s*)(\w+)", "pwd=abc12345;", {"abc12345"}, "abc12345"),
        (r"(ghp|gho)_[A-Za-z0-9]{6}", "tok ghp_abcdef rest", {"ghp"}, "ghp_abcdef"),
        (r"tok_[a-z]{3}", "x tok_abc y", {"tok_abc"}, "tok_abc"),
        (r"['\"]tok_\w+['\"]", 'x "tok_abc" y', {'"tok_abc"'}, "tok_abc"),
        (r"sk_live_[0-9a-zA-Z]{4}", "sk_live_abcdefgh end", {"sk_live_abcd"}, "sk_live_abcdefgh"),
        (
            r"AccountKey=[a-zA-Z0-9+/=]{8,}",
            "x;AccountKey=abcdefgh12==;y",
            {"AccountKey=abcdefgh12=="},
            "abcdefgh12==",
        ),
        (r"[a-z]+=\w+", "x k=abcd y", {"k=abcd"}, "k=abcd"),
    ],
    ids=[
        "assignment-value",
        "url-password",
        "empty-group-skipped",
        "kind-group-whole-token",
        "no-group-whole-match",
        "quotes-left-out",
        "token-tail-taken",
        "key-left-out-padding-kept",
        "short-value-keeps-key",
    ],
)
def test_the_secret_of_a_confirmed_match(
    pattern: str, line: str, confirmed: set[str], secret: str
) -> None:
    """A non-empty group right after ":", "=", a quote, a blank or "/" is the value, and is
    the secret; otherwise the whole match is the token, less the delimiters at its edges and
    a ``Name=`` before a value of 7 or more characters, plus the token characters that run
    on after it."""
    spans = secret_in(_match(pattern, line), line, confirmed)
    assert spans == [_span_of(line, secret)]


def test_every_value_group_of_a_match_is_a_secret() -> None:
    """A match with two value groups (a user's and a password's) gives both, in order."""
    line = "u=alice p=hunter22"
    spans = secret_in(_match(r"u=(\w+) p=(\w+)", line), line, {"hunter22"})
    assert spans == [_span_of(line, "alice"), _span_of(line, "hunter22")]


@pytest.mark.parametrize(
    ("pattern", "line", "confirmed"),
    [
        (r"key=(\w+)", "key=abc123", set()),
        (r"key=(\w+)", "key=abc123", {"key=abc123"}),
        (r"tok_[a-z]{3}", "x tok_abc y", {"tok_ab"}),
    ],
    ids=["nothing-confirmed", "group-not-confirmed", "other-value-confirmed"],
)
def test_a_match_the_plugin_did_not_confirm_is_no_secret(
    pattern: str, line: str, confirmed: set[str]
) -> None:
    """A match is a secret only when one of the values the plugin yields for it (its
    non-empty groups, or the whole match where it has none) is among those the plugin
    confirmed."""
    assert secret_in(_match(pattern, line), line, confirmed) == []


@pytest.mark.parametrize(
    ("line", "secret"),
    [("Key=abcdefg", "abcdefg"), ("Key=abcdef", "Key=abcdef")],
    ids=["seven-leaves-the-key-out", "six-keeps-the-key"],
)
def test_a_key_is_left_out_only_before_a_value_of_min_length(line: str, secret: str) -> None:
    """A ``Name=`` a pattern took is left in clear only when the value after it is at least
    ``MIN_LENGTH`` (7) characters, the shortest secret a format holds; a shorter one is taken
    with its name."""
    assert MIN_LENGTH == 7
    assert secret_in(_match(r"[A-Za-z]+=\w+", line), line, {line}) == [_span_of(line, secret)]


# -- lines_of -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "pattern", "lines"),
    [
        ("a x1 b\nc\nd x2\n", r"x\d", [(0, "a x1 b"), (9, "d x2")]),
        ("x1 x2 x3\nz", r"x\d", [(0, "x1 x2 x3")]),
        ("ab\ncd\nef", r"b\nc", [(0, "ab"), (3, "cd")]),
        ("first\nlast x9", r"x\d", [(6, "last x9")]),
        ("x1\n\nx2", r"x\d", [(0, "x1"), (4, "x2")]),
        ("nothing here", r"x\d", []),
    ],
    ids=[
        "two-lines",
        "one-line-many-matches",
        "match-over-two-lines",
        "last-line",
        "blank",
        "none",
    ],
)
def test_the_lines_a_patterns_matches_stand_on(
    text: str, pattern: str, lines: list[tuple[int, str]]
) -> None:
    """Each line holding a match, or a part of one, is given once, with the offset where it
    starts and without its newline, in the text's order."""
    assert list(lines_of(text, re.compile(pattern))) == lines


# -- merged ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spans", "out"),
    [
        ([], []),
        ([(5, 7), (1, 3)], [(1, 3), (5, 7)]),
        ([(1, 3), (3, 5)], [(1, 5)]),
        ([(1, 5), (2, 3)], [(1, 5)]),
        ([(1, 4), (2, 6)], [(1, 6)]),
        ([(1, 3), (4, 5)], [(1, 3), (4, 5)]),
        ([(2, 2), (4, 6)], [(4, 6)]),
        ([(3, 1)], []),
        ([(4, 9), (0, 2), (1, 5)], [(0, 9)]),
    ],
    ids=[
        "none",
        "sorted",
        "touching",
        "contained",
        "overlapping",
        "gap-of-one",
        "empty-dropped",
        "reversed-dropped",
        "chain",
    ],
)
def test_spans_are_sorted_and_merged_where_they_touch(
    spans: list[tuple[int, int]], out: list[tuple[int, int]]
) -> None:
    """Spans come back sorted, one span for each run of spans that overlap or touch, and an
    empty or reversed span is dropped."""
    assert merged(spans) == out
