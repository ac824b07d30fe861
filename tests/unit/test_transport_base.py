"""tools.transport.base: the transport contract. An argv goes to a target and bytes and an
exit status come back (a non-zero exit is data); time limits are checked in one place; a
command's stdin is named by its digest, or by the key of the question it asks."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from tools.transport.base import (
    MAX_TIMEOUT,
    CommandResult,
    KeyedStdin,
    Transport,
    check_timeout,
    digest,
    stdin_key,
)

SHA256_EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
SHA256_ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


@pytest.mark.parametrize(
    "value",
    [0.001, 1.0, 30, 604800.0],
    ids=["a-millisecond", "a-second", "an-int", "a-week-exactly"],
)
def test_check_timeout_accepts_a_usable_limit(value: float) -> None:
    """Any positive, finite number of seconds up to a week is returned unchanged."""
    assert check_timeout(value, "--timeout") == value


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.0, "0.0"),
        (-5.0, "-5.0"),
        (604800.5, "604800.5"),
        (1e300, "1e+300"),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
        (math.nan, "nan"),
    ],
    ids=["zero", "negative", "past-a-week", "huge", "infinity", "minus-infinity", "nan"],
)
def test_check_timeout_refuses_what_would_disable_the_limit(value: float, shown: str) -> None:
    """Zero, a negative, more than a week, infinity and NaN (which compares false with
    everything) are refused, the message naming the setting, the range and the value."""
    with pytest.raises(ValueError) as err:
        check_timeout(value, "connect_timeout")
    assert str(err.value) == (
        f"connect_timeout must be a number of seconds in (0, 604800], not {shown}"
    )


def test_the_longest_limit_is_a_week() -> None:
    """The ceiling on every time limit is seven days in seconds."""
    assert MAX_TIMEOUT == 604800.0


@pytest.mark.parametrize(("rc", "ok"), [(0, True), (1, False), (127, False), (-9, False)])
def test_a_command_is_ok_only_when_it_exited_zero(rc: int, ok: bool) -> None:
    """A non-zero exit (or a signal's negative status) is a result that is not ok, not an
    exception."""
    result = CommandResult(("false",), rc, b"", b"boom", 0.01, "local")
    assert result.ok is ok and result.stdin_digest == ""


@pytest.mark.parametrize(
    ("data", "expected"),
    [(None, ""), (b"", SHA256_EMPTY), (b"abc", SHA256_ABC)],
    ids=["no-stdin", "empty-stdin", "abc"],
)
def test_digest(data: bytes | None, expected: str) -> None:
    """sha256 in hex; "no stdin" is the empty string, distinct from an empty stdin's
    digest."""
    assert digest(data) == expected


def test_keyed_stdin_is_plain_bytes_to_everyone_else() -> None:
    """Stdin with a replay key equals, hashes and digests as its bytes."""
    keyed = KeyedStdin(b"abc", "plan-1")
    assert keyed == b"abc" and len(keyed) == 3 and hash(keyed) == hash(b"abc")
    assert keyed.replay_key == "plan-1"
    assert digest(keyed) == SHA256_ABC


@pytest.mark.parametrize(
    ("data", "key"),
    [
        (None, ""),
        (b"abc", SHA256_ABC),
        (KeyedStdin(b"abc", "plan-1"), "key:plan-1"),
        (KeyedStdin(b"other bytes", "plan-1"), "key:plan-1"),
    ],
    ids=["no-stdin", "plain-bytes", "keyed", "same-key-other-bytes"],
)
def test_stdin_key_names_a_keyed_stdin_by_its_key(data: bytes | None, key: str) -> None:
    """Recording and replay name a keyed stdin by its key, whatever its bytes (the
    probes' code may change, the plan does not); any other stdin by its digest."""
    assert stdin_key(data) == key


def test_a_class_with_name_run_and_close_is_a_transport() -> None:
    """The contract is structural: a name, ``run`` and ``close`` make a transport; a class
    missing ``close`` is not one."""

    class Echo:
        name = "echo"

        def run(
            self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
        ) -> CommandResult:
            return CommandResult(tuple(argv), 0, stdin or b"", b"", 0.0, self.name)

        def close(self) -> None:
            return None

    class NoClose:
        name = "half"

        def run(self, argv: Sequence[str]) -> None:
            return None

    assert isinstance(Echo(), Transport)
    assert not isinstance(NoClose(), Transport)
