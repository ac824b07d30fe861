"""JSON-like values as the redactor reads them (tools._json_values): every string in a value
(dict keys too), the JSON document a line of command output ends with, and a key kept
distinct when redaction makes two keys one."""

from __future__ import annotations

import pytest

from tools._json_values import collect_strings, json_in, unique_key


@pytest.mark.parametrize(
    ("value", "strings"),
    [
        ("alone", ["alone"]),
        ({"k": "v", "n": 1}, ["k", "v", "n"]),
        (["a", ("b", ["c"]), {"d": {"e": "f"}}], ["a", "b", "c", "d", "e", "f"]),
        ([1, 2.5, None, True, b"bytes"], []),
        ({}, []),
    ],
    ids=["a-string", "keys-and-values", "nested", "no-strings", "empty"],
)
def test_every_string_in_a_value_is_collected_in_order(value: object, strings: list[str]) -> None:
    """The strings of a value are collected depth first in the value's order, each dict key
    before its value; numbers, None, booleans and bytes are not strings."""
    out: list[str] = []
    collect_strings(value, out)
    assert out == strings


def test_collected_strings_are_added_to_what_was_there() -> None:
    """Collecting appends: strings already in the list are kept, ahead of the new ones."""
    out = ["earlier"]
    collect_strings({"k": ["v"]}, out)
    assert out == ["earlier", "k", "v"]


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ('INFO {"a": 1}', (5, {"a": 1})),
        ("x [1, 2]", (2, [1, 2])),
        ('{"a": [1]}', (0, {"a": [1]})),
        ('see [note] {"a": [1]}', (11, {"a": [1]})),
        ('metadata ["x", {"y": 2}]  ', (9, ["x", {"y": 2}])),
        ('{"a": 1} trailing', None),
        ('{"a": 1', None),
        ("no json here", None),
        ('value: "abc"', None),
        ("[" * 100_000 + "]" * 100_000, None),
    ],
    ids=[
        "object-after-a-prefix",
        "array",
        "whole-line",
        "array-word-before-the-object",
        "blanks-after",
        "text-after",
        "unclosed",
        "plain-text",
        "a-string-is-no-document",
        "nested-too-deep",
    ],
)
def test_the_json_document_a_line_ends_with(line: str, found: tuple[int, object] | None) -> None:
    """A line holds a document when, from its first "{" or its first "[", a JSON object or
    array runs to the end of the line (blanks allowed after it): its offset and value are
    given; a document followed by text, an unclosed one, a scalar and one nested past the
    parser's depth are none."""
    assert json_in(line) == found


@pytest.mark.parametrize(
    ("taken", "key"),
    [
        (set(), "k"),
        ({"other"}, "k"),
        ({"k"}, "k #2"),
        ({"k", "k #2"}, "k #3"),
        ({"k", "k #2", "k #3"}, "k #4"),
        ({"k", "k #3"}, "k #2"),
        ({"k #2"}, "k"),
    ],
    ids=["free", "other-keys", "second", "third", "fourth", "first-free-number", "numbered-only"],
)
def test_a_key_redaction_made_twice_gets_the_next_free_number(taken: set[str], key: str) -> None:
    """A key not yet taken is kept as it is; one already taken becomes ``key #N``, N the
    first number from 2 not taken, so no value is lost when two keys redact alike."""
    assert unique_key("k", dict.fromkeys(taken)) == key
