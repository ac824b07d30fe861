"""Where a detect-secrets plugin's match puts the secret (``tools.secrets_detect``): the
span of the value or of the token in the line the plugin read, the lines a pattern's
matches stand on, and spans merged where they touch."""

from __future__ import annotations

import re
from collections.abc import Iterator

# Below this many characters no enabled format fits (basic auth's "://u:p@" is 7).
MIN_LENGTH = 7
# A group that follows one of these inside its match is the value of an assignment or a
# URL (the pattern carries the key or the URL around it, no secret); a group anywhere
# else (GitHub's ``(ghp|gho|…)``) names the token's kind, and the whole match is the token.
_BEFORE_VALUE = frozenset(":=\"' \t/")
# Pattern delimiters taken into a whole match, and a key a pattern takes with its value
# (Azure's ``AccountKey=…``): left in clear, they are no secret.
_EDGES = " \t\"'=:"
_KEY_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9]*=")
# A token's own characters after a match: the Stripe pattern takes 24 characters of keys
# that are longer, and the JWT pattern ends lazily, before the signature.
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-+/=]*")


def secret_in(match: re.Match[str], line: str, confirmed: set[str]) -> list[tuple[int, int]]:
    """The secret in one match, as ``analyze_string`` yields it (the non-empty groups, or
    the whole match), confirmed by it, as spans."""
    groups = [g for g in range(1, (match.re.groups or 0) + 1) if match.group(g)]
    yielded = [match.group(g) for g in groups] or [match.group(0)]
    if not any(value in confirmed for value in yielded):
        return []
    values = [
        g
        for g in groups
        if match.start(g) > match.start() and line[match.start(g) - 1] in _BEFORE_VALUE
    ]
    if values:
        return [match.span(g) for g in values]
    start, end = match.span()
    while start < end and line[start] in _EDGES:
        start += 1
    while end > start and line[end - 1] in _EDGES:
        end -= 1
    key = _KEY_PREFIX.match(line, start, end)
    if key is not None and end - key.end() >= MIN_LENGTH:
        start = key.end()
    tail = _TOKEN_TAIL.match(line, end)
    return [(start, tail.end() if tail else end)]


def lines_of(text: str, pattern: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    """Each line holding (a part of) a match of ``pattern``, once, with its offset."""
    seen: set[int] = set()
    for match in pattern.finditer(text):
        at = text.rfind("\n", 0, match.start()) + 1
        while at <= match.end() and at not in seen:
            seen.add(at)
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
            yield at, text[at:end]
            at = end + 1


def merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
