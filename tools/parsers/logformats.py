# Shipped to targets running Python 3.8: zip(strict=) is 3.10+.
# ruff: noqa: B905
"""The record formats a training log comes in, and which one a file is.

Shipped in the probe bundle: stdlib only, Python >= 3.8.

Trainers write their metrics in a handful of shapes; each reader here turns one line (or,
for ``trainer_state``, one document) into records, plain dicts that
``tools.parsers.trainlog`` summarises whatever their origin:

- ``jsonl``: one JSON object a line (the reference trainer, wandb-style exports…);
- ``csv``: a header row, then one row a log call, sparse cells left empty (Lightning's
  ``CSVLogger`` writes ``metrics.csv`` so: ``lightning/fabric/loggers/csv_logs.py``);
- ``trainer_state``: Hugging Face ``Trainer``'s ``trainer_state.json``, whose
  ``log_history`` holds one entry a logging step and a run summary last;
- ``text``: lines a person could read: torchtune's ``Step N | loss:x lr:y ``
  (``DiskLogger.log_dict``), SpecForge's ``Train - Step N [N/T], Loss: x, Acc: y``,
  Python-dict lines (what ``Trainer`` prints), ``key=value`` and ``key: value`` pairs,
  each after whatever ``logging`` prefix (time, level, logger name, ``[rank0]:``).

A text log holds much besides metrics (progress bars, warnings): a line that is not a
record is counted as such, not as damage.
"""

from __future__ import annotations

import ast
import csv
import json
import os
import re
from datetime import datetime
from typing import Any

__all__ = [
    "FORMATS",
    "csv_header",
    "parse_csv_row",
    "parse_text_line",
    "sniff",
    "trainer_state_records",
]

FORMATS = ("jsonl", "csv", "trainer_state", "text")

SNIFF_LINES = 20
MAX_DICT_LINE = 8192  # a Python-dict line longer than this is not literal_eval'ed

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_RANK = re.compile(r"\[(?:rank|default|RANK |Rank )(\d+)\]:?\s*")
_STAMP = re.compile(
    r"\[?(?P<t>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2})\]?\s*"
)
_LEVEL = re.compile(
    r"[-|:\s]*\[?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\]?(?::[\w.]*:|[-|:\s]+)"
)
_LOGGER = re.compile(r"[\w.<>\[\]]+(?::\d+)?\s+-\s+")
_TORCHTUNE = re.compile(r"Step (\d+) \| (.*)")
_SPECFORGE = re.compile(r"(Train|Eval) - Step (\d+) \[[^\]]*\],\s*(.*)")
# ``\d+(?:\.\d*)?``, not ``\d+\.?\d*``: the same numbers, but a run of digits that is
# no number (``=123…9x``) is given up after one pass, not after every way of sharing it
# between the two ``\d`` runs (its length squared).
_NUMBER = r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan"
# A name's run of characters that holds no pair is taken whole by the second branch:
# tried again from each of its letters it would fail the same way, and a line that is
# one long run (a printed base64 blob) would cost its length squared. Matches of that
# branch have no ``k``.
_PAIR = re.compile(
    r"(?P<k>[A-Za-z_][\w./\-()]*)\s*[=:]\s*(?P<v>" + _NUMBER + r")"
    r"(?P<u>s|ms|us|\u00b5s|\u03bcs|%)?(?![\w.])"
    r"|[A-Za-z_][\w./\-()]*"
)
# A time's unit (µ written as the micro sign or the Greek letter), to seconds.
_PER_SECOND = {"ms": 1000, "us": 1_000_000, "\u00b5s": 1_000_000, "\u03bcs": 1_000_000}
_LEAD_STEP = re.compile(r"(?:step|iter|iteration)\s+(\d+)\b", re.IGNORECASE)
# tqdm's bar (``42%|####  | 42/100 [00:12<00:17, 3.4it/s, loss=2.3]``): its postfix
# looks like metrics but is a running display, without a step. A count is tried from
# its first digit only (else a long run of digits is read again from each).
_PROGRESS = re.compile(r"(?<!\d)\d+%\|| \d+/\d+ \[\d+:\d+|(?<!\d)\d+it \[\d+:\d+")
_COLUMN = re.compile(r"[A-Za-z_][\w./\-()\[\]]{0,127}\Z")  # a metric's name
_TENSOR = re.compile(r"tensor\((" + _NUMBER + r")[,)]")


def _int(digits: str) -> int | float:
    """``digits`` as an int; past Python's digit limit (>= 3.11, 3.8.14+) as the float
    they are (inf), which no summary takes for a number."""
    try:
        return int(digits)
    except ValueError:
        return float(digits)


def _parsed_number(text: str) -> Any:
    """``text`` as an int or float when it is one (``1,234`` too), else ``text``."""
    t = text.strip()
    if t.isdigit():
        return _int(t)
    if t.startswith("tensor("):
        m = _TENSOR.match(t)
        if m:
            t = m.group(1)
    if "," in t and re.fullmatch(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?", t):
        t = t.replace(",", "")
    try:
        return float(t) if "." in t or "e" in t or "n" in t else int(t)
    except ValueError:
        try:
            return float(t)
        except ValueError:
            return text


def _pair_value(text: str, unit: str | None) -> Any:
    """A pair's number, a time in ``ms`` or ``us`` read in seconds (``512ms``: 0.512),
    any other unit (``s``, ``%``) as written."""
    value = _parsed_number(text)
    per = _PER_SECOND.get(unit or "")
    if per is not None and isinstance(value, (int, float)):
        return value / per
    return value


# A log's lines share their timestamps' seconds in runs: parsing one costs more than the
# rest of the line, so the seconds are parsed once and the fraction added.
_STAMP_MEMO: dict[str, float | None] = {}


def _stamp(text: str) -> float | None:
    """Epoch seconds of a ``logging`` time (local time, as ``logging`` writes it)."""
    t = text.replace(",", ".")
    whole, dot, rest = t.partition(".")
    frac, zone = rest, ""
    if dot:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        frac, zone = rest[:digits], rest[digits:]
    key = whole + zone
    base = _STAMP_MEMO.get(key, -1.0)
    if base == -1.0:
        base = _parse_stamp(key)
        if len(_STAMP_MEMO) > 4096:
            _STAMP_MEMO.clear()
        _STAMP_MEMO[key] = base
    if base is None:
        return None
    return base + (float("0." + frac) if frac else 0.0)


def _parse_stamp(t: str) -> float | None:
    try:
        return datetime.strptime(t, "%m/%d/%Y %H:%M:%S").timestamp()
    except ValueError:
        pass
    try:
        s = t[:-1] + "+00:00" if t.endswith("Z") else t
        return datetime.fromisoformat(s.replace("T", " ", 1)).timestamp()
    except ValueError:
        return None


def _strip_prefix(line: str) -> tuple[str, dict[str, Any]]:
    """The message of a line, and what its prefix said (``time``, ``rank``)."""
    meta: dict[str, Any] = {}
    rest = (_ANSI.sub("", line) if "\x1b" in line else line).strip()
    for _ in range(2):  # the rank may come before or after the time
        if not rest or not (rest[0] == "[" or rest[0].isdigit()):
            break  # neither a rank tag nor a time: the cheap, common case
        m = _RANK.match(rest)
        if m:
            meta["rank"] = _int(m.group(1))
            rest = rest[m.end() :]
        m = _STAMP.match(rest)
        if m and "time" not in meta:
            t = _stamp(m.group("t"))
            if t is not None:
                meta["time"] = t
                rest = rest[m.end() :]
                m2 = _LEVEL.match(rest)
                if m2:
                    rest = rest[m2.end() :]
                    m3 = _LOGGER.match(rest)
                    if m3:
                        rest = rest[m3.end() :]
    m = _LEVEL.match(rest)
    if m and m.start() == 0 and rest[:1].isalpha():
        rest = rest[m.end() :]
    return rest.strip(), meta


def _dict_line(msg: str) -> dict[str, Any] | None:
    if not (msg.startswith("{") and msg.endswith("}")) or len(msg) > MAX_DICT_LINE:
        return None
    try:
        d = json.loads(msg)
    except RecursionError:  # nested deeper than a parser follows: no record
        return None
    except ValueError:
        try:
            d = ast.literal_eval(msg)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    if not isinstance(d, dict):
        return None
    return {str(k): _parsed_number(v) if isinstance(v, str) else v for k, v in d.items()}


def parse_text_line(line: str) -> tuple[dict[str, Any] | None, str]:
    """The record one text line holds, and which shape it had (``torchtune``,
    ``specforge``, ``dict``, ``pairs``); None and ``""`` when it holds none, and None
    and ``specforge_eval`` for an evaluation line (not a training step)."""
    msg, meta = _strip_prefix(line)
    if ("%|" in msg or "it/s" in msg or "s/it" in msg) and _PROGRESS.search(msg):
        return None, "progress"
    rec: dict[str, Any] | None = None
    shape = ""
    m = _TORCHTUNE.match(msg)
    if m:
        rec = {"step": _int(m.group(1))}
        for word in m.group(2).split():
            name, sep, value = word.partition(":")
            if sep and name:
                rec[name] = _parsed_number(value)
        shape = "torchtune"
    if rec is None:
        m = _SPECFORGE.match(msg)
        if m:
            if m.group(1) == "Eval":
                return None, "specforge_eval"
            rec = {"step": _int(m.group(2))}
            for part in m.group(3).split(","):
                name, sep, value = part.partition(":")
                if sep and name.strip():
                    rec[name.strip().lower()] = _parsed_number(value)
            shape = "specforge"
    if rec is None:
        rec = _dict_line(msg)
        shape = "dict" if rec is not None else ""
    if rec is None:
        pairs = {
            p.group("k"): _pair_value(p.group("v"), p.group("u"))
            for p in _PAIR.finditer(msg)
            if p.group("k")
        }
        lead = _LEAD_STEP.match(msg)
        if lead and "step" not in pairs:
            pairs = {"step": _int(lead.group(1)), **pairs}
        if len(pairs) >= 2:
            rec, shape = pairs, "pairs"
    if rec is None:
        return None, ""
    for k, v in meta.items():
        rec.setdefault(k, v)
    return rec, shape


def _csv_row(text: str) -> list[str]:
    """The cells of one CSV line; none when the csv module cannot read it as one (a
    bare carriage return inside a field, a NUL): such a line is not a CSV row."""
    try:
        return next(csv.reader([text]), [])
    except csv.Error:
        return []


def text_lines(head: bytes) -> list[bytes]:
    """``head``'s whole lines that hold text, stripped: past the blank ones and the NULs
    or invalid UTF-8 a crash or a preallocated file leaves at the top (its last line, cut
    by the read, left out where there are others)."""
    raw = head.split(b"\n")
    if len(raw) > 1 and not head.endswith(b"\n"):
        raw.pop()
    out = []
    for line in raw:
        line = line.strip()
        if not line or b"\x00" in line:
            continue
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            continue
        out.append(line)
    return out


def csv_header(first_line: bytes) -> list[str] | None:
    """The column names of a CSV header row, or None when the line is not one."""
    try:
        text = first_line.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None
    if not text or text.startswith("{"):
        return None
    row = _csv_row(text)
    if len(row) < 2 or any(not c.strip() for c in row):
        return None
    if not all(_COLUMN.match(c.strip()) for c in row):
        return None  # a row of numbers is data, a sentence with a comma no header
    return [c.strip() for c in row]


def parse_csv_row(raw: str, header: list[str]) -> dict[str, Any] | None:
    """One data row as a record (empty cells left out), None when its cell count is not
    the header's."""
    row = _csv_row(raw)
    if len(row) != len(header):
        return None
    return {k: _parsed_number(v) for k, v in zip(header, row) if v != ""}


# ``Trainer.train`` ends ``log_history`` with a summary of the run (``train_loss``,
# ``train_runtime``, averages over the run), not one more logging step. Step entries may
# carry ``train_runtime`` too (transformers 5 adds ``speed_metrics`` to each when it
# counts input tokens): a summary is the entry with no ``loss`` of its own.
RUN_SUMMARY_KEYS = ("train_loss", "train_runtime", "total_flos")


def trainer_state_records(
    doc: Any, positions: list[int] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int, dict[str, Any]]:
    """``trainer_state.json``'s ``log_history`` split into training-step records, run
    summaries and a count of evaluation entries, with the state's own step counters.
    ``positions``, when given, gets each step record's place in ``log_history``
    (1-based): what a figure cites in a document that has no lines. Raises ValueError
    when ``doc`` is not a trainer state."""
    if not isinstance(doc, dict) or not isinstance(doc.get("log_history"), list):
        raise ValueError("not a trainer state: no log_history list")
    steps: list[dict[str, Any]] = []
    summaries: list[dict[str, Any]] = []
    evals = 0
    for place, entry in enumerate(doc["log_history"], 1):
        if not isinstance(entry, dict):
            continue
        if "loss" not in entry and any(k in entry for k in RUN_SUMMARY_KEYS):
            summaries.append(entry)
        elif "loss" not in entry and any(str(k).startswith("eval_") for k in entry):
            evals += 1
        else:
            steps.append(entry)
            if positions is not None:
                positions.append(place)
    state = {
        k: doc[k]
        for k in (
            "global_step",
            "max_steps",
            "epoch",
            "logging_steps",
            "save_steps",
            "num_input_tokens_seen",
            "train_batch_size",
        )
        if k in doc and isinstance(doc[k], (int, float, type(None)))
    }
    return steps, summaries, evals, state


def sniff(path: str, head: bytes, fmt: str | None = None) -> tuple[str, str]:
    """The format of the log at ``path`` whose first bytes are ``head``, and why.
    ``fmt`` (the profile's) wins when given."""
    if fmt:
        if fmt not in FORMATS:
            raise ValueError(f"unknown log format {fmt!r} (know {', '.join(FORMATS)})")
        return fmt, "the profile says so"
    name = os.path.basename(path).lower()
    if name == "trainer_state.json":
        return "trainer_state", "named trainer_state.json"
    lines = text_lines(head)[:SNIFF_LINES]
    if b'"log_history"' in head[: 1 << 16] and lines and _a_state_document(lines[0]):
        return "trainer_state", "a JSON document with a log_history"
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl", "named *.jsonl"
    objects = sum(1 for ln in lines if ln.startswith(b"{") and ln.endswith(b"}"))
    if lines and objects * 2 > len(lines) and _looks_json(lines[0]):
        return "jsonl", "its lines are JSON objects"
    if lines and csv_header(lines[0]) is not None:
        width = len(csv_header(lines[0]) or [])
        rows = [_csv_row(ln.decode("utf-8", "replace")) for ln in lines[1:4]]
        if name.endswith(".csv") or (rows and all(len(r) == width for r in rows)):
            return "csv", "a header row and rows of as many cells" if not name.endswith(
                ".csv"
            ) else "named *.csv with a header row"
    if objects and _looks_json(lines[0]):
        return "jsonl", "its first line is a JSON object"
    return "text", "neither JSON lines, CSV nor a trainer state: read as text lines"


def _a_state_document(first: bytes) -> bool:
    """Whether a head that mentions ``log_history`` opens one JSON document (a trainer
    state): a first line that is only the start of an object (pretty-printed), or a whole
    object holding ``log_history`` (minified). A first line that is a whole object
    without it is JSON lines that happen to mention the word further down."""
    if not first.startswith(b"{"):
        return False
    try:
        doc = json.loads(first)
    except RecursionError:
        return False
    except ValueError:
        return True  # the first line of a document spread over lines
    return isinstance(doc, dict) and "log_history" in doc


def _looks_json(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except RecursionError:  # an object nested too deep to read is still one
        return line.startswith(b"{")
    except ValueError:
        return False
