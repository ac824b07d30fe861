"""The target's host as the controller writes it to its own files: a pseudonym.

A transcript and a ledger name the target's host by a placeholder numbered per session
(``[REDACTED-HOST-1]``, ``tools.redact``). The files that outlive a session — the
health history, a run, ``health --out``, a baseline, a session's ``session.json`` —
need a name that is the same every night, so a target's trend and streak still join up:
``host-`` and 12 hex digits of an HMAC of the name under this installation's key
(``tools.signing``). The same host is the same pseudonym on this installation and a
different one on any other; without the key nobody can test a guess of the name.

``resume`` needs the real target back, so ``session.json`` also keeps it sealed (Fernet,
under a key derived from the installation key): a session directory copied into a bug
report names no host, and only this installation opens it. Names that identify nobody
(``localhost``, ``127.0.0.1``) are kept, as the redactor keeps them.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from tools.errors import ConfigError, TargetURIError
from tools.redact import identifies_nobody, names_rule
from tools.signing import TranscriptKey
from tools.transport.uri import parse_target

if TYPE_CHECKING:
    # cryptography loads when a target is sealed or opened, not with every command.
    from cryptography.fernet import Fernet

_PREFIX = "host-"
_DIGITS = 12
PSEUDONYM = re.compile(rf"{_PREFIX}[0-9a-f]{{{_DIGITS}}}\Z")
# Domain separation: the installation key also signs transcripts.
_NAME_CONTEXT = b"dflash-doctor host pseudonym v1\0"
_SEAL_CONTEXT = b"dflash-doctor sealed target v1\0"


class HostNames:
    """Pseudonyms and sealing under one installation key."""

    def __init__(self, key: TranscriptKey) -> None:
        self._secret = key.secret

    def pseudonym(self, host: str) -> str:
        """``host``'s pseudonym; a pseudonym, or a name that identifies nobody, as it is."""
        if PSEUDONYM.match(host) or identifies_nobody(host):
            return host
        mac = hmac.new(self._secret, _NAME_CONTEXT + host.lower().encode(), hashlib.sha256)
        return _PREFIX + mac.hexdigest()[:_DIGITS]

    def uri(self, uri: str) -> str:
        """``uri`` with its host a pseudonym. A text that is no target URI (a profile
        name) is returned as it is."""
        try:
            parsed = parse_target(uri)
        except TargetURIError:
            return uri
        if parsed.host is None:
            return uri
        return str(dataclasses.replace(parsed, host=self.pseudonym(parsed.host)))

    def text(self, text: str, hosts: Iterable[str]) -> str:
        """``text`` with each of ``hosts`` standing whole (not part of a longer name)
        replaced by its pseudonym: an error message that quotes the host."""
        return self.replacer(hosts)(text)

    def replacer(self, hosts: Iterable[str]) -> Callable[[str], str]:
        """``text`` for many strings: the rule compiled and the pseudonyms made once (the
        same whole-name rule the redactor uses for a host)."""
        shown = {
            h: self.pseudonym(h)
            for h in hosts
            if h and not PSEUDONYM.match(h) and not identifies_nobody(h)
        }
        rule = names_rule(sorted(shown, key=len, reverse=True), r"(?![\w-])")
        if rule is None:
            return lambda text: text
        return lambda text: rule.sub(lambda m: shown[m.group(0)], text)

    def _fernet(self) -> Fernet:
        from cryptography.fernet import Fernet

        derived = hmac.new(self._secret, _SEAL_CONTEXT, hashlib.sha256).digest()
        return Fernet(base64.urlsafe_b64encode(derived))

    def seal(self, value: str) -> str:
        return str(self._fernet().encrypt(value.encode()).decode("ascii"))

    def unseal(self, token: str, where: str) -> str:
        """The value ``seal`` sealed; a token this installation did not seal (another
        key, an edit) is a one-line error naming ``where``."""
        from cryptography.fernet import InvalidToken

        try:
            return str(self._fernet().decrypt(token.encode("ascii")).decode())
        except (InvalidToken, UnicodeError, ValueError):
            raise ConfigError(
                f"{where}: the target is sealed with another installation's key (or was"
                " edited): it cannot be opened here"
            ) from None


def host_names() -> HostNames:
    """This installation's pseudonyms (its key made on first use)."""
    from tools.signing import installation_key

    return HostNames(installation_key())
