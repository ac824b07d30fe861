"""tools.transport.known_hosts: a known_hosts file read the way OpenSSH reads it. Each line
on its own: host keys are kept, ``@revoked`` keys are set apart, a ``@cert-authority``
line or a line that does not parse is skipped and counted with its line number (paramiko
alone would fail the whole file on the first); a file that cannot be read is a usage
error naming it."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import struct
from pathlib import Path

import pytest

from tools.errors import UsageError
from tools.transport.known_hosts import KnownHosts, load


def _ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _ed25519(seed: int) -> str:
    """The base64 of an ssh-ed25519 public key blob (RFC 8709: the type name, then the 32
    key bytes, each length-prefixed)."""
    blob = _ssh_string(b"ssh-ed25519") + _ssh_string(bytes((seed + i) % 256 for i in range(32)))
    return base64.b64encode(blob).decode()


KEY_A, KEY_B, KEY_C = _ed25519(1), _ed25519(2), _ed25519(3)


def _load(tmp_path: Path, text: str) -> KnownHosts:
    path = tmp_path / "known_hosts"
    path.write_text(text)
    return load(path)


def test_host_key_lines_are_kept_under_every_name_they_list(tmp_path: Path) -> None:
    """A line's key is known under each of its comma-separated names, with its type."""
    found = _load(
        tmp_path, f"gpu-box,10.0.0.7 ssh-ed25519 {KEY_A}\n[jump]:2222 ssh-ed25519 {KEY_B}\n"
    )
    assert sorted(found.keys.keys()) == ["10.0.0.7", "[jump]:2222", "gpu-box"]
    key = found.keys["gpu-box"]["ssh-ed25519"]
    assert base64.b64encode(key.asbytes()).decode() == KEY_A
    assert found.keys["10.0.0.7"]["ssh-ed25519"] == key
    assert found.revoked == set() and found.skipped == []


def test_a_hashed_host_name_is_looked_up_by_the_real_name(tmp_path: Path) -> None:
    """``HashKnownHosts`` lines (``|1|salt|hmac``) are kept, and the host they hash is
    found by its name."""
    salt = bytes(range(20))
    mac = hmac.new(salt, b"trainer-7", hashlib.sha1).digest()
    hashed = f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(mac).decode()}"
    found = _load(tmp_path, f"{hashed} ssh-ed25519 {KEY_A}\n")
    entry = found.keys.lookup("trainer-7")
    assert entry is not None and base64.b64encode(entry["ssh-ed25519"].asbytes()).decode() == KEY_A
    assert found.keys.lookup("trainer-8") is None


def test_comments_and_blank_lines_are_neither_keys_nor_skipped(tmp_path: Path) -> None:
    """Comments (indented too) and blank lines are passed over silently; line numbers
    still count them."""
    text = f"# managed by ansible\n\n   # indented comment\n\t\ngarbage\nhost ssh-ed25519 {KEY_A}\n"
    found = _load(tmp_path, text)
    assert list(found.keys.keys()) == ["host"]
    assert found.skipped == [(5, "not a host key line")]


def test_revoked_keys_are_set_apart_not_known(tmp_path: Path) -> None:
    """A ``@revoked`` line's key (its third field) is revoked and not a known key, whether
    the fields are separated by spaces or tabs."""
    text = f"@revoked * ssh-ed25519 {KEY_A}\n@revoked\tgpu-box\tssh-ed25519\t{KEY_B}\n"
    found = _load(tmp_path, text)
    assert found.revoked == {KEY_A, KEY_B}
    assert len(found.keys) == 0 and found.skipped == []


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (f"@cert-authority *.corp ssh-ed25519 {KEY_A}", "@cert-authority lines are not supported"),
        ("@revoked * ssh-ed25519", "@revoked lines are not supported"),
        ("@revoked", "@revoked lines are not supported"),
        (f"@future-marker host ssh-ed25519 {KEY_A}", "@future-marker lines are not supported"),
        ("host-only ssh-ed25519", "not a host key line"),
        (f"host ssh-unknown-type {KEY_A}", "not a host key line"),
        ("host ssh-ed25519 !!!not-base64!!!", "not a host key line (InvalidHostKey)"),
        (f"host ssh-rsa {KEY_A}", "not a host key line (SSHException)"),
    ],
    ids=[
        "cert-authority",
        "revoked-without-a-key",
        "bare-revoked",
        "unknown-marker",
        "two-fields",
        "unknown-key-type",
        "bad-base64",
        "type-does-not-match-the-blob",
    ],
)
def test_lines_that_cannot_be_used_are_skipped_with_why(
    tmp_path: Path, line: str, why: str
) -> None:
    """A line that cannot be used is skipped with its number and why, and the lines around
    it are still read (as ``ssh`` warns and goes on)."""
    found = _load(tmp_path, f"before ssh-ed25519 {KEY_A}\n{line}\nafter ssh-ed25519 {KEY_C}\n")
    assert found.skipped == [(2, why)]
    assert sorted(found.keys.keys()) == ["after", "before"]
    assert found.revoked == set()


def test_bytes_that_are_not_utf8_spoil_only_their_line(tmp_path: Path) -> None:
    """A line holding bytes that are not UTF-8 is one skipped line, not an unreadable file."""
    path = tmp_path / "known_hosts"
    path.write_bytes(b"h\xff ssh-ed25519 !!\xfe\r\n" + f"ok ssh-ed25519 {KEY_A}\r\n".encode())
    found = load(path)
    assert found.skipped == [(1, "not a host key line (SSHException)")]
    assert list(found.keys.keys()) == ["ok"]


@pytest.mark.parametrize("which", ["missing", "devnull"])
def test_no_file_means_no_known_hosts(tmp_path: Path, which: str) -> None:
    """A known_hosts that does not exist, or ``/dev/null`` (ssh's idiom for "remember
    nothing"), knows no host and is not an error."""
    path = tmp_path / "absent" if which == "missing" else Path(os.devnull)
    found = load(path)
    assert found.path == path
    assert (len(found.keys), found.revoked, found.skipped) == (0, set(), [])


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        ("directory", "is a directory"),
        ("fifo", "not a regular file (a FIFO); not opened"),
        ("dangling-link", "No such file or directory"),
        ("link-loop", "symlink loop (too many levels of symbolic links)"),
    ],
    ids=["directory", "fifo", "dangling-link", "link-loop"],
)
def test_a_known_hosts_that_cannot_be_read_is_a_usage_error(
    tmp_path: Path, make: str, reason: str
) -> None:
    """A path that is there but cannot be read as a file (a link that leads nowhere
    included: it is not "no file") is a usage error naming the path and why."""
    path = tmp_path / "known_hosts"
    if make == "directory":
        path.mkdir()
    elif make == "fifo":
        os.mkfifo(path)
    elif make == "dangling-link":
        path.symlink_to(tmp_path / "nowhere")
    else:
        path.symlink_to(path)
    with pytest.raises(UsageError) as err:
        load(path)
    assert str(err.value) == f"{path}: cannot read known_hosts: {reason}"
