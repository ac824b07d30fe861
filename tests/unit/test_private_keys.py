"""Where private keys stand in text (tools._private_keys): a key runs from the line that
begins it to its END line; a key cut before its end runs to the first blank line after its
body (its headers' blank line does not end it) or to the end of the text; a key whose start
was cut off runs from its first body line to its END line."""

from __future__ import annotations

import pytest

from tools import _private_keys as keys

BODY_1 = "MIIEowIBAAKCAQEAx7Qb1o9v"
BODY_2 = "Zk3q8mP0sL2nR4tW6yB9cD"
PEM_BEGIN = "-----BEGIN RSA PRIVATE KEY-----"
PEM_END = "-----END RSA PRIVATE KEY-----"


def _from_to(text: str, first: str, last: str) -> tuple[int, int]:
    """The span from where ``first`` starts to where ``last`` ends (each once in ``text``)."""
    assert text.count(first) == 1 and text.count(last) == 1
    return text.index(first), text.index(last) + len(last)


@pytest.mark.parametrize(
    ("text", "holds"),
    [
        (PEM_BEGIN, True),
        ("PuTTY-User-Key-File-3: ssh-ed25519", True),
        ("-----BEGIN PUBLIC KEY-----", False),
        ("private key", False),
    ],
    ids=["pem", "putty", "public-key", "lower-case-words"],
)
def test_a_text_may_hold_a_key_only_with_a_markers_words(text: str, holds: bool) -> None:
    """Only a text holding "PRIVATE KEY" or PuTTY's file header may hold a key: every other
    text is passed by with one substring test."""
    assert keys.may_hold_key(text) is holds


def test_a_whole_key_runs_from_its_begin_to_its_end_line() -> None:
    """A key with both marker lines is one span, from the dashes of its BEGIN line to those
    ending its END line; the lines around it are outside."""
    text = f"before\n{PEM_BEGIN}\n{BODY_1}\n{BODY_2}\n{PEM_END}\nafter"
    assert keys.key_spans(text) == [_from_to(text, PEM_BEGIN, PEM_END)]


def test_an_encrypted_pkcs8_key_is_a_key() -> None:
    """ "BEGIN ENCRYPTED PRIVATE KEY" (PKCS#8), a marker the detector's list lacks, begins a
    key too."""
    begin, end = "-----BEGIN ENCRYPTED PRIVATE KEY-----", "-----END ENCRYPTED PRIVATE KEY-----"
    text = f"x\n{begin}\n{BODY_1}\n{end}\ny"
    assert keys.key_spans(text) == [_from_to(text, begin, end)]


def test_a_key_cut_before_its_end_runs_to_the_blank_line_after_its_body() -> None:
    """A key without an END line ends with the last line of its body, before the first blank
    line after it; what follows the blank line is outside."""
    text = f"{PEM_BEGIN}\n{BODY_1}\n{BODY_2}\n\nstep 2 loss 1.9\n"
    assert keys.key_spans(text) == [_from_to(text, PEM_BEGIN, BODY_2)]


def test_a_key_cut_before_its_end_with_no_blank_line_runs_to_the_end() -> None:
    """A key without an END line and no blank line after its body runs to the end of the
    text."""
    text = f"log: {PEM_BEGIN}\n{BODY_1}\nstep 2 loss 1.9"
    assert keys.key_spans(text) == [(5, len(text))]


def test_the_blank_line_after_a_keys_headers_does_not_end_it() -> None:
    """A PEM key's Proc-Type/DEK-Info headers and the blank line after them come before its
    body: the key runs on to the blank line after the body."""
    text = f"{PEM_BEGIN}\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B\n\n{BODY_1}\n\nafter"
    assert keys.key_spans(text) == [_from_to(text, PEM_BEGIN, BODY_1)]


def test_a_blank_line_right_after_the_marker_does_not_end_the_key() -> None:
    """A blank line before any body line is not the end of the key."""
    text = f"{PEM_BEGIN}\n\n{BODY_1}\n{PEM_END}\nafter"
    assert keys.key_spans(text) == [_from_to(text, PEM_BEGIN, PEM_END)]


def test_a_body_on_the_markers_own_line_ends_at_the_next_blank_line() -> None:
    """A key written on one line with its marker (a log that joined its lines) has its body
    there: the blank line after that line ends it."""
    line = f"{PEM_BEGIN} {BODY_1}"
    text = f"{line}\n\nafter"
    assert keys.key_spans(text) == [(0, len(line))]


def test_a_putty_key_runs_to_the_blank_line_after_its_last_section() -> None:
    """A PuTTY key (no END line) keeps its "Name: value" lines inside it and ends at the
    blank line after its body."""
    text = (
        "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: rsa-key\nPublic-Lines: 1\n"
        f"{BODY_1}\nPrivate-Lines: 1\n{BODY_2}\nPrivate-MAC: 0123abcd\n\nafter"
    )
    assert keys.key_spans(text) == [
        _from_to(text, "PuTTY-User-Key-File-2", "Private-MAC: 0123abcd")
    ]


def test_a_key_whose_start_was_cut_off_runs_from_its_body_to_its_end_line() -> None:
    """A log's tail that kept only a key's last lines: the key runs from the first of its
    body lines (base64, the last one shorter) to its END line; the log line before is
    outside."""
    text = f"[rank0]: saving\n{BODY_1}\n{BODY_2}\nAbc=\n{PEM_END}\nstep 3"
    assert keys.key_spans(text) == [_from_to(text, BODY_1, PEM_END)]


def test_a_cut_off_key_with_only_its_end_line_is_that_line() -> None:
    """An END line alone (every body line cut off) is still a key's remains."""
    text = f"tail:\n{PEM_END}\n"
    assert keys.key_spans(text) == [_from_to(text, PEM_END, PEM_END)]


def test_two_keys_are_two_spans_in_order() -> None:
    """Each key in a text is its own span, in the order they stand; the text between them is
    outside both."""
    ssh_begin, ssh_end = "-----BEGIN OPENSSH PRIVATE KEY-----", "-----END OPENSSH PRIVATE KEY-----"
    text = f"{PEM_BEGIN}\n{BODY_1}\n{PEM_END}\nbetween\n{ssh_begin}\n{BODY_2}\n{ssh_end}\n"
    assert keys.key_spans(text) == [
        _from_to(text, PEM_BEGIN, PEM_END),
        _from_to(text, ssh_begin, ssh_end),
    ]


def test_a_text_without_a_key_has_no_span() -> None:
    """Ordinary text (a public key included) has no key span."""
    text = f"-----BEGIN PUBLIC KEY-----\n{BODY_1}\n-----END PUBLIC KEY-----\nstep 1 loss 2.0"
    assert keys.key_spans(text) == []


@pytest.mark.parametrize(
    ("text", "runs"),
    [
        (f"Error: {BODY_1}", [BODY_1]),
        ("x " + "A" * 15 + " y", []),
        ("x " + "A" * 16 + "== y", ["A" * 16 + "=="]),
        ("x " + "A" * 16 + "===", []),
    ],
    ids=["body-line", "fifteen", "padding", "three-padding"],
)
def test_a_body_run_is_sixteen_base64_characters_standing_alone(text: str, runs: list[str]) -> None:
    """A key's body line, where it stands alone, is 16 or more base64 characters with at most
    two "=" of padding, no base64 character running on either side."""
    assert [m.group(0) for m in keys.BODY_RUN.finditer(text)] == runs
