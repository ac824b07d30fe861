"""The redactor's own rules (tools._redact_rules): the patterns for what the secret detector
has no plugin for (an Authorization header, key=value pairs, provider token prefixes,
passwords on command lines, addresses) and the judgements on a JSON key or a flag that
names a secret, a host or a credential list. Each rule is held here to the text it takes
and the text it must leave; the redactor's use of them is specified in test_redact."""

from __future__ import annotations

import re

import pytest

from tools import _redact_rules as rules

# 32 distinct base64 characters, each once: 5.0 bits a character, random by the
# entropy plugins' measure (over 4.5).
RANDOM_32 = "ABCDEFGHIJKLMNOPabcdefghijklmnop"


def _secret(pattern: re.Pattern[str], text: str) -> list[str]:
    """The secret part (the last group) of each match of ``pattern`` in ``text``."""
    return [m.group(m.re.groups) for m in pattern.finditer(text)]


# -- names_secret ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "secret"),
    [
        ("db_password", "x", True),
        ("HF_TOKEN", "hf_x", True),
        ("wandb.api_key", "x", True),
        ("api-key", "x", True),
        ("db_pass", "x", True),
        ("pwd", "x", True),
        ("Authorization", "x", True),
        ("password_file", "/etc/pw", False),
        ("tokens_per_sec", "12800", False),
        ("eos_token", "</s>", False),
        ("pad_token", "<pad>", False),
        ("auth", "dXNlcjpwYXNz", True),
        ("Credentials", "alice:pw", True),
        ("creds", "x", True),
        ("authority", "x", False),
        ("key", RANDOM_32, True),
        ("apiKey", RANDOM_32, True),
        ("key", "checkpoint_step", False),
        ("TORCH_NONCE", RANDOM_32, True),
        ("TORCH_NONCE", "/data/cache/x", False),
        ("torch_nonce", RANDOM_32, False),
        ("--hf-token", "x", False),
    ],
    ids=[
        "password-suffix",
        "env-token",
        "dotted-api-key",
        "dashed-api-key",
        "detector-word-db-pass",
        "detector-word-pwd",
        "authorization",
        "word-not-at-the-end",
        "tokens-per-sec",
        "tokenizer-eos",
        "tokenizer-pad",
        "docker-auth",
        "credentials-any-case",
        "creds",
        "authority-is-no-credential",
        "bare-key-random",
        "apikey-random",
        "bare-key-plain",
        "env-name-random",
        "env-name-path",
        "lower-case-name-random",
        "a-flag-is-no-json-key",
    ],
)
def test_a_json_key_names_a_secret(key: str, value: str, secret: bool) -> None:
    """A key names a secret when it ends with a secret's word (not a tokenizer's special
    token), is a credential's name (``auth``, ``credentials``, ``creds``, whole), is a bare
    ``key``/``apikey`` on a random value, or is an environment variable's name (upper case)
    on a random value; a name that starts with a dash is a flag, not a JSON key."""
    assert rules.names_secret(key, value) is secret


# -- flags -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "secret"),
    [
        ("--db-password", True),
        ("--hf-token", True),
        ("--api-key", True),
        ("-secret", True),
        ("--max-tokens", False),
        ("--tokenizer", False),
        ("password", False),
        ("-p", False),
    ],
    ids=["password", "token", "api-key", "one-dash", "plural", "tokenizer", "no-dash", "short"],
)
def test_a_command_line_item_is_a_secret_flag(item: str, secret: bool) -> None:
    """An item is a secret flag when it starts with a dash and ends with a secret's word."""
    assert rules.is_secret_flag(item) is secret


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        ("python train.py --db-password hunter22 --lr 3", ["hunter22"]),
        ("python train.py --hf-token 'abcd1234'", ["abcd1234"]),
        ("x --secret ab\\ cd", ["ab\\ cd"]),
        ("x --password --other", []),
        ("x --password abc", []),
        ("x --max-tokens 4096", []),
        ("x --token=abcd1234", []),
    ],
    ids=[
        "plain",
        "quoted",
        "escaped-blank",
        "next-is-a-flag",
        "three-characters",
        "word-not-at-the-end",
        "equals-is-the-pair-rule",
    ],
)
def test_a_secret_flags_value_is_the_word_after_it(text: str, secrets: list[str]) -> None:
    """The value of a secret flag is the next word, four characters or more, without its
    quotes and with its backslash escapes; another flag in its place is no value."""
    assert _secret(rules.secret_flag(), text) == secrets


# -- hosts and credential lists ------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "host"),
    [
        ("hostname", "gpu-node-7", True),
        ("HostName", "gpu-node-7", True),
        ("nodename", "gpu-node-7", True),
        ("fqdn", "node7.example.org.", True),
        ("hostname", " gpu-node-7\n", True),
        ("hostname", "localhost", False),
        ("hostname", "LOCALHOST", False),
        ("hostname", "", False),
        ("hostname", "gpu node", False),
        ("hostname", "-bad", False),
        ("host", "gpu-node-7", False),
    ],
    ids=[
        "hostname",
        "key-any-case",
        "nodename",
        "fqdn-trailing-dot",
        "value-blank-around",
        "localhost",
        "localhost-upper",
        "empty",
        "has-a-blank",
        "starts-with-dash",
        "other-key",
    ],
)
def test_a_json_key_names_the_hosts_own_name(key: str, value: str, host: bool) -> None:
    """Only ``hostname``, ``nodename`` and ``fqdn`` (any case) name the host, and only on a
    value that is a host name (blanks around it and one trailing dot allowed) and not one
    that identifies nobody (``localhost``, any case)."""
    assert rules.names_host(key, value) is host


@pytest.mark.parametrize(
    ("key", "value", "listed"),
    [
        ("credentials", ["alice", "pw"], True),
        ("auth", ["a"], True),
        ("Creds", ["a", "b"], True),
        ("credentials", [], False),
        ("credentials", ["alice", 3], False),
        ("users", ["alice"], False),
    ],
    ids=["credentials", "auth", "creds-any-case", "empty", "not-all-strings", "other-key"],
)
def test_a_json_key_lists_a_credential(key: str, value: list[object], listed: bool) -> None:
    """A credential's key on a non-empty list of strings holds a credential in pieces (a user
    and a password); an empty list or one holding anything else does not."""
    assert rules.lists_credential(key, value) is listed


# -- the text patterns -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        ("Authorization: Bearer abcdefghijkl", ["abcdefghijkl"]),
        ("authorization: basic dXNlcjpwYXNz", ["dXNlcjpwYXNz"]),
        ("use basic auth", []),
        ("bearer abcdefg", []),
    ],
    ids=["bearer", "basic-lower-case", "basic-then-a-word", "seven-characters"],
)
def test_an_authorization_headers_credentials(text: str, secrets: list[str]) -> None:
    """The credentials after ``Bearer`` or ``Basic`` (any case) are taken when they are eight
    or more token characters; a short word after "basic" is prose."""
    pattern, _ = rules.SECRETS[0]
    assert _secret(pattern, text) == secrets


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        ("HF_TOKEN=hf_abcdefgh", ["hf_abcdefgh"]),
        ("password: s3cr3t!!", ["s3cr3t!!"]),
        ('{"api_key": "abc\\"def"}', ['abc\\"def']),
        ("db-secret = 'opensesame'", ["opensesame"]),
        ("tokens_per_sec: 12800", []),
        ("password: 12345", []),
        ("token: 1.5", []),
        ("authorization: Bearer abcdefghijkl", []),
        ("password:\nnext_line", []),
        ("password=abc", []),
    ],
    ids=[
        "env-token",
        "colon",
        "json-escaped-quote",
        "quoted-with-blanks",
        "word-not-at-the-end",
        "a-number",
        "a-decimal",
        "scheme-word-left-to-the-header-rule",
        "value-on-the-next-line",
        "three-characters",
    ],
)
def test_a_key_value_pairs_value(text: str, secrets: list[str]) -> None:
    """A pair whose key ends with a secret's word gives its value (four characters or more,
    quotes off, backslash escapes kept in it); a plain number, the auth scheme's word and a
    value on the next line are left."""
    pattern, _ = rules.SECRETS[1]
    assert _secret(pattern, text) == secrets


@pytest.mark.parametrize(
    ("token", "taken"),
    [
        ("hf_" + "a1" * 10, True),
        ("hf_" + "a" * 19, False),
        ("ghp_" + "A" * 20, True),
        ("github_pat_" + "A_" * 10, True),
        ("sk-proj-" + "x" * 20, True),
        ("AIza" + "B" * 35, True),
        ("AIza" + "B" * 34, False),
        ("dapi" + "0f" * 16, True),
        ("dapi" + "0g" * 16, False),
        ("hvs." + "v" * 20, True),
        ("whsec_" + "w" * 20, True),
        ("shpat_" + "ab" * 16, True),
        ("GOCSPX-" + "g" * 20, True),
        ("ya29." + "y" * 20, True),
        ("AGE-SECRET-KEY-1" + "Q" * 50, True),
        ("HRKU-" + "h" * 20, True),
        ("dp.st." + "d" * 20, True),
        ("ATATT" + "t" * 20, True),
    ],
    ids=[
        "hugging-face",
        "hugging-face-short",
        "github-classic",
        "github-fine-grained",
        "openai",
        "google-api-key",
        "google-api-key-short",
        "databricks",
        "databricks-not-hex",
        "vault",
        "stripe-webhook",
        "shopify",
        "google-oauth-secret",
        "google-access-token",
        "age-identity",
        "heroku",
        "doppler",
        "atlassian",
    ],
)
def test_a_providers_token_is_taken_whole(token: str, taken: bool) -> None:
    """A token of a provider the detector has no plugin for is taken whole by its documented
    prefix and length; one too short or off its alphabet is not a token."""
    text = f"token {token} here"
    assert [m.group(0) for m in rules.TOKENS.finditer(text)] == ([token] if taken else [])


def test_a_token_inside_a_word_is_not_one() -> None:
    """A token's prefix must start a word: "xhf_…" is not a Hugging Face token."""
    assert rules.TOKENS.search("xhf_" + "a1" * 10) is None


def test_every_tokens_prefix_is_among_the_gate_prefixes() -> None:
    """The redactor runs the token rule only where one of its prefixes stands: each token
    format's prefix is among them, so the gate skips no token."""
    formats = [
        "hf_",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "sk-",
        "AIza",
        "dapi",
        "hvs.",
        "hvb.",
        "hvr.",
        "whsec_",
        "shpat_",
        "shpca_",
        "shppa_",
        "shpss_",
        "GOCSPX-",
        "ya29.",
        "AGE-SECRET-KEY-1",
        "HRKU-",
        "dp.st.",
        "dp.ct.",
        "dp.sa.",
        "dp.scim.",
        "dp.audit.",
        "dp.pt.",
        "ATATT",
    ]
    ungated = [f for f in formats if not any(p in f for p in rules.TOKEN_PREFIXES)]
    assert ungated == []


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        ("curl -u alice:hunter22 https://x", ["hunter22"]),
        ("curl --user=alice:hunter22 https://x", ["hunter22"]),
        ("chown -u 1000:1000 /data", []),
        ("mysql -h db -psecretpw", ["secretpw"]),
        ("mysqldump --password=abc db", ["abc"]),
        ("sshpass -p hunter2 ssh host", ["hunter2"]),
        ("wandb login 0123456789abcdef", ["0123456789abcdef"]),
        ("wandb login --relogin 0123456789abcdef", ["0123456789abcdef"]),
        ("machine api.x.org login bob password hunter2", ["hunter2"]),
        ("  password hunter2", ["hunter2"]),
        ("the password is set", []),
    ],
    ids=[
        "curl-user",
        "curl-user-equals",
        "uid-gid-pair",
        "mysql-p",
        "mysqldump-password",
        "sshpass",
        "wandb-login",
        "wandb-login-after-a-flag",
        "netrc-line",
        "netrc-password-line",
        "prose",
    ],
)
def test_a_command_lines_positional_password(text: str, secrets: list[str]) -> None:
    """curl's user:password (not a uid:gid), mysql's -pPASSWORD or --password=, sshpass -p,
    wandb login's key and a .netrc's password each give the password; "password" in prose
    gives none."""
    found = [s for pattern, _ in rules.COMMAND_SECRETS for s in _secret(pattern, text)]
    assert found == secrets


@pytest.mark.parametrize(
    ("text", "addresses"),
    [
        ("ssh root@10.1.2.3 -p 22", ["10.1.2.3"]),
        ("255.255.255.255 and 0.0.0.0", ["255.255.255.255", "0.0.0.0"]),
        ("256.1.1.1", []),
        ("1.2.3.4.5", []),
        ("torch 2.11.0", []),
    ],
    ids=["address", "edges", "octet-over-255", "five-parts", "version"],
)
def test_an_ipv4_address_is_four_octets_standing_alone(text: str, addresses: list[str]) -> None:
    """An IPv4 address is four octets of 0 to 255, with no digit or dot running on either
    side; a version number and a longer dotted run are not addresses."""
    assert [m.group(0) for m in rules.IPV4.finditer(text)] == addresses


@pytest.mark.parametrize(
    ("text", "addresses"),
    [
        ("inet6 fe80::1ff:fe23:4567:890a scope", ["fe80::1ff:fe23:4567:890a"]),
        (
            "full 2001:0db8:0000:0000:0000:ff00:0042:8329 x",
            ["2001:0db8:0000:0000:0000:ff00:0042:8329"],
        ),
        ("lo ::1", ["::1"]),
        ("net 2001:db8:: up", ["2001:db8::"]),
        ("at 02:20:44", []),
        ("mac aa:bb:cc:dd:ee:ff", []),
    ],
    ids=["compressed", "full", "loopback", "trailing-double-colon", "clock-time", "mac"],
)
def test_an_ipv6_address_is_eight_groups_or_compressed(text: str, addresses: list[str]) -> None:
    """An IPv6 address is eight groups or a form compressed with "::"; a clock time and a MAC
    address (six groups, no "::") are not addresses."""
    assert [m.group(0) for m in rules.IPV6.finditer(text)] == addresses


@pytest.mark.parametrize(
    ("text", "placeholder"),
    [
        ("[REDACTED-IP-1]", True),
        ("[REDACTED-SECRET-12]", True),
        ("[REDACTED-ip-1]", False),
        ("[REDACTED-IP]", False),
    ],
    ids=["ip", "secret", "lower-case", "no-number"],
)
def test_a_placeholder_is_a_kind_and_a_number(text: str, placeholder: bool) -> None:
    """A placeholder the redactor wrote is ``[REDACTED-KIND-N]``, the kind in capitals."""
    assert (rules.PLACEHOLDER.fullmatch(text) is not None) is placeholder


@pytest.mark.parametrize(
    ("value", "mask"),
    [("<redacted>", True), ("<hidden value>", True), ("***", True), ("", True), ("  ", True)],
    ids=["angle-word", "angle-words", "stars", "empty", "blanks"],
)
def test_a_probes_own_mask_is_no_secret(value: str, mask: bool) -> None:
    """A value a probe already masked (``<redacted>``, stars, nothing) is not a secret."""
    assert (rules.MASKS.fullmatch(value) is not None) is mask


def test_a_real_value_is_no_mask() -> None:
    """A value with anything but a mask's characters is not a mask."""
    assert rules.MASKS.fullmatch("hunter22") is None


def test_a_quoted_credential_outside_json() -> None:
    """A Python dict's ``'auth': '…'`` gives its quoted value, and a ``"credentials": [...]``
    list its insides, in text that is not parsed as JSON."""
    assert _secret(rules.QUOTED_CREDENTIAL, "cfg {'auth': 'dXNlcjpwYXNz'}") == ["dXNlcjpwYXNz"]
    listed = rules.QUOTED_CREDENTIAL_LIST.search('x {"credentials": ["alice", "pw"]}')
    assert listed is not None and listed.group(2) == '"alice", "pw"'


@pytest.mark.parametrize(
    ("text", "secrets"),
    [
        ('{"key": "ABCDEFGHIJKL"}', ["ABCDEFGHIJKL"]),
        ("{'apikey': 'ABCDEFGHIJKL'}", ["ABCDEFGHIJKL"]),
        ('{"key": "ABCDEFGHIJK"}', []),
        ('{"key": "checkpoint step"}', []),
    ],
    ids=["key", "apikey-single-quotes", "eleven-characters", "has-a-blank"],
)
def test_a_quoted_keys_candidate_value(text: str, secrets: list[str]) -> None:
    """A quoted ``key``/``apikey`` gives its value as a candidate (judged random by the
    redactor) when it is twelve or more token characters."""
    assert _secret(rules.QUOTED_KEY, text) == secrets


def test_a_colour_code_is_taken_out_whole() -> None:
    """SGR colour sequences are found whole, so a token split by one reads as one token once
    they are dropped."""
    coloured = "\x1b[31mghp_\x1b[0m" + "A" * 20 + "\x1b[1;32m!"
    assert rules.SGR.sub("", coloured) == "ghp_" + "A" * 20 + "!"
