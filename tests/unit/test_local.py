"""The local transport runs an argv (never a shell) and returns exit codes as data."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.lib.helpers import processes_with
from tools.errors import CommandTimeout
from tools.transport import LocalTransport, open_target


@pytest.mark.parametrize("code", [0, 1, 7, 255])
def test_exit_codes_are_data(code: int) -> None:
    """A non-zero exit returns a result with that code; nothing is raised."""
    result = LocalTransport().run(["sh", "-c", f"exit {code}"])
    assert result.rc == code
    assert result.ok is (code == 0)


def test_argv_is_not_parsed_by_a_shell() -> None:
    """Shell syntax in an argument arrives as literal text."""
    payload = "$(echo pwned) `id` $HOME; rm -rf /nonexistent && echo no"
    result = LocalTransport().run(["printf", "%s", payload])
    assert result.stdout == payload.encode()


def test_stdin_and_binary_output_are_byte_exact() -> None:
    """Bytes in, the same bytes out, NULs and invalid UTF-8 included."""
    blob = bytes(range(256)) * 64
    result = LocalTransport().run(["cat"], stdin=blob)
    assert result.stdout == blob
    assert result.stdin_digest


def test_missing_program_is_exit_127() -> None:
    """As in a shell: a missing command is a result (127), so probes record it as a fact."""
    result = LocalTransport().run(["definitely-not-a-program-xyz"])
    assert result.rc == 127
    assert b"command not found" in result.stderr


def test_signal_death_is_128_plus_signal() -> None:
    """A command killed by SIGKILL reports 137, as a remote shell would."""
    assert LocalTransport().run(["sh", "-c", "kill -9 $$"]).rc == 137


def test_timeout_kills_the_whole_process_group() -> None:
    """A timed-out command and the children it started are gone afterwards."""
    marker = f"{uuid.uuid4().hex}"
    started = time.monotonic()
    with pytest.raises(CommandTimeout, match=r"still running after 0\.5s"):
        LocalTransport().run(["sh", "-c", f"sleep 30 & wait # {marker}"], timeout=0.5)
    assert time.monotonic() - started < 5
    time.sleep(0.2)
    assert not processes_with(marker)


def test_target_timeout_through_a_hop_is_enforced_on_the_target() -> None:
    """Through a hop, coreutils `timeout` stops the command where it runs, and the client
    reports CommandTimeout rather than exit 124."""
    target = open_target("local")
    target.remote_timeout = True  # what any hop or SSH turns on
    with pytest.raises(CommandTimeout, match="ran past its 1s limit"):
        target.run(["sleep", "20"], timeout=1)
