"""The prompt files a run trains on: size, line count, and the distribution of lengths.

Line counts are exact up to ``count_limit`` bytes (counting newlines runs at disk
speed) and estimated past it (from the sampled mean line length; the value says so).
Lengths come from a sample of lines spread evenly through the file (deterministic, so
a replay sees the same numbers): the byte length of each line and, for JSON lines,
the character length of the text field (``prompt``, ``text``, ``messages``, …; the
profile can name it) and, for pre-tokenized prompts, the token count (the length of the
``input_ids`` / ``token_ids`` / ``tokens`` list). The number of distinct lengths matters
to torch.compile: every new sequence length can mean a recompile.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from typing import Any

from . import layout
from ._common import Context, ProbeFailure, TypedDict, expand_globs, file_entry, open_regular

NAME = "dataset"
TIMEOUT = 120.0

TEXT_FIELDS = (
    "prompt",
    "text",
    "input",
    "instruction",
    "question",
    "messages",
    "conversations",
    "conversation",
)

COLUMNAR = (".parquet", ".arrow")

# Pre-tokenized prompts: a list whose length is the sequence length a model sees.
TOKEN_FIELDS = ("input_ids", "token_ids", "tokens")


class Dist(TypedDict, total=False):
    count: int
    min: float
    p10: float
    p50: float
    p90: float
    p99: float
    max: float
    mean: float
    distinct: int


class DatasetFile(TypedDict, total=False):
    path: str
    kind: str
    size: int
    mtime: float
    lines: int
    lines_exact: bool
    sampled_lines: int
    json_lines: int
    not_json_lines: int
    text_field: str | None
    line_bytes: Dist
    text_chars: Dist
    token_field: str | None
    token_counts: Dist
    entries: list[dict[str, Any]]  # for a directory: its files
    error: str
    error_kind: str
    pattern: str


class DatasetValue(TypedDict, total=False):
    files: list[DatasetFile]
    unmatched: list[str]
    source: dict[str, Any]  # the profile's paths, or the workspace layout's prompt files


def distribution(vals: Sequence[float]) -> Dist:
    if not vals:
        return {"count": 0}
    s = sorted(vals)

    def q(p: float) -> float:
        return s[min(len(s) - 1, round(p * (len(s) - 1)))]

    return {
        "count": len(s),
        "min": s[0],
        "p10": q(0.1),
        "p50": q(0.5),
        "p90": q(0.9),
        "p99": q(0.99),
        "max": s[-1],
        "mean": sum(s) / len(s),
        "distinct": len(set(s)),
    }


def count_lines(f: Any, limit: int) -> int | None:
    f.seek(0)
    n = 0
    read = 0
    last = b""
    while read < limit:
        buf = f.read(1 << 20)
        if not buf:
            return n + (1 if last and not last.endswith(b"\n") else 0)
        n += buf.count(b"\n")
        read += len(buf)
        last = buf
    return None


def sample_lines(f: Any, size: int, want: int, blocks: int = 64) -> list[bytes]:
    """About ``want`` whole lines: all of a small file, else runs of lines read at
    ``blocks`` evenly spaced offsets."""
    if size <= 4 << 20:
        f.seek(0)
        data: bytes = f.read(4 << 20)  # bounded even if the file grew since its stat
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        step = max(1, len(lines) // want)
        return lines[::step][:want]
    per_block = max(1, want // blocks)
    out: list[bytes] = []
    for i in range(blocks):
        off = (size * i) // blocks
        f.seek(off)
        buf = f.read(256 << 10)
        parts = buf.split(b"\n")
        # The first piece is the end of a line begun before ``off``; the last may be cut.
        body = parts[1:-1] if off else parts[:-1]
        out.extend(body[:per_block])
    return out


def text_length(d: Any, field: str) -> int | None:
    v = d.get(field) if isinstance(d, dict) else None
    if isinstance(v, str):
        return len(v)
    if isinstance(v, list):
        total = 0
        for m in v:
            if isinstance(m, str):
                total += len(m)
            elif isinstance(m, dict):
                c = m.get("content", m.get("value", ""))
                total += len(c) if isinstance(c, str) else 0
        return total
    return None


def one(path: str, params: dict[str, Any], pattern: str | None) -> DatasetFile:
    entry: DatasetFile = dict(file_entry(path))  # type: ignore[assignment]
    if pattern:
        entry["pattern"] = pattern
    if "error" in entry:
        return entry
    if entry.get("kind") == "dir":
        items = []
        try:
            for name in sorted(os.listdir(path))[:200]:
                st = os.stat(os.path.join(path, name))
                items.append({"name": name, "size": st.st_size, "dir": stat.S_ISDIR(st.st_mode)})
        except OSError as exc:
            entry["error"] = exc.strerror or str(exc)
        entry["entries"] = items
        return entry
    try:
        f = open_regular(path)
    except ProbeFailure as exc:
        entry["error"], entry["error_kind"] = exc.message, exc.kind
        return entry
    with f:
        size = entry.get("size", 0)
        lines = sample_lines(f, size, int(params.get("sample_lines", 20000)))
        lens = [len(x) for x in lines]
        entry["sampled_lines"] = len(lines)
        entry["line_bytes"] = distribution(lens)
        n = count_lines(f, int(params.get("count_limit", 2 << 30)))
        if n is None:
            mean = (sum(lens) + len(lens)) / len(lens) if lens else 0
            entry["lines"] = int(size / mean) if mean else 0
            entry["lines_exact"] = False
        else:
            entry["lines"], entry["lines_exact"] = n, True
        field = params.get("text_field")
        chars: list[int] = []
        tokens: list[int] = []
        token_field: str | None = None
        ok = bad = 0
        for raw in lines:
            try:
                d = json.loads(raw)
            except ValueError:
                bad += 1
                continue
            ok += 1
            if field is None and isinstance(d, dict):
                field = next((k for k in TEXT_FIELDS if k in d), None)
            if field is not None:
                n_chars = text_length(d, field)
                if n_chars is not None:
                    chars.append(n_chars)
            if token_field is None and isinstance(d, dict):
                token_field = next((k for k in TOKEN_FIELDS if isinstance(d.get(k), list)), None)
            if token_field is not None and isinstance(d, dict):
                ids = d.get(token_field)
                if isinstance(ids, list):
                    tokens.append(len(ids))
        entry["json_lines"], entry["not_json_lines"] = ok, bad
        entry["text_field"] = field
        entry["text_chars"] = distribution(chars)
        entry["token_field"] = token_field
        entry["token_counts"] = distribution(tokens)
    return entry


def collect(params: dict[str, Any], ctx: Context) -> DatasetValue:
    paths, source = layout.chosen_many(params, ("dataset",))
    if "workspace" in source:
        # Columnar files need pyarrow to read: named in the fact, not read.
        source["not_read"] = [p for p in paths if p.lower().endswith(COLUMNAR)]
        paths = [p for p in paths if not p.lower().endswith(COLUMNAR)]
    found, unmatched = expand_globs(paths, most=100)
    files = [one(path, params, pattern) for path, pattern in found]
    return {"files": files, "unmatched": unmatched, "source": source}


VALUE = DatasetValue
