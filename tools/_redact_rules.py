"""The redactor's own rules (``tools.redact``): what the secret detector
(``tools.secrets_detect``) has no plugin for, and what only structure tells (a JSON key or
a command-line flag that names a secret, a host's name, an address)."""

from __future__ import annotations

import re
from functools import cache

from tools import secrets_detect

# A placeholder the redactor wrote: never redacted again (redaction is idempotent).
PLACEHOLDER = re.compile(r"\[REDACTED-[A-Z]+-\d+\]")

# Secret formats are the detector's (tools.secrets_detect: Yelp's detect-secrets); the
# rules below are the redactor's own, each for what the detector has no plugin for.
# Each rule runs only where one of its lower-case words is in the text: a literal test is
# a fast scan, the rule a slow one (most of a 10 MB log's redaction time, before).
SECRETS = [
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
TOKENS = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|sk-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35}"
    r"|dapi[0-9a-f]{32}(?:-\d+)?|hv[sbr]\.[A-Za-z0-9_-]{20,}|whsec_[A-Za-z0-9+/=]{20,}"
    r"|shp(?:at|ca|pa|ss)_[A-Fa-f0-9]{32}|GOCSPX-[A-Za-z0-9_-]{20,}|ya29\.[A-Za-z0-9_-]{20,}"
    r"|AGE-SECRET-KEY-1[0-9A-Z]{50,}|HRKU-[A-Za-z0-9_-]{20,}"
    r"|dp\.(?:st|ct|sa|scim|audit|pt)\.[A-Za-z0-9_.-]{20,}|ATATT[A-Za-z0-9_=-]{20,})"
)
TOKEN_PREFIXES = (
    "hf_", "gh", "github_pat_", "sk-", "AIza", "dapi", "hvs.", "hvb.", "hvr.", "whsec_",
    "shp", "GOCSPX-", "ya29.", "AGE-SECRET-KEY-", "HRKU-", "dp.", "ATATT",
)  # fmt: skip
# A colour code inside a token ("ghp_" in red, the rest plain) hides it from every rule:
# SGR sequences carry no evidence and are dropped before the rules run.
SGR = re.compile(r"\x1b\[[0-9;]*m")
# Command lines whose password is a positional part of a flag, not a flag named for it:
# curl's -u/--user user:password (a pair of numbers is a uid:gid), mysql's -pPASSWORD or
# --password=, sshpass -p, wandb login KEY, and a .netrc's "machine H login U password P"
# (or "password P" on a line of its own). The secret is each pattern's last group.
COMMAND_SECRETS = [
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
FLAG_WORDS = ("pass", "secret", "token", "key", "pwd", "contrase", "auth")
# Every gate word above: most strings hold none, and one test then skips all three rules.
ANY_WORD = ("pass", "secret", "token", "key", "pwd", "contrase", "bearer", "basic", "auth")
# A JSON key that names a host: the host probe's "hostname" (issue 14: it was never
# redacted). The name is learned, and every later sight of it becomes its placeholder.
HOST_KEYS = frozenset({"hostname", "nodename", "fqdn"})
MIN_WORD_HOST = 4  # characters a learned host name needs to be redacted as a word
HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*")
# The same keys in text that is not parsed as JSON (a log line quoting a config, a
# Python dict's repr): their quoted value, or each quoted string of their list.
QUOTED_CREDENTIAL = re.compile(
    r"(?i)([\"'](?:auth|credentials?|creds)[\"'][ \t]*:[ \t]*)([\"'])((?:\\.|(?!\2)[^\\\n]){3,})\2"
)
QUOTED_CREDENTIAL_LIST = re.compile(
    r"(?i)([\"'](?:credentials?|creds)[\"'][ \t]*:[ \t]*\[)([^\]\n]*)\]"
)
QUOTED_STRING = re.compile(r"([\"'])((?:\\.|(?!\1)[^\\\n])+)\1")
QUOTED_KEY = re.compile(
    r"(?i)([\"'](?:key|apikey)[\"'][ \t]*:[ \t]*)([\"'])([A-Za-z0-9+/=_-]{12,})\2"
)
# JSON keys whose value is a credential whatever it looks like: Docker's config.json
# ``auth`` (base64 of user:password), ``{"auth": "user:password"}``, ``credentials``
# (a string, or a list: every string in it).
CREDENTIAL_KEYS = re.compile(r"(?i)auth|credentials?|creds")
# A tokenizer's special tokens ("eos_token": "</s>" in a checkpoint's config) are named as a
# credential would be, and are its vocabulary.
_VOCABULARY = re.compile(r"(?i)(?:bos|eos|pad|unk|sep|cls|mask)_token")
# A variable name as an environment writes it: its value is checked for randomness.
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
# Values that are not a secret though a secret's name is on them: a probe's own mask.
MASKS = re.compile(r"<[\w -]*>|\**|\s*")
IPV4 = re.compile(
    r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\d.])"
)
# IPv6: the full eight groups, or a compressed form with "::". Nothing shorter, so clock
# times ("02:20:44") and MAC-like strings are left alone.
_H = r"[0-9A-Fa-f]{1,4}"
IPV6 = re.compile(
    rf"(?<![\w:])(?:(?:{_H}:){{7}}{_H}|(?:{_H}:){{1,6}}(?::{_H}){{1,6}}|(?:{_H}:){{1,7}}:|::(?:{_H}:){{0,6}}{_H})(?![\w:])"
)
# Addresses that identify nobody; leaving them keeps transcripts readable.
KEEP_IPS = {"0.0.0.0", "127.0.0.1", "255.255.255.255"}
KEEP_HOSTS = {"localhost", "localhost.localdomain", "local"}


@cache
def secret_flag() -> re.Pattern[str]:
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


def names_secret(key: str, value: str) -> bool:
    """Whether a JSON key says its value is a secret: a secret's name (not a tokenizer's
    special token), a credential's (Docker's ``auth``, ``credentials``), a bare ``key``
    on a random value (``{"wandb": {"key": …}}``), or an environment variable's name on a
    random value (the entropy plugins' measure)."""
    if _secret_name().fullmatch(key) and not key.startswith("-"):
        return _VOCABULARY.fullmatch(key) is None
    if CREDENTIAL_KEYS.fullmatch(key):
        return True
    if key.lower() in ("key", "apikey") and secrets_detect.looks_random(value):
        return True
    return _ENV_NAME.fullmatch(key) is not None and secrets_detect.looks_random(value)


def is_secret_flag(item: str) -> bool:
    return item.startswith("-") and _secret_name().fullmatch(item) is not None


def names_host(key: str, value: str) -> bool:
    """Whether a JSON key says its value is the host's own name (``{"hostname": …}``)
    and the value is one: not a name that identifies nobody (``localhost``)."""
    name = value.strip()
    return bool(
        key.lower() in HOST_KEYS
        and name
        and HOST_NAME.fullmatch(name.rstrip("."))
        and name.lower() not in KEEP_HOSTS
    )


def lists_credential(key: str, value: list[object]) -> bool:
    """Whether a JSON key names a credential held as a list of strings
    (``{"credentials": [user, password]}``)."""
    return bool(CREDENTIAL_KEYS.fullmatch(key) and value and all(isinstance(i, str) for i in value))
