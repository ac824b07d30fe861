"""Redaction at write time: secrets and host identities never reach a transcript.

Each distinct secret or host becomes a stable placeholder (``[REDACTED-HOST-1]``,
``[REDACTED-IP-2]``, ``[REDACTED-SECRET-1]``), the same one everywhere in a file, so a
replay that asks for "the same command on the same host" still matches. The redactor is
idempotent: redacting redacted text changes nothing, which replay relies on.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

_PLACEHOLDER = re.compile(r"\[REDACTED-[A-Z]+-\d+\]")

# Order matters: whole private keys first, then credentials, then addresses.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.DOTALL
)
_SECRETS = [
    re.compile(r"(?i)\b(bearer\s+|basic\s+)([A-Za-z0-9._~+/=-]{8,})"),
    # key=value / key: value pairs whose key *ends* with a secret word ("HF_TOKEN=…",
    # "password: …", JSON "api_key": "…"), so "tokens_per_sec: 12800" stays; values that
    # are plain numbers or the auth scheme word are left alone.
    re.compile(
        r"(?i)(\b[A-Za-z0-9_-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key"
        r"|authorization)['\"]?\s*[=:]\s*)(['\"]?)(?!bearer\b|basic\b|[\d.]+\b)"
        r"([^\s'\",}]{4,})\2"
    ),
]
_TOKENS = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|sk-[A-Za-z0-9_-]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}"
    r"|glpat-[A-Za-z0-9_-]{20,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})\b"
)
_IPV4 = re.compile(
    r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\d.])"
)
# IPv6: the full eight groups, or a compressed form with "::". Nothing shorter, so clock
# times ("02:20:44") and MAC-like strings are left alone.
_H = r"[0-9A-Fa-f]{1,4}"
_IPV6 = re.compile(
    rf"(?<![\w:])(?:(?:{_H}:){{7}}{_H}|(?:{_H}:){{1,6}}(?::{_H}){{1,6}}|(?:{_H}:){{1,7}}:|::(?:{_H}:){{0,6}}{_H})(?![\w:])"
)
# Addresses that identify nobody; leaving them keeps transcripts readable.
_KEEP_IPS = {"0.0.0.0", "127.0.0.1", "255.255.255.255"}


class Redactor:
    """Values are remembered by their sha256, never in clear, so ``export`` can be saved
    beside a session and a resumed session keeps numbering its placeholders the same way
    without any secret reaching the disk."""

    def __init__(self, hosts: Iterable[str] = (), paths: Iterable[str] = ()) -> None:
        self._hosts = sorted({h for h in hosts if h and h not in _KEEP_IPS}, key=len, reverse=True)
        # Local directories (a home, a checkout) that say whose machine this is.
        self._paths = sorted(
            {p.rstrip("/") for p in paths if len(p.rstrip("/")) > 1}, key=len, reverse=True
        )
        self._maps: dict[str, dict[str, str]] = {"HOST": {}, "IP": {}, "SECRET": {}, "PATH": {}}
        self.counts: Counter[str] = Counter()

    def export(self) -> dict[str, Any]:
        return {"maps": self._maps, "counts": dict(self.counts)}

    @classmethod
    def restore(
        cls, saved: dict[str, Any], hosts: Iterable[str] = (), paths: Iterable[str] = ()
    ) -> Redactor:
        redactor = cls(hosts, paths)
        for kind, mapping in saved.get("maps", {}).items():
            redactor._maps.setdefault(kind, {}).update(mapping)
        redactor.counts.update(saved.get("counts", {}))
        return redactor

    def _placeholder(self, kind: str, value: str) -> str:
        mapping = self._maps[kind]
        key = hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()
        if key not in mapping:
            mapping[key] = f"[REDACTED-{kind}-{len(mapping) + 1}]"
        self.counts[kind] += 1
        return mapping[key]

    def text(self, text: str) -> str:
        for path in self._paths:
            text = re.sub(
                # A whole path: not the tail of a longer one ("/x/root"), nor the user in
                # "ssh://root@" (followed by "@"); a file:// URL or a JSON-escaped quote
                # after it still counts.
                rf"(?<![\w.-]){re.escape(path)}(?=$|[/\s\"'\\,:;)\]}}])",
                lambda m: self._placeholder("PATH", m.group(0)),
                text,
            )
        text = _PRIVATE_KEY.sub(lambda m: self._placeholder("SECRET", m.group(0)), text)
        for pattern in _SECRETS:
            text = pattern.sub(self._secret_pair, text)
        text = _TOKENS.sub(lambda m: self._placeholder("SECRET", m.group(0)), text)
        for host in self._hosts:
            text = re.sub(
                rf"(?<![\w.-]){re.escape(host)}(?![\w-])",
                lambda m: self._placeholder("HOST", m.group(0)),
                text,
            )
        text = _IPV4.sub(self._ip, text)
        return _IPV6.sub(self._ip, text)

    def _secret_pair(self, match: re.Match[str]) -> str:
        value = match.group(match.lastindex or 0)
        if _PLACEHOLDER.fullmatch(value):
            return match.group(0)
        return match.group(0).replace(value, self._placeholder("SECRET", value))

    def _ip(self, match: re.Match[str]) -> str:
        value = match.group(0)
        return value if value in _KEEP_IPS else self._placeholder("IP", value)

    def data(self, data: bytes) -> bytes:
        """Bytes as text where they decode; undecodable bytes pass through unchanged."""
        return self.text(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")

    def any(self, value: object) -> object:
        """Redact every string inside a JSON-like value."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.any(v) for v in value]
        if isinstance(value, dict):
            return {k: self.any(v) for k, v in value.items()}
        return value
