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
    text = json_text(value, sort_keys=True)
    text.encode("utf-8")
    assert json.loads(text) == value


def test_a_file_names_byte_is_named_as_ls_b_names_it() -> None:
    assert writable(os.fsdecode(b"n\xff.txt")) == "n\\xff.txt"
    assert writable("a\ud800b") == "a\\ud800b"  # a JSON escape's surrogate, as JSON wrote it


def test_keys_that_read_the_same_once_escaped_are_both_kept() -> None:
    value = {"\\xff": 1, os.fsdecode(b"\xff"): 2}
    assert writable_json(value) == {"\\xff": 1, "\\xff (same once escaped)": 2}


def test_clean_containers_come_back_as_they_were() -> None:
    value = {"a": ["b", {"c": 1}]}
    assert writable_json(value) is value


class Record(BaseModel):
    path: str
    n: int = 0


def test_a_model_holding_a_file_names_bytes_is_written_and_read_back() -> None:
    record = Record(path=os.fsdecode(b"/runs-\xe9t\xe9"), n=3)
    text = model_json(record, indent=1)
    text.encode("utf-8")
    assert model_from_json(Record, text) == record
    assert model_json(Record(path="caf\u00e9")) == Record(path="caf\u00e9").model_dump_json()


def test_a_document_that_is_not_json_fails_as_pydantic_says() -> None:
    with pytest.raises(ValidationError, match="EOF while parsing a string"):
        model_from_json(Record, '{"path": "half a li')
