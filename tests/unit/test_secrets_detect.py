"""Where secrets stand in text (tools.secrets_detect): the detect-secrets plugins' formats as
spans of the text, an environment assignment of a random value, the entropy plugins'
measure of "random", where private keys begin, and the screen of patterns and key words
that decides which texts the plugins read at all."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tools import secrets_detect
from tools.secrets_detect import Screen

# 32 distinct base64 characters, each once: 5.0 bits a character, over the 4.5 limit.
RANDOM_32 = "ABCDEFGHIJKLMNOPabcdefghijklmnop"


def _span_of(text: str, part: str) -> tuple[int, int]:
    """Where ``part`` stands in ``text`` (it must stand there once)."""
    assert text.count(part) == 1
    at = text.index(part)
    return at, at + len(part)


# -- find ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("key AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE"),
        ("clone https://alice:pa55word@git.example.org/repo", "pa55word"),
        ("export WANDB_NONCE=" + RANDOM_32, RANDOM_32),
        ('TOKEN_SEED="' + RANDOM_32 + '" next', RANDOM_32),
        ("cd /w; SEED=" + RANDOM_32 + "; python train.py", RANDOM_32),
    ],
    ids=["aws-key", "basic-auth-password", "export", "quoted-assignment", "between-commands"],
)
def test_a_secret_is_found_as_its_own_span(text: str, secret: str) -> None:
    """A secret in a format the detector knows is one span covering the secret alone: an AWS
    key id, a URL's password (not its user or host), a random value assigned to a name (not
    the name, nor the quotes around it)."""
    assert secrets_detect.find(text) == [_span_of(text, secret)]


def test_a_token_longer_than_its_pattern_is_taken_whole() -> None:
    """A pattern that takes a fixed count of a token's characters (AWS's 16 after AKIA) still
    yields the whole run of token characters after it, so no tail is left in clear."""
    text = "key AKIAIOSFODNN7EXAMPLEXYZ here"
    assert secrets_detect.find(text) == [_span_of(text, "AKIAIOSFODNN7EXAMPLEXYZ")]


def test_every_keyword_assignment_on_a_line_is_found() -> None:
    """The keyword plugin's quoted forms are all taken on a line, not only the first (its own
    ``analyze_string`` stops at the first match of a pattern); each span is the value inside
    the quotes."""
    text = 'cfg.password = "hunter22"; other.password = "swordfish"'
    assert secrets_detect.find(text) == [
        _span_of(text, "hunter22"),
        _span_of(text, "swordfish"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "export RUN_NAME=aaaaaaaaaaaaaaaa",
        "see https://x.org/?q=" + RANDOM_32,
        "X=" + RANDOM_32 + ",",
        "export DATA=/" + RANDOM_32,
        "SEED=" + RANDOM_32[:11],
        "step 12 loss 2.31 lr 3e-4 tokens/s 12800 grad_norm 0.9",
    ],
    ids=[
        "value-not-random",
        "query-parameter-not-a-name",
        "value-runs-on-past-a-comma",
        "value-is-a-path",
        "value-of-11-characters",
        "training-log-line",
    ],
)
def test_text_that_holds_no_secret_gives_no_span(text: str) -> None:
    """An assignment is taken only when a variable's name stands before the "=" (at the start
    or after a blank or a shell separator), its value ends at a blank, a separator or the end,
    and the value is random; an ordinary log line has no span at all."""
    assert secrets_detect.find(text) == []


# -- looks_random ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "random"),
    [
        (RANDOM_32, True),  # base64, 32 distinct: 5.0 bits > 4.5
        ("ABCDEFGHabcdefgh", False),  # base64, 16 distinct: 4.0 bits <= 4.5, not hex
        ("0123456789abcdef", True),  # hex, 16 distinct: 4.0 bits > 3.0
        ("0123456789ABCDEF", True),  # upper-case hex is hex too
        ("deadbeefdeadbeef", False),  # hex: d4 e6 a2 b2 f2 of 16 is about 2.16 bits
        ("123456789012", False),  # 3.25 bits, less 1.2/log2(12) for a number: about 2.92
        ("0123456789a", False),  # 11 characters: too short to judge
        ("/" + RANDOM_32, False),  # a path
        (RANDOM_32[:-1] + "!", False),  # "!" is in neither alphabet
    ],
    ids=[
        "base64-high",
        "base64-low",
        "hex-high",
        "hex-upper",
        "hex-low",
        "all-digits",
        "too-short",
        "path",
        "outside-alphabets",
    ],
)
def test_a_value_is_random_by_the_entropy_plugins_measure(value: str, random: bool) -> None:
    """A value of 12 or more characters is random when it lies wholly in the base64 or the hex
    alphabet and its Shannon entropy is over that plugin's limit (4.5 and 3.0 bits a
    character); a number's entropy is lowered first, and a value starting with "/" is a
    path."""
    assert secrets_detect.looks_random(value) is random


# -- key_starts --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "starts"),
    [
        ("x -----BEGIN RSA PRIVATE KEY-----\nMIIE", [2]),
        ("log: ---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----", [5]),
        ("PuTTY-User-Key-File-2: ssh-rsa", [0]),
        ("ab BEGIN EC PRIVATE KEY", [3]),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----\n"
            "-----BEGIN PGP PRIVATE KEY BLOCK-----",
            [0, 75],
        ),
        ("no key here, only PRIVATE KEY words", []),
        ("step 1 loss 2.0", []),
    ],
    ids=["pem-dashes", "ssh2-four-dashes", "putty", "no-dashes", "two-keys", "words", "none"],
)
def test_a_private_key_begins_at_the_dashes_before_its_marker(text: str, starts: list[int]) -> None:
    """A private key begins where the plugin's marker does, or at the four or five dashes
    (and one blank) before it; every key in the text is found, in order."""
    assert secrets_detect.key_starts(text) == starts


def test_private_keys_are_not_among_the_found_spans() -> None:
    """``find`` leaves private keys to ``key_starts``: a key's marker alone gives no span."""
    assert secrets_detect.find("-----BEGIN RSA PRIVATE KEY-----") == []


# -- enabled -----------------------------------------------------------------------------


def test_the_enabled_plugins_are_the_regex_ones_then_keys_keywords_and_entropy() -> None:
    """The plugins used are the listed regex plugins in their order, then the private-key,
    keyword and the two entropy plugins."""
    assert secrets_detect.enabled() == [
        "AWSKeyDetector",
        "AzureStorageKeyDetector",
        "BasicAuthDetector",
        "DiscordBotTokenDetector",
        "GitHubTokenDetector",
        "GitLabTokenDetector",
        "JwtTokenDetector",
        "MailchimpDetector",
        "NpmDetector",
        "OpenAIDetector",
        "PypiTokenDetector",
        "SendGridDetector",
        "SlackDetector",
        "SquareOAuthDetector",
        "StripeDetector",
        "TelegramBotTokenDetector",
        "TwilioKeyDetector",
        "PrivateKeyDetector",
        "KeywordDetector",
        "Base64HighEntropyString",
        "HexHighEntropyString",
    ]


# -- the screen --------------------------------------------------------------------------

HANDMADE = Screen(
    (
        ("Tok", r"tok_\d{4}", 0, "tok_"),
        ("Key", r"key-[a-z]{3}", re.I, "key-"),
        ("Gated", r"\d{6}", 0, "never-in-the-text"),
        ("Tok", r"tok[A-Z]{4}", 0, "tok"),
    ),
    ("password",),
)


@pytest.mark.parametrize(
    ("text", "plugins"),
    [
        ("a tok_1234 b", {"Tok"}),
        ("a KEY-ABC b", {"Key"}),
        ("a tokWXYZ and KEY-abc", {"Tok", "Key"}),
        ("123456 and tok_12", set()),
        ("nothing here", set()),
    ],
    ids=["one-plugin", "case-insensitive", "two-plugins", "literal-absent", "none"],
)
def test_the_screen_names_the_plugins_a_pattern_of_which_matches(
    text: str, plugins: set[str]
) -> None:
    """A plugin is named when one of its patterns matches the text (a case-insensitive one on
    any case); a pattern runs only on a text that holds its literal, so where the literal is
    absent the plugin is not named."""
    assert HANDMADE.plugins_matching(text, text.lower()) == plugins


def test_a_screen_reads_back_from_its_document() -> None:
    """The document a screen is kept as, once through JSON, reads back to the same screen
    for the same key and to none for another."""
    doc = json.loads(json.dumps(HANDMADE.document("k1")))
    assert Screen.from_document(doc, "k1") == HANDMADE
    assert Screen.from_document(doc, "k2") is None


_GOOD_ITEM: list[Any] = ["Tok", r"tok_\d{4}", 0, "tok_"]


@pytest.mark.parametrize(
    "doc",
    [
        ["k", [_GOOD_ITEM], ["password"]],
        {"patterns": [_GOOD_ITEM], "key_words": ["password"]},
        {"key": "k", "patterns": [_GOOD_ITEM], "key_words": []},
        {"key": "k", "patterns": [_GOOD_ITEM], "key_words": [""]},
        {"key": "k", "patterns": [_GOOD_ITEM], "key_words": [3]},
        {"key": "k", "patterns": [_GOOD_ITEM], "key_words": "password"},
        {"key": "k", "patterns": [], "key_words": ["password"]},
        {"key": "k", "patterns": [_GOOD_ITEM[:3]], "key_words": ["password"]},
        {"key": "k", "patterns": [["Tok", r"tok", True, "tok"]], "key_words": ["password"]},
        {"key": "k", "patterns": [["Tok", r"tok", 0, None]], "key_words": ["password"]},
        {"key": "k", "patterns": [("Tok", r"tok", 0, "tok")], "key_words": ["password"]},
    ],
    ids=[
        "not-a-dict",
        "no-key",
        "no-key-words",
        "empty-key-word",
        "key-word-not-a-string",
        "key-words-not-a-list",
        "no-patterns",
        "item-of-three",
        "flags-a-bool",
        "literal-not-a-string",
        "item-a-tuple-not-json",
    ],
)
def test_a_malformed_screen_document_is_refused(doc: object) -> None:
    """A kept screen is used only when it is whole: a dict for the key asked, a non-empty list
    of non-empty key words and a non-empty list of four-item pattern lists (plugin, pattern,
    flags as an int, literal); anything else reads as no screen."""
    assert Screen.from_document(doc, "k") is None


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        (re.compile(r"abc[0-9]+defgh"), "defgh"),
        (re.compile(r"xoxb-\d+"), "xoxb-"),
        (re.compile(r"SK[0-9a-f]{32}", re.I), "sk"),
        (re.compile(r"[a-z]+\d"), ""),
        (re.compile(r"(?:ab|cd)ef"), "ef"),
    ],
    ids=["longest-run", "prefix", "case-insensitive-lowered", "no-literal", "after-group"],
)
def test_a_patterns_literal_is_its_longest_plain_run(
    pattern: re.Pattern[str], literal: str
) -> None:
    """The literal a pattern's every match holds is its longest run of plain characters at the
    top level (lower-cased for a case-insensitive pattern); a pattern with none has an empty
    literal, and is then always scanned."""
    assert secrets_detect._literal(pattern) == literal
