"""Redaction at write time: secrets and host identities never reach a transcript.

Each distinct secret or host becomes a stable placeholder (``[REDACTED-HOST-1]``,
``[REDACTED-IP-2]``, ``[REDACTED-SECRET-1]``), the same one everywhere in a file, so a
replay that asks for "the same command on the same host" still matches. The redactor is
idempotent: redacting redacted text changes nothing, which replay relies on.

Redaction never changes the structure of what it redacts: a JSON document in command
output (the probe bundle's answer) is parsed first and redacted as a value, string by
string, and written back only where something was redacted; only output that is not JSON
is redacted as text.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

_PLACEHOLDER = re.compile(r"\[REDACTED-[A-Z]+-\d+\]")

# Order matters: whole private keys first, then credentials, then addresses.
_KEY_BEGIN = r"-----BEGIN [A-Z ]*PRIVATE KEY-----"
_KEY_END = r"-----END [A-Z ]*PRIVATE KEY-----"
_PRIVATE_KEY = re.compile(rf"{_KEY_BEGIN}.*?{_KEY_END}", re.DOTALL)
# A key with its end or its start cut off (a clipped line; a log's tail that kept only its
# last lines): the marker and the key lines next to it. A key line is base64 (16 or more
# characters), a PEM header or blank; the line that touches the marker may be shorter.
_B64 = r"[A-Za-z0-9+/]"
_KEY_LINE = rf"[ \t]*(?:{_B64}{{16,}}={{0,2}}|(?:Proc-Type|DEK-Info|Comment):[^\r\n]*)?[ \t]*\r?"
_SHORT_LINE = rf"[ \t]*{_B64}+={{0,2}}[ \t]*\r?"
_OPEN_KEY = re.compile(
    rf"{_KEY_BEGIN}[ \t]*\r?(?:\n{_KEY_LINE}(?![^\n])){{0,400}}(?:\n{_SHORT_LINE}(?![^\n]))?"
)
_CUT_KEY = re.compile(
    rf"^(?:{_KEY_LINE}\n){{0,400}}(?:{_SHORT_LINE}\n)?[ \t]*{_KEY_END}", re.MULTILINE
)
# One line of a key's body, wherever it stands alone (a parser took it for an exception's
# name): replaced when it is a line of a key found in the same value or before.
_BODY_RUN = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=])")
_SECRETS = [
    re.compile(r"(?i)\b(bearer\s+|basic\s+)([A-Za-z0-9._~+/=-]{8,})"),
    # key=value / key: value pairs whose key *ends* with a secret word ("HF_TOKEN=…",
    # "password: …", JSON "api_key": "…"), so "tokens_per_sec: 12800" stays; values that
    # are plain numbers or the auth scheme word are left alone.
    re.compile(
        r"(?i)(\b[A-Za-z0-9_-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key"
        r"|authorization)['\"]?\s*[=:]\s*)(['\"]?)(?!bearer\b|basic\b|[\d.]+\b)"
        # A backslash escapes the character after it (ab\"cd is one value), in a Python
        # message as in JSON text.
        r"((?:\\.|[^\s'\",}\\]){4,})\2"
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
        key = _sha(value)
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
        text = self._keys(text)
        known = self._maps.get("KEYLINE")
        if known:
            text = _BODY_RUN.sub(
                lambda m: (
                    self._placeholder("SECRET", m.group(0))
                    if _sha(m.group(0)) in known
                    else m.group(0)
                ),
                text,
            )
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

    def _keys(self, text: str) -> str:
        if "PRIVATE KEY-----" not in text:
            return text
        out, at = [], 0
        for start, end in _key_spans(text):
            self._learn(text[start:end])
            out += [text[at:start], self._placeholder("SECRET", text[start:end])]
            at = end
        return "".join([*out, text[at:]])

    def data(self, data: bytes) -> bytes:
        """Bytes as text where they decode; undecodable bytes pass through unchanged."""
        text = data.decode("utf-8", "surrogateescape")
        return self.output(text).encode("utf-8", "surrogateescape")

    def output(self, text: str) -> str:
        """A command's output. A line that holds a JSON document (after a prefix, as the
        probe bundle's answer follows its sentinel) is parsed and redacted as a value, so
        no secret inside it can change its structure (issue 14: a log line ending in
        ``password=ab\\"cd`` was once redacted inside the JSON text and broke the whole
        answer); the line is written back only where something in it was redacted. Every
        other line is redacted as text, the lines between two documents together (a
        private key spans lines)."""
        if "{" not in text and "[" not in text:
            return self.text(text)
        out: list[str] = []
        plain: list[str] = []
        for line in text.split("\n"):
            found = _json_in(line)
            if found is None:
                plain.append(line)
                continue
            if plain:
                out.append(self.text("\n".join(plain)))
                plain = []
            at, doc = found
            out.append(self.text(line[:at]) + self._document(line[at:], doc))
        if plain:
            out.append(self.text("\n".join(plain)))
        return "\n".join(out)

    def _document(self, raw: str, doc: object) -> str:
        self._learn_keys(doc)
        redacted, changed = self._walk(doc)
        if not changed:
            return raw
        body = raw.rstrip()
        compact = ", " not in body and ": " not in body
        return (
            json.dumps(
                redacted,
                ensure_ascii=body.isascii(),
                separators=(",", ":") if compact else None,
            )
            + raw[len(body) :]
        )

    def any(self, value: object) -> object:
        """Redact every string inside a JSON-like value (dict keys too) and give back a
        value of the same structure: the same containers, lengths and non-string leaves.
        A private key split over a list's strings (a log's lines) is found across them,
        and a line of it that stands alone anywhere in the value goes with it."""
        self._learn_keys(value)
        return self._walk(value)[0]

    def _learn(self, key: str) -> None:
        """Remember (by digest) the body lines of a private key found in clear."""
        lines = self._maps.setdefault("KEYLINE", {})
        for line in _BODY_RUN.findall(key):
            lines[_sha(line)] = ""

    def _learn_keys(self, value: object) -> None:
        if isinstance(value, str):
            if "PRIVATE KEY-----" in value:
                for start, end in _key_spans(value):
                    self._learn(value[start:end])
        elif isinstance(value, (list, tuple)):
            if any(isinstance(i, str) and "PRIVATE KEY-----" in i for i in value):
                joined = "\n".join(i for i in value if isinstance(i, str))
                for start, end in _key_spans(joined):
                    self._learn(joined[start:end])
            for item in value:
                self._learn_keys(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                self._learn_keys(key)
                self._learn_keys(item)

    def _walk(self, value: object) -> tuple[object, bool]:
        if isinstance(value, str):
            redacted = self.text(value)
            return redacted, redacted != value
        if isinstance(value, (list, tuple)):
            items, changed = self._runs_of_lines(list(value))
            out = []
            for item in items:
                new, item_changed = self._walk(item)
                out.append(new)
                changed = changed or item_changed
            return (out if isinstance(value, list) else tuple(out)), changed
        if isinstance(value, dict):
            result: dict[object, object] = {}
            changed = False
            for key, item in value.items():
                new_key, key_changed = self._walk(key) if isinstance(key, str) else (key, False)
                if key_changed:
                    new_key = _unique(str(new_key), result)
                new, item_changed = self._walk(item)
                result[new_key] = new
                changed = changed or key_changed or item_changed
            return result, changed
        return value, False

    def _runs_of_lines(self, items: list[object]) -> tuple[list[object], bool]:
        """Each run of strings in a list, read as lines: a private key found in the run joined
        by newlines is one placeholder, put in each item where a part of the key stood (so
        the list keeps its length)."""
        if not any(isinstance(i, str) and "PRIVATE KEY-----" in i for i in items):
            return items, False
        out = list(items)
        changed = False
        start = 0
        while start < len(out):
            if not isinstance(out[start], str):
                start += 1
                continue
            end = start
            while end < len(out) and isinstance(out[end], str):
                end += 1
            if end - start > 1:
                lines = [str(i) for i in out[start:end]]
                new = self._split_keys(lines)
                if new != lines:
                    out[start:end] = new
                    changed = True
            start = end
        return out, changed

    def _split_keys(self, lines: list[str]) -> list[str]:
        joined = "\n".join(lines)
        spans = [(s, e, self._placeholder("SECRET", joined[s:e])) for s, e in _key_spans(joined)]
        for s, e, _ in spans:
            self._learn(joined[s:e])
        if not spans:
            return lines
        out = []
        offset = 0
        for line in lines:
            first, last = offset, offset + len(line)
            pieces, at = [], first
            for s, e, placeholder in spans:
                if s < last and e > first:  # an empty line counts where it lies inside a key
                    pieces += [joined[at : max(s, first)], placeholder]
                    at = min(e, last)
            pieces.append(joined[at:last])
            out.append("".join(pieces))
            offset = last + 1
        return out


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()


def _key_spans(text: str) -> list[tuple[int, int]]:
    """Where private keys are in ``text``: whole ones, then ones cut short at an end."""
    spans: list[tuple[int, int]] = []
    for pattern in (_PRIVATE_KEY, _OPEN_KEY, _CUT_KEY):
        for match in pattern.finditer(text):
            start, end = match.span()
            if end > start and not any(s < end and start < e for s, e in spans):
                spans.append((start, end))
    return sorted(spans)


def _json_in(line: str) -> tuple[int, object] | None:
    """Where a JSON object or array starts in ``line`` and runs to its end, and its
    value; None for any other line."""
    starts = sorted(i for i in (line.find("{"), line.find("[")) if i >= 0)
    for at in starts:
        try:
            doc = json.loads(line[at:])
        except (ValueError, RecursionError):
            continue
        if isinstance(doc, (dict, list)):
            return at, doc
    return None


def _unique(key: str, taken: dict[object, object]) -> str:
    """A redacted key that two keys became: the second gets a number, so none is lost."""
    if key not in taken:
        return key
    n = 2
    while f"{key} #{n}" in taken:
        n += 1
    return f"{key} #{n}"
