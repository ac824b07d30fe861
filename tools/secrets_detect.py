"""Where secrets stand in text, found by Yelp's detect-secrets.

Why this detector: a hand list of key formats drifts as providers add formats; Yelp
maintains detect-secrets (a pre-commit hook in wide use), each of its plugins is one
provider's documented format (AWS, Azure storage, Stripe, GitHub, GitLab, Slack, private
keys, JWTs, basic-auth URLs, …), and its keyword plugin knows the names that credentials
are assigned to. Only its matching is used, on text already in memory: its plugins'
patterns say where a secret stands, the plugin's ``analyze_string`` confirms it (the JWT
plugin decodes the token, for one). Nothing is ever verified against a provider (that
would send the secret over the network), no file is scanned and its settings are unused.

Speed: redaction reads every command's output, logs of megabytes, and nearly all of it
holds no secret; reading it line by line the plugins' way would take minutes. A pattern
runs only on a text that holds the plain characters every one of its matches holds (a
substring test), and is then searched over the whole text (one scan in C); only the
lines where it matched are analysed as the plugin analyses a line. The keyword plugin's
lines are found by its key words the same way. A short text is screened by all patterns
joined into one (a single call), and the redactor reads the strings of one answer as
one text before it reads any alone. Measured here: ``find`` reads a 10 MB training log
in about 0.6 s.

Start-up: the patterns and key words are kept in the state directory between runs
(``Screen``), and they run from there: detect-secrets is imported only for a text one of
its patterns or key words matches, where its plugin must confirm the match. A command
whose texts none matches (most command output) never imports it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from tools._secret_spans import MIN_LENGTH, lines_of, merged, secret_in

# Plugins left out, and why:
# - IPPublicDetector: the redactor has its own address rules, with IP placeholders.
# - Artifactory, Cloudant, IBM Cloud IAM, IBM COS HMAC, SoftLayer: their patterns are
#   case-insensitive keyword alternations tried at every position, 1 to 2.5 s each on a
#   10 MB log (more than all of the rest of redaction); none is a service of a training
#   host, and their "key = value" forms are what the keyword plugin and the redactor's
#   key=value rule already take. Artifactory's password form (``AP[0-9A-F]…`` between
#   spaces) also takes ordinary upper-case words.
REGEX_PLUGINS = (
    ("aws", "AWSKeyDetector"),
    ("azure_storage_key", "AzureStorageKeyDetector"),
    ("basic_auth", "BasicAuthDetector"),
    ("discord", "DiscordBotTokenDetector"),
    ("github_token", "GitHubTokenDetector"),
    ("gitlab_token", "GitLabTokenDetector"),
    ("jwt", "JwtTokenDetector"),
    ("mailchimp", "MailchimpDetector"),
    ("npm", "NpmDetector"),
    ("openai", "OpenAIDetector"),
    ("pypi_token", "PypiTokenDetector"),
    ("sendgrid", "SendGridDetector"),
    ("slack", "SlackDetector"),
    ("square_oauth", "SquareOAuthDetector"),
    ("stripe", "StripeDetector"),
    ("telegram_token", "TelegramBotTokenDetector"),
    ("twilio", "TwilioKeyDetector"),
)
# Texts up to this long are screened by the joined pattern; longer ones pattern by pattern
# (one alternation of ~40 branches is slower per character than ~40 literal-led scans).
_JOINED_UP_TO = 4096
# An environment assignment (NAME=value, export NAME="value"): its value is checked for
# randomness, as the entropy plugins check a string; values are found from the "=" (a
# literal, so the scan is quick) and the name is checked behind it.
_ASSIGNED = re.compile(r"=([\"']?)([A-Za-z0-9+/=_\\-]{12,})\1(?=[\s;&|)]|\Z)")
_NAME_BEFORE = re.compile(r"(?:\A|(?<=[\s;&|(]))(?:export\s+)?[A-Za-z_][A-Za-z0-9_]*\Z")


def find(text: str) -> list[tuple[int, int]]:
    """The spans of the secrets the detector's formats find in ``text``, sorted and
    merged where they touch. Private keys are not among them (see ``key_starts``)."""
    if len(text) < MIN_LENGTH:
        return []
    spans: list[tuple[int, int]] = []
    if len(text) > _JOINED_UP_TO or _joined().search(text) is not None:
        lowered = text.lower()
        matched = _screen().plugins_matching(text, lowered)
        if matched:
            for plugin in _regex_plugins():
                if type(plugin).__name__ in matched:
                    spans += _regex_spans(plugin, text, lowered)
        spans += _keyword_spans(text, lowered)
    if "=" in text:
        spans += _assigned_spans(text)
    return merged(spans)


def looks_random(value: str) -> bool:
    """Whether ``value``, standing alone, is a random string by the entropy plugins'
    measure: all of it in a plugin's alphabet, its Shannon entropy over the limit (4.5
    bits a character for base64, 3.0 for hex). A value that starts with "/" is a path."""
    if len(value) < 12 or value.startswith("/"):
        return False
    for plugin, alphabet in _entropy_plugins():
        if set(value) <= alphabet and (
            plugin.calculate_shannon_entropy(value) > plugin.entropy_limit
        ):
            return True
    return False


_DASHES_BEFORE = re.compile(r"-{4,5} ?\Z")


def key_starts(text: str) -> list[int]:
    """Where private keys begin in ``text``: the private-key plugin's markers (the first
    line of a PEM, OpenSSH, PGP, SSH2 or PuTTY key), each from the dashes before it."""
    if "PRIVATE KEY" not in text and "PuTTY-User-Key-File" not in text:
        return []
    starts = []
    for pattern in _private_key_plugin().denylist:
        for match in pattern.finditer(text):
            dashes = _DASHES_BEFORE.search(text, max(0, match.start() - 6), match.start())
            starts.append(dashes.start() if dashes else match.start())
    return sorted(set(starts))


def enabled() -> list[str]:
    """The plugins used, by class name (the tests prove each one's formats)."""
    entropy = [type(plugin).__name__ for plugin, _ in _entropy_plugins()]
    return [name for _, name in REGEX_PLUGINS] + ["PrivateKeyDetector", "KeywordDetector", *entropy]


# -- the plugins' way of reading a line ----------------------------------------------


def _regex_spans(plugin: Any, text: str, lowered: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for pattern in plugin.denylist:
        literal = _literal(pattern)
        if literal and literal not in (lowered if pattern.flags & re.I else text):
            continue
        if pattern.search(text) is None:
            continue
        for start, line in lines_of(text, pattern):
            confirmed = set(plugin.analyze_string(line))
            for match in pattern.finditer(line):
                spans += [(start + s, start + e) for s, e in secret_in(match, line, confirmed)]
    return spans


def _keyword_spans(text: str, lowered: str) -> list[tuple[int, int]]:
    """The keyword plugin's findings (``password = "…"``, ``"api_key": "…"``…), its
    quoted forms, on the lines that hold one of its key words. Its ``analyze_string``
    stops at the first match of each pattern; every match is taken here."""
    words = key_words()
    if not any(word in lowered for word in words):
        return []
    from detect_secrets.plugins import keyword

    spans: list[tuple[int, int]] = []
    at = 0
    for line in text.split("\n"):
        line_lowered = line.lower()
        if any(word in line_lowered for word in words):
            for pattern, group in keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items():
                spans += [(at + m.start(group), at + m.end(group)) for m in pattern.finditer(line)]
        at += len(line) + 1
    return spans


def _assigned_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    for match in _ASSIGNED.finditer(text):
        before = text[max(0, match.start() - 128) : match.start()]
        if _NAME_BEFORE.search(before) and looks_random(match.group(2)):
            spans.append(match.span(2))
    return spans


# -- the plugins, loaded on first use ------------------------------------------------
# detect-secrets imports requests and its own filters (about 0.3 s): a command that
# redacts nothing (--help, --version) does not pay for it.


def _plugin(module: str, name: str) -> Any:
    import importlib

    return getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)()


@cache
def _private_key_plugin() -> Any:
    return _plugin("private_key", "PrivateKeyDetector")


@cache
def _regex_plugins() -> tuple[Any, ...]:
    return tuple(_plugin(module, name) for module, name in REGEX_PLUGINS)


@cache
def _entropy_plugins() -> tuple[tuple[Any, frozenset[str]], ...]:
    """The entropy plugins, each with its alphabet as a set."""
    from detect_secrets.plugins.high_entropy_strings import (
        Base64HighEntropyString,
        HexHighEntropyString,
    )

    return tuple(
        (plugin, frozenset(plugin.charset))
        for plugin in (Base64HighEntropyString(), HexHighEntropyString())
    )


def key_words() -> tuple[str, ...]:
    """The keyword plugin's key words as plain strings: its list writes an optional
    underscore as ``_?`` (``api_?key``), and nothing else of a pattern."""
    return _screen().key_words


def _live_key_words() -> tuple[str, ...]:
    from detect_secrets.plugins import keyword

    words = set()
    for item in keyword.DENYLIST:
        for word in (item.replace("_?", "_"), item.replace("_?", "")):
            if re.escape(word) != word:
                raise RuntimeError(f"detect-secrets key word {item!r} is a pattern now")
            words.add(word)
    return tuple(sorted(words))


@cache
def _literal(pattern: re.Pattern[str]) -> str:
    """The longest run of plain characters at the top level of ``pattern``: every match
    holds it, so a text without it is not scanned (a substring test is many times faster
    than a scan that tries the pattern at each character: Mailchimp's, which starts with a
    character class, cost a third of a second on 10 MB). Read with the re module's own
    parser; without it (a later Python), no run, and the pattern scans as before."""
    import importlib

    try:
        _parser = importlib.import_module("re._parser")
    except ImportError:  # a Python whose re keeps its parser elsewhere
        return ""
    best, run = "", ""
    for op, arg in _parser.parse(pattern.pattern, pattern.flags):
        if op is _parser.LITERAL:
            run += chr(arg)
        else:
            best, run = max(best, run, key=len), ""
    best = max(best, run, key=len)
    return best.lower() if pattern.flags & re.I else best


@cache
def _joined() -> re.Pattern[str]:
    """Every enabled pattern and the key words as one pattern: a screen for short texts
    (it says whether any might match; the patterns then run one by one)."""
    screen = _screen()
    parts = []
    for _, pattern, flags, _ in screen.patterns:
        letters = "".join(f for f, bit in (("i", re.I), ("x", re.X)) if flags & bit)
        parts.append(f"(?{letters}:{pattern})" if letters else f"(?:{pattern})")
    parts.append("(?i:" + "|".join(map(re.escape, screen.key_words)) + ")")
    return re.compile("|".join(parts))


# -- the screen, kept between runs ----------------------------------------------------
# Deciding that a text holds none of the formats needs only the plugins' patterns and key
# words, not the plugins: the screen is exactly those (so it misses nothing a plugin would
# find: a plugin finds nothing where none of its patterns matches), read from the
# installed detect-secrets once and kept in the state directory. A command whose texts
# match no pattern (most command output) never imports detect-secrets (0.25 s with
# requests, which its plugins import for a verification never used here). The plugins
# load, as before, for a text a pattern matches, and for the entropy check.

_SCREEN_FORMAT = 2
_SCREEN_MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class Screen:
    """The enabled plugins' patterns (the plugin's class name, the pattern's text and
    flags, the literal every match holds) and the keyword plugin's key words."""

    patterns: tuple[tuple[str, str, int, str], ...]
    key_words: tuple[str, ...]

    def plugins_matching(self, text: str, lowered: str) -> set[str]:
        """The plugins a pattern of which matches somewhere in ``text``: the only ones
        whose ``analyze_string`` can find anything (``_regex_spans`` skips the others).
        Each pattern runs only where its literal is (a substring test)."""
        matched: set[str] = set()
        for plugin, pattern, flags, literal in self.patterns:
            if plugin in matched:
                continue
            if literal and literal not in (lowered if flags & re.I else text):
                continue
            if re.compile(pattern, flags).search(text) is not None:
                matched.add(plugin)
        return matched

    def document(self, key: str) -> dict[str, Any]:
        return {"key": key, "patterns": self.patterns, "key_words": self.key_words}

    @classmethod
    def from_document(cls, doc: Any, key: str) -> Screen | None:
        """The screen ``doc`` holds, if it was kept for ``key`` and is well formed."""
        if not isinstance(doc, dict) or doc.get("key") != key:
            return None
        patterns, words = doc.get("patterns"), doc.get("key_words")
        if not isinstance(patterns, list) or not isinstance(words, list) or not words:
            return None
        if not all(isinstance(w, str) and w for w in words):
            return None
        shaped = []
        for item in patterns:
            if not (isinstance(item, list) and len(item) == 4):
                return None
            plugin, pattern, flags, literal = item
            if not (
                isinstance(plugin, str)
                and isinstance(pattern, str)
                and type(flags) is int
                and isinstance(literal, str)
            ):
                return None
            shaped.append((plugin, pattern, flags, literal))
        if not shaped:
            return None
        return cls(tuple(shaped), tuple(words))


def live_screen() -> Screen:
    """The screen read from the installed detect-secrets (imports it)."""
    patterns = tuple(
        (type(plugin).__name__, pattern.pattern, pattern.flags, _literal(pattern))
        for plugin in _regex_plugins()
        for pattern in plugin.denylist
    )
    return Screen(patterns, _live_key_words())


def screen_key() -> str | None:
    """What the kept screen must have been read from: this module's plugin list, the
    Python (the literals come from its regex parser) and each plugin file's size and
    mtime (an upgrade or an edit rewrites them); None where detect-secrets' files cannot
    be found without importing it."""
    import hashlib
    import importlib.util
    import os
    import sys

    try:
        spec = importlib.util.find_spec("detect_secrets")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    root = os.path.dirname(spec.origin)
    names = [f"{module}.py" for module, _ in REGEX_PLUGINS] + ["keyword.py", "base.py"]
    stats = []
    for name in names:
        try:
            st = os.stat(os.path.join(root, "plugins", name))
        except OSError:
            return None
        stats.append((name, st.st_size, st.st_mtime_ns))
    mark = [_SCREEN_FORMAT, sys.version_info[:2], REGEX_PLUGINS, root, stats]
    return hashlib.sha256(json.dumps(mark).encode()).hexdigest()


def _screen_path() -> str:
    import os

    from tools.statedir import app_state_dir

    return os.path.join(app_state_dir(), "cache", "secret-screen.json")


def _read_kept(path: str, key: str) -> Screen | None:
    """The kept screen, if it is a regular file of this user that no one else may
    write (it decides what redaction skips), small, well formed and read for ``key``."""
    import os
    import stat

    from tools.probes._common import OPEN_FLAGS

    try:
        fd = os.open(path, OPEN_FLAGS | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid != os.geteuid()
            or st.st_mode & 0o022
            or st.st_size > _SCREEN_MAX_BYTES
        ):
            return None
        raw = os.read(fd, _SCREEN_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return Screen.from_document(json.loads(raw), key)
    except (ValueError, RecursionError):
        return None


def _keep(path: str, key: str, screen: Screen) -> None:
    """Keep ``screen`` for the next run; a state directory that cannot take it only
    costs the next run the import."""
    import os
    import tempfile

    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".secret-screen-", dir=directory)
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(screen.document(key), fh)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass


@cache
def _screen() -> Screen:
    key = screen_key()
    path = _screen_path()
    if key is not None:
        kept = _read_kept(path, key)
        if kept is not None:
            return kept
    screen = live_screen()
    if key is not None:
        _keep(path, key, screen)
    return screen
