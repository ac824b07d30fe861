"""Redaction at write time: secrets and host identities never reach a transcript.

Secret formats are found by a maintained detector (``tools.secrets_detect``, Yelp's
detect-secrets); the rules here are for what it has no plugin for (private keys' bodies,
Authorization headers, unquoted key=value pairs, a few token formats) and for what only
structure tells: a JSON key or a command-line flag that names a secret makes its value
one, whatever it looks like, and the host probe's "hostname" is learned as a host.

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

import bisect
import hashlib
import json
import re
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from tools import _redact_rules as rules
from tools import secrets_detect
from tools._json_values import collect_strings, json_in, unique_key
from tools._private_keys import BODY_RUN, key_spans, may_hold_key


def identifies_nobody(host: str) -> bool:
    """A host name or address that names no machine in particular (kept in clear)."""
    return host in rules.KEEP_IPS or host.lower() in rules.KEEP_HOSTS


class Redactor:
    """Values are remembered by their sha256, never in clear, so ``export`` can be saved
    beside a session and a resumed session keeps numbering its placeholders the same way
    without any secret reaching the disk."""

    def __init__(self, hosts: Iterable[str] = (), paths: Iterable[str] = ()) -> None:
        self._hosts = sorted(
            {h for h in hosts if h and h not in rules.KEEP_IPS}, key=len, reverse=True
        )
        # Local directories (a home, a checkout) that say whose machine this is.
        self._paths = sorted(
            {p.rstrip("/") for p in paths if len(p.rstrip("/")) > 1}, key=len, reverse=True
        )
        # Each list as one pattern, the longest name first, compiled once (text() runs on
        # every string of every answer).
        self._host_rule = names_rule(self._hosts, r"(?![\w-])")
        # A whole path: not the tail of a longer one ("/x/root"), nor the user in
        # "ssh://root@" (followed by "@"); a file:// URL or a JSON-escaped quote after it
        # still counts.
        self._path_rule = names_rule(self._paths, r"(?=$|[/\s\"'\\,:;)\]}])")
        self._maps: dict[str, dict[str, str]] = {"HOST": {}, "IP": {}, "SECRET": {}, "PATH": {}}
        self.counts: Counter[str] = Counter()
        # Per thread: family nodes redact side by side, and one's screen is not another's.
        self._local = threading.local()

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
        if "\x1b[" in text:
            text = rules.SGR.sub("", text)
        # A string that was screened with nothing found is not read by the detector again;
        # one that holds a placeholder may have been cut from a screened one (a key's line).
        screened = self._screened()
        detect = screened is None or text in screened or "[REDACTED-" in text
        if self._path_rule is not None:
            text = self._path_rule.sub(lambda m: self._placeholder("PATH", m.group(0)), text)
        text = self._keys(text)
        known = self._maps.get("KEYLINE")
        if known:
            text = BODY_RUN.sub(
                lambda m: (
                    self._placeholder("SECRET", m.group(0))
                    if _sha(m.group(0)) in known
                    else m.group(0)
                ),
                text,
            )
        if detect:
            text = self._detected(text)
        lowered = text.lower()
        if any(word in lowered for word in rules.ANY_WORD):
            for pattern, words in rules.SECRETS:
                if any(word in lowered for word in words):
                    text = pattern.sub(self._secret_pair, text)
            if any(word in lowered for word in rules.FLAG_WORDS):
                text = rules.secret_flag().sub(self._secret_pair, text)
        for pattern, words in rules.COMMAND_SECRETS:
            if any(word in text for word in words):
                text = pattern.sub(self._secret_pair, text)
        if "auth" in lowered or "cred" in lowered:
            text = rules.QUOTED_CREDENTIAL_LIST.sub(self._quoted_list, text)
            text = rules.QUOTED_CREDENTIAL.sub(self._secret_pair, text)
        if "key" in lowered:
            text = rules.QUOTED_KEY.sub(self._random_value, text)
        if any(prefix in text for prefix in rules.TOKEN_PREFIXES):
            text = rules.TOKENS.sub(lambda m: self._placeholder("SECRET", m.group(0)), text)
        if self._host_rule is not None:
            text = self._host_rule.sub(lambda m: self._placeholder("HOST", m.group(0)), text)
        # What each address needs (three dots; "::" or seven colons), counted before the
        # slower pattern runs.
        if text.count(".") >= 3:
            text = rules.IPV4.sub(self._ip, text)
        if "::" in text or text.count(":") >= 7:
            text = rules.IPV6.sub(self._ip, text)
        return text

    def _detected(self, text: str) -> str:
        """The detector's findings, each a SECRET placeholder; a placeholder already
        there is never cut into (redacting redacted text changes nothing)."""
        spans = secrets_detect.find(text)
        if not spans:
            return text
        kept = [m.span() for m in rules.PLACEHOLDER.finditer(text)] if "[REDACTED-" in text else []
        out, at = [], 0
        for start, end in spans:
            if any(s < end and start < e for s, e in kept):
                continue
            out += [text[at:start], self._placeholder("SECRET", text[start:end])]
            at = end
        return "".join([*out, text[at:]])

    def _secret_pair(self, match: re.Match[str]) -> str:
        value = match.group(match.lastindex or 0)
        if rules.PLACEHOLDER.fullmatch(value):
            return match.group(0)
        return match.group(0).replace(value, self._placeholder("SECRET", value))

    def _quoted_list(self, match: re.Match[str]) -> str:
        """``"credentials": ["user", "password"]`` in text: every quoted string in it."""
        inner = rules.QUOTED_STRING.sub(
            lambda m: m.group(1) + self._whole(m.group(2))[0] + m.group(1), match.group(2)
        )
        return match.group(1) + inner + "]"

    def _random_value(self, match: re.Match[str]) -> str:
        """A bare ``"key": "…"`` whose value is random (an API key, not a config key)."""
        if not secrets_detect.looks_random(match.group(3)):
            return match.group(0)
        return self._secret_pair(match)

    def _ip(self, match: re.Match[str]) -> str:
        value = match.group(0)
        return value if value in rules.KEEP_IPS else self._placeholder("IP", value)

    def _keys(self, text: str) -> str:
        if not may_hold_key(text):
            return text
        out, at = [], 0
        for start, end in key_spans(text):
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
        # Documents first: what they teach (a key's lines, the host's name) holds for
        # the text around them too.
        parts: list[str | tuple[str, str, object]] = []
        plain: list[str] = []
        for line in text.split("\n"):
            found = json_in(line)
            if found is None:
                plain.append(line)
                continue
            if plain:
                parts.append("\n".join(plain))
                plain = []
            at, doc = found
            self._learn_keys(doc)
            parts.append((line[:at], line[at:], doc))
        if plain:
            parts.append("\n".join(plain))
        strings: list[str] = []
        for part in parts:
            if isinstance(part, str):
                strings.append(part)
            else:
                strings.append(part[0])
                collect_strings(part[2], strings)
        with self._screen(strings):
            return "\n".join(
                self.text(part)
                if isinstance(part, str)
                else self.text(part[0]) + self._document(part[1], part[2])
                for part in parts
            )

    @contextmanager
    def _screen(self, strings: list[str]) -> Iterator[None]:
        """While redacting many strings: the detector reads them all at once, joined as
        lines (one scan of each pattern, where one per string costs more than the rest of
        redaction), and then reads again only the strings where it found something."""
        if self._screened() is not None or len(strings) < 2:
            yield
            return
        # As ``text`` will read them: without colour codes.
        strings = [rules.SGR.sub("", s) if "\x1b[" in s else s for s in strings]
        starts, at = [], 0
        for string in strings:
            starts.append(at)
            at += len(string) + 1
        hits = {
            strings[bisect.bisect_right(starts, start) - 1]
            for start, _ in secrets_detect.find("\n".join(strings))
        }
        self._local.screened = hits
        try:
            yield
        finally:
            self._local.screened = None

    def _screened(self) -> set[str] | None:
        screened: set[str] | None = getattr(self._local, "screened", None)
        return screened

    def _document(self, raw: str, doc: object) -> str:
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
        strings: list[str] = []
        collect_strings(value, strings)
        with self._screen(strings):
            return self._walk(value)[0]

    def _learn(self, key: str) -> None:
        """Remember (by digest) the body lines of a private key found in clear: lines that
        are one base64 run (a key cut short runs on to a blank line, and the log lines
        it took with it are not learned)."""
        lines = self._maps.setdefault("KEYLINE", {})
        for line in key.split("\n"):
            run = line.strip()
            if BODY_RUN.fullmatch(run):
                lines[_sha(run)] = ""

    def _learn_host(self, name: str) -> None:
        """A host name the target told (the host probe's): redacted from now on, as the
        hosts the session was given are, and its first label (the short name) with it."""
        name = name.strip().rstrip(".")
        if (
            name.lower() in rules.KEEP_HOSTS
            or name in rules.KEEP_IPS
            or not rules.HOST_NAME.fullmatch(name)
            or rules.IPV4.fullmatch(name)
        ):
            return
        # A name is redacted wherever it stands as a word, so one too short to be told
        # from ordinary words ("vm" would take /proc/sys/vm with it) is not learned as a
        # word: it is redacted where it is named as the host (``rules.names_host``).
        learned = {n for n in (name, name.split(".")[0]) if len(n) >= rules.MIN_WORD_HOST}
        learned -= set(self._hosts)
        if learned:
            self._hosts = sorted({*self._hosts, *learned}, key=len, reverse=True)
            self._host_rule = names_rule(self._hosts, r"(?![\w-])")

    def _learn_keys(self, value: object) -> None:
        if isinstance(value, str):
            if may_hold_key(value):
                for start, end in key_spans(value):
                    self._learn(value[start:end])
        elif isinstance(value, (list, tuple)):
            if any(isinstance(i, str) and may_hold_key(i) for i in value):
                joined = "\n".join(i for i in value if isinstance(i, str))
                for start, end in key_spans(joined):
                    self._learn(joined[start:end])
            for item in value:
                self._learn_keys(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                if (
                    isinstance(key, str)
                    and isinstance(item, str)
                    and key.lower() in rules.HOST_KEYS
                ):
                    self._learn_host(item)
                self._learn_keys(key)
                self._learn_keys(item)

    def _walk(self, value: object) -> tuple[object, bool]:
        if isinstance(value, str):
            redacted = self.text(value)
            return redacted, redacted != value
        if isinstance(value, (list, tuple)):
            out, changed = self._walk_items(list(value))
            return (out if isinstance(value, list) else tuple(out)), changed
        if isinstance(value, dict):
            return self._walk_dict(value)
        return value, False

    def _walk_items(self, value: list[object]) -> tuple[list[object], bool]:
        items, changed = self._runs_of_lines(value)
        out = []
        for index, item in enumerate(items):
            previous = items[index - 1] if index else None
            new: object
            if (
                isinstance(item, str)
                and not item.startswith("-")
                and isinstance(previous, str)
                and rules.is_secret_flag(previous)
            ):
                # ["--db-password", "…"]: a command line's flag and its value.
                new, item_changed = self._whole(item)
            else:
                new, item_changed = self._walk(item)
            out.append(new)
            changed = changed or item_changed
        return out, changed

    def _walk_dict(self, value: dict[object, object]) -> tuple[dict[object, object], bool]:
        result: dict[object, object] = {}
        changed = False
        for key, item in value.items():
            new_key, key_changed = self._walk(key) if isinstance(key, str) else (key, False)
            if key_changed:
                new_key = unique_key(str(new_key), result)
            new_item, item_changed = self._keyed(key, item)
            result[new_key] = new_item
            changed = changed or key_changed or item_changed
        return result, changed

    def _keyed(self, key: object, item: object) -> tuple[object, bool]:
        """A dict's value, redacted as what its key says it is."""
        if isinstance(key, str) and isinstance(item, str) and rules.names_host(key, item):
            # {"hostname": "…"}: the host's own name, whatever its length.
            return self._placeholder("HOST", item), True
        if isinstance(key, str) and isinstance(item, list) and rules.lists_credential(key, item):
            # {"credentials": [user, password]}: every string is the credential.
            parts = [self._whole(str(i)) for i in item]
            return [p for p, _ in parts], any(c for _, c in parts)
        if isinstance(key, str) and isinstance(item, str) and rules.names_secret(key, item):
            # {"password": "…"}: parsed, the value is redacted apart from its key, so the
            # key says what it is (issue 14: a metadata record's password reached the
            # ledger).
            return self._whole(item)
        return self._walk(item)

    def _whole(self, value: str) -> tuple[str, bool]:
        """A value that is a secret by its name, whatever it looks like."""
        if rules.MASKS.fullmatch(value) or rules.PLACEHOLDER.fullmatch(value):
            return value, False
        return self._placeholder("SECRET", value), True

    def _runs_of_lines(self, items: list[object]) -> tuple[list[object], bool]:
        """Each run of strings in a list, read as lines: a private key found in the run joined
        by newlines is one placeholder, put in each item where a part of the key stood (so
        the list keeps its length)."""
        if not any(isinstance(i, str) and may_hold_key(i) for i in items):
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
        spans = [(s, e, self._placeholder("SECRET", joined[s:e])) for s, e in key_spans(joined)]
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


def names_rule(names: list[str], after: str) -> re.Pattern[str] | None:
    """One pattern for ``names`` (longest first), each standing whole: not after a word
    character, a dot or a dash, and followed by what ``after`` allows."""
    if not names:
        return None
    return re.compile(rf"(?<![\w.-])(?:{'|'.join(map(re.escape, names))}){after}")


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()
