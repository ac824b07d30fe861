"""JSON-like values as the redactor (``tools.redact``) reads them: a JSON document
inside a line of command output, every string in a value, and a dict key kept distinct
when redaction makes two keys one."""

from __future__ import annotations

import json


def collect_strings(value: object, out: list[str]) -> None:
    """Every string in a JSON-like value, dict keys too."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            collect_strings(item, out)
    elif isinstance(value, dict):
        for key, item in value.items():
            collect_strings(key, out)
            collect_strings(item, out)


def json_in(line: str) -> tuple[int, object] | None:
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


def unique_key(key: str, taken: dict[object, object]) -> str:
    """A redacted key that two keys became: the second gets a number, so none is lost."""
    if key not in taken:
        return key
    n = 2
    while f"{key} #{n}" in taken:
        n += 1
    return f"{key} #{n}"
