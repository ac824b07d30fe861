"""The plain-data pickle reader: what pickle itself writes for plain values comes back
equal, at every protocol; a pickle that would run code, build an object or load a
class is refused by name and offset, and nothing it names runs; malformed bytes are one
clear error."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.parsers import plain_pickle
from tools.parsers.plain_pickle import Refused


def plain(with_bytes: bool) -> st.SearchStrategy[Any]:
    leaves: st.SearchStrategy[Any] = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False)
        | st.text(max_size=20)
    )
    if with_bytes:
        leaves = leaves | st.binary(max_size=20)
    return st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=5)
            | st.tuples(inner, inner)
            | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=5)
        ),
        max_leaves=30,
    )


@settings(max_examples=300, derandomize=True)
@given(data=st.data(), protocol=st.integers(min_value=0, max_value=pickle.HIGHEST_PROTOCOL))
def test_plain_values_come_back_equal(data: st.DataObject, protocol: int) -> None:
    """Any plain value pickle writes comes back equal at every protocol (bytes from protocol 3 on,
    where they are data rather than a call)."""
    # Below protocol 3 pickle writes bytes as a call (_codecs.encode): not plain data.
    value = data.draw(plain(with_bytes=protocol >= 3))
    assert plain_pickle.loads(pickle.dumps(value, protocol=protocol)) == value


def test_bytes_at_protocol_2_are_a_call_and_refused() -> None:
    """Bytes pickled at protocol 2 are written as a call to a global: refused, naming the opcode."""
    with pytest.raises(Refused, match="opcode GLOBAL"):
        plain_pickle.loads(pickle.dumps(b"x", protocol=2))


def test_shared_references_stay_shared() -> None:
    """A list referenced twice in the pickle comes back as one list referenced twice, as pickle
    itself would return it."""
    inner = [1, 2]
    back = plain_pickle.loads(pickle.dumps({"a": inner, "b": inner}))
    assert back == {"a": [1, 2], "b": [1, 2]} and back["a"] is back["b"]


class Boom:
    """An object whose unpickling runs a command, as a crafted dump would."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_a_pickle_that_runs_a_command_is_refused_and_runs_nothing(
    tmp_path: Path, protocol: int
) -> None:
    """A pickle that would run a command is refused at its GLOBAL opcode, with the byte offset, and
    nothing runs; the real unpickler would have run it."""
    marker = tmp_path / "ran"
    data = pickle.dumps({"entries": [Boom(marker)]}, protocol=protocol)
    with pytest.raises(Refused, match=r"opcode (GLOBAL|STACK_GLOBAL) at byte \d+"):
        plain_pickle.loads(data)
    assert not marker.exists()
    # The real unpickler would have run it: the test's pickle is the real threat.
    pickle.loads(data)
    assert marker.exists()


@pytest.mark.parametrize(
    "value",
    [{1, 2}, frozenset({3}), Path("/etc"), bytearray(b"x"), complex(1, 2)],
    ids=lambda v: type(v).__name__,
)
def test_objects_beyond_plain_data_are_refused(value: Any) -> None:
    """Sets, paths, bytearrays and complex numbers need a class to rebuild them: refused, since only
    plain data is read."""
    with pytest.raises(Refused, match="only plain data is read"):
        plain_pickle.loads(pickle.dumps(value, protocol=4))


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"", "truncated"),
        (pickle.dumps([1, 2, 3])[:-1], "truncated"),
        (b"\x80\x04\x95garbage", "malformed"),
        (b"\xff\xfe", "malformed"),
        (b"\x80\x04}(K\x01u.", "an odd number of items for a dict at byte 6"),
        (b"\x80\x04}K\x01a.", "APPEND to something not a list at byte 5"),
        (b"\x80\x04K\x01K\x02.", "STOP with 2 values on the stack"),
        (b"\x80\x04h\x07.", "a memo reference to nothing at byte 2"),
    ],
    ids=["empty", "cut", "garbage", "bad-opcode", "odd-dict", "append-dict", "two", "memo"],
)
def test_malformed_bytes_are_one_clear_error(data: bytes, says: str) -> None:
    """Empty, cut or garbled bytes and inconsistent opcode sequences each give one error saying what
    is wrong and where, never a crash inside the reader."""
    with pytest.raises(Refused, match=says):
        plain_pickle.loads(data)
