"""The one rule for text UTF-8 cannot hold (tools/text.py), held to Python's own codecs:
what is written always encodes as UTF-8, a round-trip record reads back to the very
string, and an escaped name says which byte it was."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from tools.text import json_text, model_from_json, model_json, writable, writable_json

# Any code point, lone surrogates included (hypothesis leaves them out of st.text()).
ANY = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF))


@given(ANY)
def test_written_text_always_encodes_and_clean_text_is_untouched(value: str) -> None:
    """Any string made writable encodes as UTF-8, and a string that already did is returned
    unchanged."""
    out = writable(value)
    out.encode("utf-8")  # never raises
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        assert out != value
    else:
        assert out == value


@given(st.dictionaries(ANY, st.lists(ANY, max_size=3), max_size=4))
def test_a_json_record_reads_back_to_the_very_strings(value: dict[str, list[str]]) -> None:
    """A JSON record of any strings is valid UTF-8 and reads back to the very same strings."""
    text = json_text(value, sort_keys=True)
    text.encode("utf-8")
    assert json.loads(text) == value


def test_a_file_names_byte_is_named_as_ls_b_names_it() -> None:
    """A file name's undecodable byte is written as ``ls -b`` names it, and a lone surrogate as a
    JSON escape."""
    assert writable(os.fsdecode(b"n\xff.txt")) == "n\\xff.txt"
    assert writable("a\ud800b") == "a\\ud800b"  # a JSON escape's surrogate, as JSON wrote it


def test_keys_that_read_the_same_once_escaped_are_both_kept() -> None:
    """Two keys that read the same once escaped are both kept, the second marked as such, so no
    value is lost."""
    value = {"\\xff": 1, os.fsdecode(b"\xff"): 2}
    assert writable_json(value) == {"\\xff": 1, "\\xff (same once escaped)": 2}


def test_clean_containers_come_back_as_they_were() -> None:
    """A container of clean text is returned as the same object, not a copy."""
    value = {"a": ["b", {"c": 1}]}
    assert writable_json(value) is value


class Record(BaseModel):
    path: str
    n: int = 0


def test_a_model_holding_a_file_names_bytes_is_written_and_read_back() -> None:
    """A model holding a file name's raw bytes is written as UTF-8 and read back equal; clean text
    is written as pydantic writes it."""
    record = Record(path=os.fsdecode(b"/runs-\xe9t\xe9"), n=3)
    text = model_json(record, indent=1)
    text.encode("utf-8")
    assert model_from_json(Record, text) == record
    assert model_json(Record(path="caf\u00e9")) == Record(path="caf\u00e9").model_dump_json()


def test_a_document_that_is_not_json_fails_as_pydantic_says() -> None:
    """A document cut short fails with pydantic's own validation error, not a new one."""
    with pytest.raises(ValidationError, match="EOF while parsing a string"):
        model_from_json(Record, '{"path": "half a li')
