"""Lines to records: a block of JSON lines parsed in one call where it is clean, else
line by line; CSV rows and text lines through ``logformats``; every line that holds no
record counted as damage (or, in a console log, as another line) by reason.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

from typing import Any

from .. import logformats
from . import values
from .fields import find_alias
from .summarizer import Summarizer
from .values import SAMPLE_BYTES, SAMPLES, TOO_DEEP, loads


def block(
    summ: Summarizer, first_line: int | None, offset: int, data: bytes, overlong: list[int]
) -> None:
    """A block of whole lines (``LineReader``'s) into ``summ``: ``first_line`` its first
    line's number (None in the tail of a huge log), ``offset`` its first byte's,
    ``overlong`` the numbers of its lines cut at ``max_line``."""
    if summ.fmt == "jsonl" and not overlong:
        try:
            # One C call for a whole block of well-formed lines is ~2x faster than a
            # json.loads per line. A blank or bad line makes it fail (",," is not
            # JSON), and two values on one line make the count differ: either way
            # the block goes down the slow path, line by line.
            parsed = values.block_loads(b"[" + data.replace(b"\n", b",") + b"]")
        except (ValueError, RecursionError):  # the stdlib's json on a deep record
            parsed = None
        if (
            parsed is not None
            and len(parsed) == data.count(b"\n") + 1
            and set(map(type, parsed)) == {dict}
        ):
            n = len(parsed)
            nums: list[int | None] = (
                [None] * n if first_line is None else list(range(first_line, first_line + n))
            )
            # Offsets per record would cost a pass over the lines; the block's offset
            # locates every record of the block to within a megabyte.
            summ.batch(parsed, nums, [offset] * n)
            return
    lines = data.split(b"\n")
    bad_lines = set(overlong)
    recs: list[dict[str, Any]] = []
    rec_lines: list[int | None] = []
    rec_offsets: list[int] = []
    pos = offset
    for i, raw in enumerate(lines):
        line = None if first_line is None else first_line + i
        if line is not None and line in bad_lines:
            summ.bad("overlong", line, pos, b"")
        elif not raw.strip():
            summ.blank += 1
        else:
            d = parse_one(summ, raw, line, pos)
            if d is not None:
                recs.append(d)
                rec_lines.append(line)
                rec_offsets.append(pos)
        pos += len(raw) + 1
    summ.batch(recs, rec_lines, rec_offsets)


def last_line(
    summ: Summarizer, line: int | None, offset: int, data: bytes, overlong: list[int]
) -> bool:
    """The final line, with no newline after it; True if it was a whole record."""
    d = None
    if summ.fmt != "jsonl":
        if not overlong:
            d = parse_other(summ, data, line, offset, last=True)
        if d is None:
            if summ.fmt == "text" and not overlong:
                # Console logs end without a newline all the time (tqdm redraws its
                # bar with a carriage return): a last line that holds no record is
                # unterminated, not a record cut mid-write.
                summ.other_lines += 1
                return True
            summ.bad("cut_last_line", line, offset, data)
            return False
        summ.batch([d], [line], [offset])
        return True
    if not overlong:
        try:
            d = loads(data)
        except ValueError:
            d = None
        except RecursionError:
            # Too deep to follow: no sign of a cut, and no record either.
            summ.bad(TOO_DEEP, line, offset, data)
            return True
    if not isinstance(d, dict):
        summ.bad("cut_last_line", line, offset, data)
        return False
    summ.batch([d], [line], [offset])
    return True


def parse_other(
    summ: Summarizer, raw: bytes, line: int | None, offset: int, last: bool = False
) -> dict[str, Any] | None:
    """A CSV row or a text line as a record (None: damage, or no record in it)."""
    binary = b"\x00" in raw
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        binary = True
    if binary:
        if not last:
            summ.bad("binary", line, offset, raw)
        return None
    if summ.fmt == "csv":
        assert summ.header is not None
        if text.strip() == summ.header_raw:
            return None
        d = logformats.parse_csv_row(text, summ.header)
        if d is None and not last:
            summ.bad("csv_cells", line, offset, raw)
        return d
    d, shape = logformats.parse_text_line(text)
    if d is not None and not recognised(summ, d):
        d, shape = None, ""
    if d is None:
        if not last:
            summ.other_lines += 1
            if len(summ.other_samples) < SAMPLES:
                sample = {"line": line, "sample": text[:SAMPLE_BYTES]}
                summ.other_samples.append(sample)
        return None
    summ.shapes[shape] = summ.shapes.get(shape, 0) + 1
    return d


def recognised(summ: Summarizer, d: dict[str, Any]) -> bool:
    """A text record counts when it holds a step, loss, throughput or token count
    (else ``lr=3e-4 warmup=100`` on a config line would be a training step)."""
    for role in ("step", "loss", "throughput", "tokens"):
        name = summ.fixed.get(role)
        if (name in d) if name else find_alias(role, d) is not None:
            return True
    return False


def parse_one(summ: Summarizer, raw: bytes, line: int | None, offset: int) -> dict[str, Any] | None:
    if summ.fmt != "jsonl":
        return parse_other(summ, raw, line, offset)
    try:
        d = loads(raw)
    except RecursionError:
        summ.bad(TOO_DEEP, line, offset, raw)
        return None
    except ValueError:
        # Both invalid UTF-8 and invalid JSON land here; binary garbage is the former
        # (or has NULs), which says something different about the disk than a typo.
        binary = b"\x00" in raw
        if not binary:
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                binary = True
        summ.bad("binary" if binary else "not_json", line, offset, raw)
        return None
    if not isinstance(d, dict):
        summ.bad("not_object", line, offset, raw)
        return None
    return d
