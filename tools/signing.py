"""This installation's transcript key, and the HMAC-SHA256 that signs a transcript's seal.

The key is 32 random bytes in ``<state dir>/transcript.key`` (``tools.statedir``), made
on first use with mode 0600. Its id, the first 16 hex digits of its sha256, is written
in every seal, so a replay elsewhere can say *whose* key signed a transcript even where
it cannot check the signature.

Why a shared-secret MAC and not a public-key signature: the one who checks a transcript
is the installation that wrote it (last night's health check, a resumed session, an
engineer replaying yesterday's diagnosis on the same host), and the standard library
does HMAC with nothing to install or manage beyond one file. The price, said wherever a
replay reports a seal: another installation sees the key id, never a checked signature.

A key file is refused, in one line, when it is a symbolic link (someone else's file could
stand in for it), not a regular file, readable or writable by group or others (it may
have been read: anyone holding it can sign), or not exactly 32 bytes. Nothing here
prints or logs the key.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path

from tools.errors import ConfigError
from tools.probes._common import kind_words
from tools.statedir import app_state_dir

KEY_NAME = "transcript.key"
KEY_BYTES = 32
KEY_ID_HEX = 16

_READ_FLAGS = (
    os.O_RDONLY
    | os.O_NOFOLLOW  # a symlink swapped in after the lstat() still is not followed
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in cannot block the open
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_CREATE_FLAGS = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def key_id_of(secret: bytes) -> str:
    return hashlib.sha256(secret).hexdigest()[:KEY_ID_HEX]


@dataclass(frozen=True)
class TranscriptKey:
    path: Path
    secret: bytes = field(repr=False)

    @property
    def key_id(self) -> str:
        return key_id_of(self.secret)

    def sign(self, message: bytes) -> str:
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()

    def verify(self, message: bytes, mac: str) -> bool:
        # compare_digest: how long the comparison takes says nothing of where it differed.
        # On bytes, because on str it raises for a non-ASCII one (a forged seal may hold it).
        return hmac.compare_digest(self.sign(message).encode(), mac.encode())


def key_path(state_dir: Path | None = None) -> Path:
    return (state_dir or app_state_dir()) / KEY_NAME


def load_key(state_dir: Path | None = None) -> TranscriptKey | None:
    """This installation's key; ``None`` when it has none yet; ``ConfigError`` (one line,
    exit 2) for a key file that must not be used."""
    path = key_path(state_dir)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the transcript key: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise ConfigError(
            f"{path}: the transcript key is a symbolic link; refusing it (it must be a file "
            "of its own: put the key itself there, or remove the link to make a new key)"
        )
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(
            f"{path}: the transcript key is not a regular file ({kind_words(st.st_mode)}); "
            "refusing it"
        )
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the transcript key: {exc.strerror}") from None
    try:
        st = os.fstat(fd)  # what is read is what was checked
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(
                f"{path}: the transcript key is not a regular file ({kind_words(st.st_mode)}); "
                "refusing it"
            )
        if st.st_mode & 0o077:
            raise ConfigError(
                f"{path}: the transcript key has mode {stat.S_IMODE(st.st_mode):04o}, open to "
                "group or others; refusing it (chmod 600 it if nobody else can have read "
                "it, else remove it to make a new key)"
            )
        secret = os.read(fd, KEY_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the transcript key: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(secret) != KEY_BYTES:
        shown = f"{len(secret)}" if len(secret) <= KEY_BYTES else f"more than {KEY_BYTES}"
        raise ConfigError(
            f"{path}: the transcript key holds {shown} bytes, not {KEY_BYTES}; refusing it"
        )
    return TranscriptKey(path, secret)


def installation_key(state_dir: Path | None = None) -> TranscriptKey:
    """This installation's key, made on first use.

    The new key is written to a temporary file of its own (O_EXCL, 0600) and then
    hard-linked into place, which fails where a key exists: two processes starting at
    once agree on one key, and nobody ever reads a half-written one. Whichever key is in
    place is then read back through ``load_key``, with all its checks."""
    existing = load_key(state_dir)
    if existing is not None:
        return existing
    path = key_path(state_dir)
    tmp = path.with_name(f".{KEY_NAME}.{secrets.token_hex(8)}")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, _CREATE_FLAGS, 0o600)
        try:
            secret = secrets.token_bytes(KEY_BYTES)
            if os.write(fd, secret) != KEY_BYTES:
                raise OSError(errno.EIO, "short write")
            os.fsync(fd)
        finally:
            os.close(fd)
        # FileExistsError: another process made it first, and theirs is the key.
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    except OSError as exc:
        raise ConfigError(
            f"{path.parent}: cannot create the transcript key: {exc.strerror}"
        ) from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    made = load_key(state_dir)
    if made is None:  # removed between the link and the read: say so, do not loop
        raise ConfigError(f"{path}: the transcript key vanished as it was made")
    return made
