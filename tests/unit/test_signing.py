"""This installation's transcript key and its HMAC (tools.signing): the key's id is the head
of its sha256, a seal is HMAC-SHA256 in hex, the key file is made once (private, 32 random
bytes) and refused, in one line naming the path, wherever it could have been read or is
not a key."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from tools.errors import ConfigError
from tools.signing import KEY_NAME, TranscriptKey, installation_key, key_id_of, key_path, load_key

# RFC 4231, test case 2: HMAC-SHA256 of "what do ya want for nothing?" under the key "Jefe".
RFC4231_KEY = b"Jefe"
RFC4231_DATA = b"what do ya want for nothing?"
RFC4231_MAC = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"


def _key_file(state: Path, secret: bytes, mode: int = 0o600) -> Path:
    """A key file holding ``secret`` in ``state``, with ``mode``."""
    state.mkdir(parents=True, exist_ok=True)
    path = state / KEY_NAME
    path.write_bytes(secret)
    path.chmod(mode)
    return path


@pytest.mark.parametrize(
    ("secret", "key_id"),
    [(b"", "e3b0c44298fc1c14"), (b"abc", "ba7816bf8f01cfea")],
    ids=["empty", "abc"],
)
def test_a_keys_id_is_the_head_of_its_sha256(secret: bytes, key_id: str) -> None:
    """A key's id is the first 16 hex digits of its sha256 (FIPS 180-2's digests of "" and
    "abc"), on the function and on the key alike."""
    assert key_id_of(secret) == key_id
    assert TranscriptKey(Path("k"), secret).key_id == key_id


def test_a_seal_is_the_hmac_sha256_of_the_message_in_hex() -> None:
    """Signing gives HMAC-SHA256 as lower-case hex: RFC 4231's test case 2."""
    assert TranscriptKey(Path("k"), RFC4231_KEY).sign(RFC4231_DATA) == RFC4231_MAC


@pytest.mark.parametrize(
    ("mac", "good"),
    [
        (RFC4231_MAC, True),
        (RFC4231_MAC[:-1] + "2", False),
        (RFC4231_MAC.upper(), False),
        (RFC4231_MAC[:-2], False),
        ("", False),
        ("é" * 64, False),
    ],
    ids=["right", "last-digit-changed", "upper-case", "cut-short", "empty", "non-ascii"],
)
def test_only_the_exact_seal_verifies(mac: str, good: bool) -> None:
    """A seal verifies only when it is exactly the message's HMAC in lower-case hex; a forged
    one holding non-ASCII characters is false, not an error."""
    assert TranscriptKey(Path("k"), RFC4231_KEY).verify(RFC4231_DATA, mac) is good


def test_a_keys_repr_never_shows_its_secret() -> None:
    """Printing or logging a key shows its path, never its bytes."""
    secret = b"\x01" * 32
    shown = repr(TranscriptKey(Path("/state/transcript.key"), secret))
    assert "transcript.key" in shown
    assert repr(secret) not in shown and "secret" not in shown


def test_the_key_lives_in_the_state_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key's path is ``transcript.key`` in the directory given, else in the app's state
    directory under ``$XDG_STATE_HOME``."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert key_path(tmp_path / "given") == tmp_path / "given" / "transcript.key"
    assert key_path() == tmp_path / "xdg" / "dflash-doctor" / "transcript.key"


def test_no_key_yet_is_none_and_creates_nothing(tmp_path: Path) -> None:
    """Where there is no key, loading says so (None) and makes neither the key nor its
    directory: a replay looks the key up without creating state."""
    state = tmp_path / "state"
    assert load_key(state) is None
    assert not state.exists()


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o700], ids=["0600", "0400", "0700"])
def test_a_key_only_its_owner_can_touch_is_loaded(tmp_path: Path, mode: int) -> None:
    """A 32-byte key file with no permission for group or others is loaded as it is."""
    secret = bytes(range(32))
    path = _key_file(tmp_path, secret, mode)
    assert load_key(tmp_path) == TranscriptKey(path, secret)


@pytest.mark.parametrize("mode", [0o640, 0o620, 0o604, 0o601], ids=["g+r", "g+w", "o+r", "o+x"])
def test_a_key_open_to_group_or_others_is_refused(tmp_path: Path, mode: int) -> None:
    """Any permission bit for group or others refuses the key, naming the file and its mode;
    the mode is left as found."""
    path = _key_file(tmp_path, bytes(32), mode)
    with pytest.raises(
        ConfigError, match=f"^{re.escape(str(path))}: the transcript key has mode {mode:04o}, open"
    ):
        load_key(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_a_state_path_that_is_a_file_is_refused_as_unreadable(tmp_path: Path) -> None:
    """Where the state directory is a regular file, the key cannot be looked up: the
    refusal names the key's path and the system's reason."""
    state = tmp_path / "state"
    state.write_text("not a directory")
    with pytest.raises(
        ConfigError,
        match=f"^{re.escape(str(state / KEY_NAME))}: cannot read the transcript key: "
        "Not a directory$",
    ):
        load_key(state)


def test_the_first_key_is_made_private_and_random(tmp_path: Path) -> None:
    """The first use makes the state directory (0700) and a key file of 32 bytes (0600)
    whose id is its sha256's head; nothing else is left beside it."""
    state = tmp_path / "state"
    key = installation_key(state)
    assert key.path == state / KEY_NAME
    secret = key.path.read_bytes()
    assert len(secret) == 32 and key.secret == secret
    assert key.key_id == key_id_of(secret)
    assert stat.S_IMODE(key.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert os.listdir(state) == [KEY_NAME]


def test_a_key_once_made_is_the_key_from_then_on(tmp_path: Path) -> None:
    """Each later use reads the same key back, never a new one."""
    first = installation_key(tmp_path)
    assert installation_key(tmp_path) == first
    assert load_key(tmp_path) == first


def test_two_installations_make_different_keys(tmp_path: Path) -> None:
    """Each installation's key is its own random secret."""
    assert installation_key(tmp_path / "a").secret != installation_key(tmp_path / "b").secret


def test_a_bad_key_is_refused_not_replaced(tmp_path: Path) -> None:
    """A key file that must not be used (31 bytes here) is refused by the first use too, and
    left as it is: a new key is never written over an old one."""
    path = _key_file(tmp_path, b"k" * 31)
    with pytest.raises(
        ConfigError, match=f"^{re.escape(str(path))}: the transcript key holds 31 bytes, not 32"
    ):
        installation_key(tmp_path)
    assert path.read_bytes() == b"k" * 31


def test_a_state_directory_that_cannot_be_made_is_refused(tmp_path: Path) -> None:
    """Where the state directory cannot be made (a dangling link stands in its place), the
    refusal names the directory and the system's reason, and no key is left anywhere."""
    state = tmp_path / "state"
    state.symlink_to(tmp_path / "gone" / "deeper")
    with pytest.raises(
        ConfigError,
        match=f"^{re.escape(str(state))}: cannot create the transcript key: File exists$",
    ):
        installation_key(state)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state"]
