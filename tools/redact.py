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
from functools import cache
from typing import Any

from tools import secrets_detect

_PLACEHOLDER = re.compile(r"\[REDACTED-[A-Z]+-\d+\]")

# Secret formats are the detector's (tools.secrets_detect: Yelp's detect-secrets); the
# rules below are the redactor's own, each for what the detector has no plugin for.

# Private keys: the detector finds where one begins; the key runs to its END line, or,
# when it was cut before its end, to the first blank line after its body or to the end of
# the text (issue 14: a key with no END line once kept its body in clear). This marker
# also takes "BEGIN ENCRYPTED PRIVATE KEY" (PKCS#8), which the plugin's list lacks.
_KEY_BEGIN = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")
_KEY_END_TEXT = r"-{4,5} ?END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)? ?-{4,5}"
_KEY_END = re.compile(_KEY_END_TEXT)
# PEM's Proc-Type:/DEK-Info:, PGP's Version:, PuTTY's Encryption:/Comment: lines, and the
# blank line after them, come before a key's body and do not end it.
_KEY_HEADER = re.compile(r"[ \t]*[A-Za-z][A-Za-z0-9-]*:[ \t]")
# A key whose start was cut off (a log's tail kept only its last lines): the END marker
# and the key lines before it. A key line is base64 (16 or more characters), a PEM header
# or blank; the line that touches the marker may be shorter.
_B64 = r"[A-Za-z0-9+/]"
_KEY_LINE = rf"[ \t]*(?:{_B64}{{16,}}={{0,2}}|(?:Proc-Type|DEK-Info|Comment):[^\r\n]*)?[ \t]*\r?"
_SHORT_LINE = rf"[ \t]*{_B64}+={{0,2}}[ \t]*\r?"
_CUT_KEY = re.compile(
    rf"^(?:{_KEY_LINE}\n){{0,400}}(?:{_SHORT_LINE}\n)?[ \t]*{_KEY_END_TEXT}", re.MULTILINE
)
# One line of a key's body, wherever it stands alone (a parser took it for an exception's
# name): replaced when it is a line of a key found in the same value or before.
_BODY_RUN = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=])")
# Each rule runs only where one of its lower-case words is in the text: a literal test is
# a fast scan, the rule a slow one (most of a 10 MB log's redaction time, before).
_SECRETS = [
    # An Authorization header's credentials: the detector has no header plugin.
    (re.compile(r"(?i)\b(bearer[ \t]+|basic[ \t]+)([A-Za-z0-9._~+/=-]{8,})"), ("bearer", "basic")),
    # key=value / key: value pairs whose key *ends* with a secret word ("HF_TOKEN=…",
    # "password: …", JSON "api_key": "…"), so "tokens_per_sec: 12800" stays; values that
    # are plain numbers or the auth scheme word are left alone. The detector's keyword
    # plugin wants the value quoted (outside a config file, where it takes the value to
    # the end of the line), and "token" and "authorization" are not among its words. The
    # pair is on one line: "password:" ending a line does not make the next line's first
    # word a password.
    (
        re.compile(
            r"(?i)(\b[A-Za-z0-9_-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key"
            r"|authorization)['\"]?[ \t]*[=:][ \t]*)(['\"]?)(?!bearer\b|basic\b|[\d.]+\b)"
            # A backslash escapes the character after it (ab\"cd is one value), in a Python
            # message as in JSON text.
            r"((?:\\.|[^\s'\",}\\]){4,})\2"
        ),
        ("passw", "secret", "token", "key", "authorization"),
    ),
]
# Token formats no plugin knows: Hugging Face (hf_), GitHub's fine-grained tokens
# (github_pat_; the plugin knows the classic ghp_… form only, and only whole: 36
# characters, where a clipped one is still a credential), OpenAI's current keys (sk-…;
# the plugin knows only legacy ones, with "T3BlbkFJ" inside), Google API keys (AIza…).
# And each provider's documented prefix the plugins lack: Databricks (dapi + 32 hex),
# HashiCorp Vault (hvs./hvb./hvr.), Stripe webhook secrets (whsec_), Shopify
# (shpat_/shpca_/shppa_/shpss_), Google OAuth client secrets (GOCSPX-) and access tokens
# (ya29.), age identities (AGE-SECRET-KEY-1), Heroku (HRKU-), Doppler (dp.st./dp.ct./…),
# Atlassian API tokens (ATATT).
_TOKENS = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|sk-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35}"
    r"|dapi[0-9a-f]{32}(?:-\d+)?|hv[sbr]\.[A-Za-z0-9_-]{20,}|whsec_[A-Za-z0-9+/=]{20,}"
    r"|shp(?:at|ca|pa|ss)_[A-Fa-f0-9]{32}|GOCSPX-[A-Za-z0-9_-]{20,}|ya29\.[A-Za-z0-9_-]{20,}"
    r"|AGE-SECRET-KEY-1[0-9A-Z]{50,}|HRKU-[A-Za-z0-9_-]{20,}"
    r"|dp\.(?:st|ct|sa|scim|audit|pt)\.[A-Za-z0-9_.-]{20,}|ATATT[A-Za-z0-9_=-]{20,})"
)
_TOKEN_PREFIXES = (
    "hf_", "gh", "github_pat_", "sk-", "AIza", "dapi", "hvs.", "hvb.", "hvr.", "whsec_",
    "shp", "GOCSPX-", "ya29.", "AGE-SECRET-KEY-", "HRKU-", "dp.", "ATATT",
)  # fmt: skip
# A colour code inside a token ("ghp_" in red, the rest plain) hides it from every rule:
# SGR sequences carry no evidence and are dropped before the rules run.
_SGR = re.compile(r"\x1b\[[0-9;]*m")
# Command lines whose password is a positional part of a flag, not a flag named for it:
# curl's -u/--user user:password (a pair of numbers is a uid:gid), mysql's -pPASSWORD or
# --password=, sshpass -p, wandb login KEY, and a .netrc's "machine H login U password P"
# (or "password P" on a line of its own). The secret is each pattern's last group.
_COMMAND_SECRETS = [
    (
        re.compile(r"(?<![\w-])(?:-u|--user)(?:[ \t]+|=)?['\"]?[^\s:'\"]+:(?!\d+\b)([^\s'\"]{3,})"),
        ("-u", "--user"),
    ),
    (
        re.compile(
            r"\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n]*?"
            r"(?<![\w-])(?:-p|--password=)([^\s'\"]+)"
        ),
        ("mysql", "mariadb"),
    ),
    (re.compile(r"\bsshpass\b[^\n]*?(?<![\w-])-p[ \t]*([^\s'\"]+)"), ("sshpass",)),
    (
        re.compile(r"\bwandb[ \t]+login\b(?:[ \t]+--?[\w-]+)*[ \t]+([^\s-][^\s'\"]{7,})"),
        ("wandb",),
    ),
    (
        re.compile(
            r"(?m)(?:\b(?:machine|login)[ \t]+\S+[^\n]*?[ \t]|^[ \t]*)password[ \t]+([^\s=:]\S*)"
        ),
        ("password",),
    ),
]
# The words that say a JSON key's or a command-line flag's value is a secret: the key=value
# rule's and the detector's keyword plugin's (loaded with it: see _secret_name).
_SECRET_WORDS = r"password|passwd|secret|token|api[_-]?key|access[_-]?key|authorization"
# Each of those words holds one of these (the detector's too: "db_pass", "pwd", …).
_FLAG_WORDS = ("pass", "secret", "token", "key", "pwd", "contrase")
# Every gate word above: most strings hold none, and one test then skips all three rules.
_ANY_WORD = ("pass", "secret", "token", "key", "pwd", "contrase", "bearer", "basic", "auth")
# A JSON key that names a host: the host probe's "hostname" (issue 14: it was never
# redacted). The name is learned, and every later sight of it becomes its placeholder.
_HOST_KEYS = frozenset({"hostname", "nodename", "fqdn"})
_MIN_WORD_HOST = 4  # characters a learned host name needs to be redacted as a word
_HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*")
# The same keys in text that is not parsed as JSON (a log line quoting a config, a
# Python dict's repr): their quoted value, or each quoted string of their list.
_QUOTED_CREDENTIAL = re.compile(
    r"(?i)([\"'](?:auth|credentials?|creds)[\"'][ \t]*:[ \t]*)([\"'])((?:\\.|(?!\2)[^\\\n]){3,})\2"
)
_QUOTED_CREDENTIAL_LIST = re.compile(
    r"(?i)([\"'](?:credentials?|creds)[\"'][ \t]*:[ \t]*\[)([^\]\n]*)\]"
)
_QUOTED_STRING = re.compile(r"([\"'])((?:\\.|(?!\1)[^\\\n])+)\1")
_QUOTED_KEY = re.compile(
    r"(?i)([\"'](?:key|apikey)[\"'][ \t]*:[ \t]*)([\"'])([A-Za-z0-9+/=_-]{12,})\2"
)
# JSON keys whose value is a credential whatever it looks like: Docker's config.json
# ``auth`` (base64 of user:password), ``{"auth": "user:password"}``, ``credentials``
# (a string, or a list: every string in it).
_CREDENTIAL_KEYS = re.compile(r"(?i)auth|credentials?|creds")
# A tokenizer's special tokens ("eos_token": "</s>" in a checkpoint's config) are named as a
# credential would be, and are its vocabulary.
_VOCABULARY = re.compile(r"(?i)(?:bos|eos|pad|unk|sep|cls|mask)_token")
# A variable name as an environment writes it: its value is checked for randomness.
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
# Values that are not a secret though a secret's name is on them: a probe's own mask.
_MASKS = re.compile(r"<[\w -]*>|\**|\s*")
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
_KEEP_HOSTS = {"localhost", "localhost.localdomain", "local"}


def identifies_nobody(host: str) -> bool:
    """A host name or address that names no machine in particular (kept in clear)."""
    return host in _KEEP_IPS or host.lower() in _KEEP_HOSTS


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
            text = _SGR.sub("", text)
        # A string that was screened with nothing found is not read by the detector again;
        # one that holds a placeholder may have been cut from a screened one (a key's line).
        screened = self._screened()
        detect = screened is None or text in screened or "[REDACTED-" in text
        if self._path_rule is not None:
            text = self._path_rule.sub(lambda m: self._placeholder("PATH", m.group(0)), text)
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
        if detect:
            text = self._detected(text)
        lowered = text.lower()
        if any(word in lowered for word in _ANY_WORD):
            for pattern, words in _SECRETS:
                if any(word in lowered for word in words):
                    text = pattern.sub(self._secret_pair, text)
            if any(word in lowered for word in _FLAG_WORDS):
                text = _secret_flag().sub(self._secret_pair, text)
        for pattern, words in _COMMAND_SECRETS:
            if any(word in text for word in words):
                text = pattern.sub(self._secret_pair, text)
        if "auth" in lowered or "cred" in lowered:
            text = _QUOTED_CREDENTIAL_LIST.sub(self._quoted_list, text)
            text = _QUOTED_CREDENTIAL.sub(self._secret_pair, text)
        if "key" in lowered:
            text = _QUOTED_KEY.sub(self._random_value, text)
        if any(prefix in text for prefix in _TOKEN_PREFIXES):
            text = _TOKENS.sub(lambda m: self._placeholder("SECRET", m.group(0)), text)
        if self._host_rule is not None:
            text = self._host_rule.sub(lambda m: self._placeholder("HOST", m.group(0)), text)
        # What each address needs (three dots; "::" or seven colons), counted before the
        # slower pattern runs.
        if text.count(".") >= 3:
            text = _IPV4.sub(self._ip, text)
        if "::" in text or text.count(":") >= 7:
            text = _IPV6.sub(self._ip, text)
        return text

    def _detected(self, text: str) -> str:
        """The detector's findings, each a SECRET placeholder; a placeholder already
        there is never cut into (redacting redacted text changes nothing)."""
        spans = secrets_detect.find(text)
        if not spans:
            return text
        kept = [m.span() for m in _PLACEHOLDER.finditer(text)] if "[REDACTED-" in text else []
        out, at = [], 0
        for start, end in spans:
            if any(s < end and start < e for s, e in kept):
                continue
            out += [text[at:start], self._placeholder("SECRET", text[start:end])]
            at = end
        return "".join([*out, text[at:]])

    def _secret_pair(self, match: re.Match[str]) -> str:
        value = match.group(match.lastindex or 0)
        if _PLACEHOLDER.fullmatch(value):
            return match.group(0)
        return match.group(0).replace(value, self._placeholder("SECRET", value))

    def _quoted_list(self, match: re.Match[str]) -> str:
        """``"credentials": ["user", "password"]`` in text: every quoted string in it."""
        inner = _QUOTED_STRING.sub(
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
        return value if value in _KEEP_IPS else self._placeholder("IP", value)

    def _keys(self, text: str) -> str:
        if not _may_hold_key(text):
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
        # Documents first: what they teach (a key's lines, the host's name) holds for
        # the text around them too.
        parts: list[str | tuple[str, str, object]] = []
        plain: list[str] = []
        for line in text.split("\n"):
            found = _json_in(line)
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
                _collect(part[2], strings)
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
        strings = [_SGR.sub("", s) if "\x1b[" in s else s for s in strings]
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
        _collect(value, strings)
        with self._screen(strings):
            return self._walk(value)[0]

    def _learn(self, key: str) -> None:
        """Remember (by digest) the body lines of a private key found in clear: lines that
        are one base64 run (a key cut short runs on to a blank line, and the log lines
        it took with it are not learned)."""
        lines = self._maps.setdefault("KEYLINE", {})
        for line in key.split("\n"):
            run = line.strip()
            if _BODY_RUN.fullmatch(run):
                lines[_sha(run)] = ""

    def _learn_host(self, name: str) -> None:
        """A host name the target told (the host probe's): redacted from now on, as the
        hosts the session was given are, and its first label (the short name) with it."""
        name = name.strip().rstrip(".")
        if (
            name.lower() in _KEEP_HOSTS
            or name in _KEEP_IPS
            or not _HOST_NAME.fullmatch(name)
            or _IPV4.fullmatch(name)
        ):
            return
        # A name is redacted wherever it stands as a word, so one too short to be told
        # from ordinary words ("vm" would take /proc/sys/vm with it) is not learned as a
        # word: it is redacted where it is named as the host (``_walk``'s host keys).
        learned = {n for n in (name, name.split(".")[0]) if len(n) >= _MIN_WORD_HOST}
        learned -= set(self._hosts)
        if learned:
            self._hosts = sorted({*self._hosts, *learned}, key=len, reverse=True)
            self._host_rule = names_rule(self._hosts, r"(?![\w-])")

    def _learn_keys(self, value: object) -> None:
        if isinstance(value, str):
            if _may_hold_key(value):
                for start, end in _key_spans(value):
                    self._learn(value[start:end])
        elif isinstance(value, (list, tuple)):
            if any(isinstance(i, str) and _may_hold_key(i) for i in value):
                joined = "\n".join(i for i in value if isinstance(i, str))
                for start, end in _key_spans(joined):
                    self._learn(joined[start:end])
            for item in value:
                self._learn_keys(item)
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and isinstance(item, str) and key.lower() in _HOST_KEYS:
                    self._learn_host(item)
                self._learn_keys(key)
                self._learn_keys(item)

    def _walk(self, value: object) -> tuple[object, bool]:
        if isinstance(value, str):
            redacted = self.text(value)
            return redacted, redacted != value
        if isinstance(value, (list, tuple)):
            items, changed = self._runs_of_lines(list(value))
            out = []
            for index, item in enumerate(items):
                previous = items[index - 1] if index else None
                new: object
                if (
                    isinstance(item, str)
                    and not item.startswith("-")
                    and isinstance(previous, str)
                    and _is_secret_flag(previous)
                ):
                    # ["--db-password", "…"]: a command line's flag and its value.
                    new, item_changed = self._whole(item)
                else:
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
                new_item: object
                if (
                    isinstance(key, str)
                    and isinstance(item, str)
                    and key.lower() in _HOST_KEYS
                    and item.strip()
                    and _HOST_NAME.fullmatch(item.strip().rstrip("."))
                    and item.strip().lower() not in _KEEP_HOSTS
                ):
                    # {"hostname": "…"}: the host's own name, whatever its length.
                    new_item, item_changed = self._placeholder("HOST", item), True
                elif (
                    isinstance(key, str)
                    and isinstance(item, list)
                    and _CREDENTIAL_KEYS.fullmatch(key)
                    and item
                    and all(isinstance(i, str) for i in item)
                ):
                    # {"credentials": [user, password]}: every string is the credential.
                    parts = [self._whole(str(i)) for i in item]
                    new_item, item_changed = [p for p, _ in parts], any(c for _, c in parts)
                elif isinstance(key, str) and isinstance(item, str) and _names_secret(key, item):
                    # {"password": "…"}: parsed, the value is redacted apart from its
                    # key, so the key says what it is (issue 14: a metadata record's
                    # password reached the ledger).
                    new_item, item_changed = self._whole(item)
                else:
                    new_item, item_changed = self._walk(item)
                result[new_key] = new_item
                changed = changed or key_changed or item_changed
            return result, changed
        return value, False

    def _whole(self, value: str) -> tuple[str, bool]:
        """A value that is a secret by its name, whatever it looks like."""
        if _MASKS.fullmatch(value) or _PLACEHOLDER.fullmatch(value):
            return value, False
        return self._placeholder("SECRET", value), True

    def _runs_of_lines(self, items: list[object]) -> tuple[list[object], bool]:
        """Each run of strings in a list, read as lines: a private key found in the run joined
        by newlines is one placeholder, put in each item where a part of the key stood (so
        the list keeps its length)."""
        if not any(isinstance(i, str) and _may_hold_key(i) for i in items):
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


def names_rule(names: list[str], after: str) -> re.Pattern[str] | None:
    """One pattern for ``names`` (longest first), each standing whole: not after a word
    character, a dot or a dash, and followed by what ``after`` allows."""
    if not names:
        return None
    return re.compile(rf"(?<![\w.-])(?:{'|'.join(map(re.escape, names))}){after}")


def _collect(value: object, out: list[str]) -> None:
    """Every string in a JSON-like value, dict keys too."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _collect(item, out)
    elif isinstance(value, dict):
        for key, item in value.items():
            _collect(key, out)
            _collect(item, out)


def _sha(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()


def _may_hold_key(text: str) -> bool:
    return "PRIVATE KEY" in text or "PuTTY-User-Key-File" in text


def _key_spans(text: str) -> list[tuple[int, int]]:
    """Where private keys are in ``text``: each from its start to its end (``_key_end``),
    then ones whose start was cut off."""
    starts = {*secrets_detect.key_starts(text), *(m.start() for m in _KEY_BEGIN.finditer(text))}
    spans: list[tuple[int, int]] = []
    for start in sorted(starts):
        if not spans or start >= spans[-1][1]:
            spans.append((start, _key_end(text, start)))
    for match in _CUT_KEY.finditer(text):
        start, end = match.span()
        if end > start and not any(s < end and start < e for s, e in spans):
            spans.append((start, end))
    return sorted(spans)


def _key_end(text: str, start: int) -> int:
    """Where the key that begins at ``start`` ends: after its END marker; for a key cut
    before it, at the first blank line after its body (not the one after its headers),
    else at the end of the text."""
    at, body = start, False
    while True:
        newline = text.find("\n", at)
        stop = len(text) if newline < 0 else newline
        line = text[at:stop]
        end = _KEY_END.search(line)
        if end is not None:
            return at + end.end()
        if not line.strip():
            if body:
                return at - 1
        elif at == start:
            body = _BODY_RUN.search(line) is not None  # the body on the marker's line
        elif not _KEY_HEADER.match(line):
            body = True
        if newline < 0:
            return len(text)
        at = newline + 1


@cache
def _secret_flag() -> re.Pattern[str]:
    """A command-line flag and its value as a shell script or `ps` writes them
    ("--db-password …"): no plugin reads a command line."""
    return re.compile(
        rf"(?i)((?<![\w-])--?[A-Za-z0-9_-]*(?:{_words()})[ \t]+)(['\"]?)(?!-)"
        r"((?:\\.|[^\s'\"\\]){4,})\2"
    )


@cache
def _words() -> str:
    return "|".join([_SECRET_WORDS, *map(re.escape, secrets_detect.key_words())])


@cache
def _secret_name() -> re.Pattern[str]:
    """A JSON key or a flag that names a secret: it *ends* with one of the words
    ("db_password", "--hf-token"; not "tokens_per_sec")."""
    return re.compile(rf"(?i)(?:--?)?[\w.-]*(?:{_words()})")


def _names_secret(key: str, value: str) -> bool:
    """Whether a JSON key says its value is a secret: a secret's name (not a tokenizer's
    special token), a credential's (Docker's ``auth``, ``credentials``), a bare ``key``
    on a random value (``{"wandb": {"key": …}}``), or an environment variable's name on a
    random value (the entropy plugins' measure)."""
    if _secret_name().fullmatch(key) and not key.startswith("-"):
        return _VOCABULARY.fullmatch(key) is None
    if _CREDENTIAL_KEYS.fullmatch(key):
        return True
    if key.lower() in ("key", "apikey") and secrets_detect.looks_random(value):
        return True
    return _ENV_NAME.fullmatch(key) is not None and secrets_detect.looks_random(value)


def _is_secret_flag(item: str) -> bool:
    return item.startswith("-") and _secret_name().fullmatch(item) is not None


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
