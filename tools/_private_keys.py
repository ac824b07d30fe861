"""Where private keys stand in text, for the redactor (``tools.redact``): from the line
that begins one to its END line; a key cut before its end, or whose start was cut off (a
log's tail kept only its last lines), as far as its body runs."""

from __future__ import annotations

import re

from tools import secrets_detect

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
BODY_RUN = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=])")


def may_hold_key(text: str) -> bool:
    return "PRIVATE KEY" in text or "PuTTY-User-Key-File" in text


def key_spans(text: str) -> list[tuple[int, int]]:
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
            body = BODY_RUN.search(line) is not None  # the body on the marker's line
        elif not _KEY_HEADER.match(line):
            body = True
        if newline < 0:
            return len(text)
        at = newline + 1
