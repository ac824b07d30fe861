"""One rule for text that UTF-8 cannot hold.

Python lets a ``str`` carry lone surrogates: ``json.loads`` makes one from a ``\\ud800``
escape in a train-log line, and ``os.fsdecode`` (every ``os.listdir``, ``sys.argv``) makes
one per byte of a file name that is not UTF-8 (``\\udcff`` for the byte ``0xff``). Such a
string cannot be written as UTF-8: one in a fact would make every write of the ledger, the
report and ``--json`` raise. So each is replaced by the escape that names it, in the text
itself, where a reader sees it: a byte kept by ``surrogateescape`` as ``\\xff`` (how ``ls
-b`` shows it), any other lone surrogate as ``\\ud800`` (how JSON wrote it). Nothing is
dropped, and the text says where it was not text.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # pydantic is imported by the functions that need it: a session's
    # transcript writes through ``json_text`` and must not load it (CLI start-up)
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")

_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_BYTES = range(0xDC80, 0xDD00)  # what surrogateescape makes of the bytes 0x80-0xff


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    if code in _ESCAPED_BYTES:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def writable(text: str) -> str:
    """``text`` with every lone surrogate replaced by the escape that names it."""
    return _SURROGATE.sub(_escape, text) if _SURROGATE.search(text) else text


def writable_json(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, tuples, strings, numbers) with every string,
    keys included, made :func:`writable`. Containers with nothing to escape come back as
    they were."""
    if isinstance(value, str):
        return writable(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        changed = False
        for key, item in value.items():
            new_key, new_item = writable_json(key), writable_json(item)
            changed = changed or new_key is not key or new_item is not item
            while new_key in out:  # two keys that read the same once escaped: keep both
                new_key = f"{new_key} (same once escaped)"
            out[new_key] = new_item
        return out if changed else value
    if isinstance(value, list | tuple):
        items = [writable_json(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items) if isinstance(value, tuple) else items
    return value


def _json_escape(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


def json_text(value: Any, **dumps: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, **dumps)`` that UTF-8 can hold: a lone
    surrogate (only ever inside a JSON string) is written as its ``\\udce9`` escape,
    which ``json.loads`` reads back to the very same string. For records that must
    round-trip exactly (a transcript's argv is compared on replay)."""
    text = json.dumps(value, ensure_ascii=False, **dumps)
    return _SURROGATE.sub(_json_escape, text) if _SURROGATE.search(text) else text


def model_json(
    model: BaseModel, *, indent: int | None = None, include: set[str] | None = None
) -> str:
    """``model.model_dump_json(indent=indent)``; for a model holding a lone surrogate
    (a path whose bytes are not UTF-8, as ``os.fsdecode`` gives it), the same document
    with each written as JSON's ``\\udce9`` escape, which ``json.loads`` reads back to
    the same string (pydantic's own JSON reader refuses it: read such a file with
    ``json.loads`` and ``model_validate``)."""
    from pydantic_core import PydanticSerializationError

    try:
        return model.model_dump_json(indent=indent, include=include)
    except PydanticSerializationError:
        compact = (",", ":") if indent is None else None  # as pydantic writes it
        dumped = model.model_dump(mode="json", include=include)
        return json_text(dumped, indent=indent, separators=compact)


def model_from_json(cls: type[M], text: str | bytes) -> M:
    """``cls.model_validate_json(text)``, which refuses a lone surrogate's escape
    (``\\udce9``, as :func:`model_json` writes one): such a document is read with
    ``json.loads``, which gives the very string back, and validated from that."""
    from pydantic import ValidationError

    try:
        return cls.model_validate_json(text)
    except ValidationError as refused:
        try:
            data = json.loads(text)
        except ValueError:
            raise refused from None  # not JSON at all: pydantic's own error says where
        return cls.model_validate(data)
