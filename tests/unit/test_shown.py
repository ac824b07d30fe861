"""How a sentence shows a value and the facts it rests on: one rule for every claim's
sentence and every summary, so a figure reads the same wherever it is cited."""

from __future__ import annotations

import pytest

from agent.model.shown import shown_value, unshown, with_cites

# (value, how a sentence shows it), written by hand.
SHOWN = [
    (0, "0"),
    (1422, "1,422"),
    (-12800, "-12,800"),
    (1422.4375610284574, "1,422"),
    (0.3412, "0.3412"),
    (12761.6, "12,762"),
    (9999.4, "9,999"),
    (9999.5, "10,000"),
    (-9999.7, "-10,000"),
    (True, "True"),
    ("2.13.0", "'2.13.0'"),
    ("x" * 130, repr("x" * 117 + "...")),
    ([1, 2], "[1, 2]"),
    (None, "None"),
    (10**30, "100000… (an integer of 31 digits)"),
]


@pytest.mark.parametrize(("value", "said"), SHOWN)
def test_a_value_is_shown_grouped_quoted_and_cut(value: object, said: str) -> None:
    """Numbers grouped by thousands (a float to four significant digits, whole past
    10,000), text quoted, anything long cut at 120 characters, a huge integer by its size."""
    assert shown_value(value) == said


def test_an_integer_too_long_for_str_is_shown_by_its_bits() -> None:
    """Past the 4,300 digits ``str`` refuses, the size is said in bits, not a crash."""
    assert shown_value(1 << 20000) == "an integer of 20001 bits"


def test_cites_a_sentence_already_names_are_not_added_again() -> None:
    """A claim's sentence names its facts inline; a cited line adds only the others, once,
    in the order given."""
    text = "lines = 2 [F-1] ≥ 1"
    assert unshown(text, ["F-1", "F-2", "F-3", "F-2"]) == ["F-2", "F-3"]
    assert with_cites(text, ["F-1", "F-2", "F-3", "F-2"]) == f"{text} [F-2, F-3]"
    assert with_cites(text, ["F-1"]) == text
