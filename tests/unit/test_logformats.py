"""tools/parsers/logformats.py knows the shapes a training log's records come in (JSON
lines, CSV rows under a header, Hugging Face's ``trainer_state.json``, text lines a person
reads) and which one a file is: each reader turns a line (or the state document) into
plain records, with numbers as numbers and a ``logging`` prefix's time and rank kept.

tests/e2e/test_parse_logformats.py reads whole logs of each shape; here each reader is
held to its own contract line by line."""

from __future__ import annotations

import io
import math
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tools.parsers import logformats, trainlog
from tools.parsers.logformats import (
    csv_header,
    parse_csv_row,
    parse_text_line,
    sniff,
    text_lines,
    trainer_state_records,
)

NEW_YEAR_2026 = 1_767_225_600.0  # 2026-01-01T00:00:00Z in epoch seconds


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("3", 3),
        (" 7 ", 7),
        ("-5", -5),
        ("+3.0", 3.0),
        ("1e-4", 0.0001),
        ("1,234", 1234),
        ("12,345,678.5", 12_345_678.5),
        ("tensor(2.5, device='cuda:0')", 2.5),
        ("tensor(4)", 4),
        ("inf", math.inf),
        ("-inf", -math.inf),
        ("1,23", "1,23"),
        ("fast", "fast"),
    ],
    ids=[
        "int",
        "padded-int",
        "negative",
        "signed-float",
        "exponent",
        "thousands",
        "thousands-with-decimals",
        "tensor-repr",
        "int-tensor",
        "inf",
        "negative-inf",
        "comma-not-thousands",
        "word",
    ],
)
def test_a_cell_is_read_as_the_number_it_shows(text: str, number: Any) -> None:
    """Ints stay ints and floats floats; thousands separators and a tensor's repr are
    read through; text that is no number stays the text."""
    got = logformats._parsed_number(text)
    assert got == number
    assert type(got) is type(number)


def test_nan_is_read_as_nan() -> None:
    """``nan`` is the float NaN (it equals nothing, so it is checked apart)."""
    got = logformats._parsed_number("nan")
    assert isinstance(got, float) and math.isnan(got)


def test_an_integer_past_pythons_digit_limit_is_infinity_not_an_error() -> None:
    """An integer with more digits than Python will convert is read as the float it
    would be (inf), which no summary takes for a number, instead of failing the line."""
    assert logformats._parsed_number("9" * 5000) == math.inf


@pytest.mark.parametrize(
    ("line", "record", "shape"),
    [
        ("\x1b[32mstep=5 loss=2.0\x1b[0m", {"step": 5, "loss": 2.0}, "pairs"),
        (
            "2026-01-01T00:00:00.250Z INFO step=5 loss=2.0",
            {"step": 5, "loss": 2.0, "time": NEW_YEAR_2026 + 0.25},
            "pairs",
        ),
        (
            "[2026-01-01 00:00:01+00:00] [rank3]: step=1 loss=2",
            {"step": 1, "loss": 2, "rank": 3, "time": NEW_YEAR_2026 + 1},
            "pairs",
        ),
        (
            '2026-01-01T00:00:00Z {"time": 5.0, "loss": 1.0}',
            {"time": 5.0, "loss": 1.0},
            "dict",
        ),
        ("step 7: loss=1.5", {"step": 7, "loss": 1.5}, "pairs"),
        ("INFO:root:Step 3 | loss:2.5", {"step": 3, "loss": 2.5}, "torchtune"),
        ("{'loss': '2.5', 'epoch': 1}", {"loss": 2.5, "epoch": 1}, "dict"),
        ("loss=2.0 acc=95%", {"loss": 2.0, "acc": 95}, "pairs"),
    ],
    ids=[
        "ansi-colours",
        "iso-time-and-level",
        "time-then-rank",
        "records-own-time-wins",
        "leading-step-word",
        "level-without-time",
        "dict-with-string-number",
        "percent-suffix",
    ],
)
def test_a_text_line_gives_its_record_with_what_its_prefix_said(
    line: str, record: dict[str, Any], shape: str
) -> None:
    """Colours, a ``logging`` time (UTC here), a level and a rank tag are taken off the
    line; the time and rank join the record unless it has its own; ``step N`` before the
    pairs is the step; a dict's string numbers are numbers."""
    assert parse_text_line(line) == (record, shape)


def test_a_local_logging_time_is_read_as_local_time() -> None:
    """``logging``'s ``%m/%d/%Y %H:%M:%S`` carries no zone: it is the machine's local
    time, as ``logging`` wrote it."""
    rec, _ = parse_text_line("12/01/2026 08:00:00 - INFO - train - step=3 loss=1.0")
    assert rec == {"step": 3, "loss": 1.0, "time": datetime(2026, 12, 1, 8, 0, 0).timestamp()}


@pytest.mark.parametrize(
    ("line", "shape"),
    [
        ("loss=2.0", ""),
        ("Eval - Step 10 [10/100], Loss: 2.0", "specforge_eval"),
        ("Epoch 1:  42%|####      | 42/100 [00:12<00:17, 3.4it/s, loss=2.3, lr=0.1]", "progress"),
        ("128it [00:40,  1.61s/it, loss=2.3, lr=0.1]", "progress"),
        ("{1, 2}", ""),
        ("{'loss': 1.0, 'note': '" + "a " * logformats.MAX_DICT_LINE + "'}", ""),
        ("2026-13-45T00:00:00Z loading", ""),
    ],
    ids=[
        "one-pair",
        "evaluation",
        "tqdm-bar",
        "tqdm-no-total",
        "set-literal",
        "dict-too-long",
        "bad-date",
    ],
)
def test_a_text_line_without_a_training_record(line: str, shape: str) -> None:
    """One number is no record; an evaluation line is named as such; a progress bar's
    postfix is a display, not a step; a literal that is not a dict, or a dict line too
    long to evaluate, holds none."""
    assert parse_text_line(line) == (None, shape)


@pytest.mark.parametrize(
    ("head", "lines"),
    [
        (b"a\nb\n", [b"a", b"b"]),
        (b"a\nb", [b"a"]),
        (b"only", [b"only"]),
        (b"\x00\x00\x00\n  \n\xff\xfe\nstep=1 x=2\n", [b"step=1 x=2"]),
        (b"  padded  \n", [b"padded"]),
    ],
    ids=["whole", "last-cut-by-the-read", "single-unfinished", "nul-blank-invalid", "stripped"],
)
def test_text_lines_are_the_heads_whole_readable_lines(head: bytes, lines: list[bytes]) -> None:
    """The lines sniffing looks at: stripped, past blanks, NULs and invalid UTF-8, and
    without the last line the read cut (unless it is the only one)."""
    assert text_lines(head) == lines


@pytest.mark.parametrize(
    ("line", "header"),
    [
        (b"step,loss,lr", ["step", "loss", "lr"]),
        (b" epoch , train/loss ", ["epoch", "train/loss"]),
        (b"step", None),
        (b"step,,loss", None),
        (b"1,2.5,0.1", None),
        (b"Loading model, please wait", None),
        (b'{"step": 1, "loss": 2}', None),
        (b"\xff,\xfe", None),
        (b"", None),
    ],
    ids=[
        "names",
        "padded-nested-names",
        "one-column",
        "empty-cell",
        "numbers",
        "sentence",
        "json",
        "invalid-utf8",
        "empty",
    ],
)
def test_csv_header_is_a_row_of_metric_names(line: bytes, header: list[str] | None) -> None:
    """A header is two or more cells, none empty, each a metric's name; a row of
    numbers, a sentence with a comma or a JSON object is none."""
    assert csv_header(line) == header


@pytest.mark.parametrize(
    ("row", "record"),
    [
        ("1,2.5,", {"step": 1, "loss": 2.5}),
        ('3,"1,234",0.1', {"step": 3, "loss": 1234, "lr": 0.1}),
        ("1,2", None),
        ("1,2,3,4", None),
        ("1\r2,3,4", None),
    ],
    ids=["sparse", "quoted-thousands", "too-few-cells", "too-many-cells", "bare-carriage-return"],
)
def test_a_csv_row_is_a_record_of_the_headers_names(
    row: str, record: dict[str, Any] | None
) -> None:
    """A row with as many cells as the header is a record (empty cells left out); any
    other count, or a line the csv module cannot read as one row, is none."""
    assert parse_csv_row(row, ["step", "loss", "lr"]) == record


def test_trainer_state_splits_steps_summaries_and_evaluations() -> None:
    """``log_history`` entries with a loss (or neither a summary's nor an evaluation's
    keys) are steps, cited by their 1-based place; an entry without a loss holding a run
    summary's keys is a summary, one with ``eval_`` keys an evaluation; entries that are
    not objects are skipped. The state's own counters come along where they are numbers
    or null."""
    step1 = {"loss": 2.0, "step": 1}
    step2 = {"loss": 1.8, "step": 2, "train_runtime": 5.0}
    lr_only = {"step": 3, "learning_rate": 1e-5}
    summary = {"train_loss": 1.9, "train_runtime": 10.0, "step": 3}
    doc = {
        "log_history": [step1, {"eval_loss": 1.9, "step": 1}, "junk", step2, lr_only, summary],
        "global_step": 3,
        "max_steps": 10,
        "epoch": 1.0,
        "logging_steps": "x",
        "train_batch_size": None,
        "best_metric": 0.5,
    }
    positions: list[int] = []
    steps, summaries, evals, state = trainer_state_records(doc, positions)
    assert steps == [step1, step2, lr_only]
    assert positions == [1, 4, 5]
    assert summaries == [summary]
    assert evals == 1
    assert state == {"global_step": 3, "max_steps": 10, "epoch": 1.0, "train_batch_size": None}


@pytest.mark.parametrize(
    "doc",
    [[], {"log_history": {}}, {"global_step": 3}],
    ids=["a-list", "history-not-a-list", "no-history"],
)
def test_a_document_without_a_log_history_list_is_no_trainer_state(doc: Any) -> None:
    """Anything but an object holding a ``log_history`` list is refused, saying so."""
    with pytest.raises(ValueError, match=r"^not a trainer state: no log_history list$"):
        trainer_state_records(doc)


@pytest.mark.parametrize(
    ("path", "head", "profile", "fmt", "why"),
    [
        ("x.log", b"step=1 loss=2\n", "csv", "csv", "the profile says so"),
        ("/runs/a/Trainer_State.JSON", b"", None, "trainer_state", "named trainer_state.json"),
        (
            "state.json",
            b'{\n  "log_history": [\n',
            None,
            "trainer_state",
            "a JSON document with a log_history",
        ),
        (
            "state.json",
            b'{"log_history": [], "global_step": 3}\n',
            None,
            "trainer_state",
            "a JSON document with a log_history",
        ),
        ("run.ndjson", b"garbage\n", None, "jsonl", "named *.jsonl"),
        (
            "x.log",
            b'{"step": 1}\n{"note": "log_history"}\n',
            None,
            "jsonl",
            "its lines are JSON objects",
        ),
        ("out.log", b'\x00\x00\x00\n{"step": 1}\n', None, "jsonl", "its lines are JSON objects"),
        (
            "mixed.log",
            b'{"step": 1}\nhello\nworld\n',
            None,
            "jsonl",
            "its first line is a JSON object",
        ),
        ("metrics.csv", b"step,loss\n", None, "csv", "named *.csv with a header row"),
        ("stats.txt", b"step,loss\n1,2.0\n", None, "csv", "a header row and rows of as many cells"),
        (
            "stats.txt",
            b"step,loss\n1,2.0,3\n",
            None,
            "text",
            "neither JSON lines, CSV nor a trainer state: read as text lines",
        ),
    ],
    ids=[
        "profile",
        "named-state-any-case",
        "pretty-state",
        "minified-state",
        "named-ndjson",
        "jsonl-mentioning-log-history",
        "jsonl-after-nul-preallocation",
        "first-line-object",
        "named-csv",
        "unnamed-csv",
        "rows-of-other-widths",
    ],
)
def test_sniff_says_which_format_and_why(
    path: str, head: bytes, profile: str | None, fmt: str, why: str
) -> None:
    """The profile's format wins; then the name ``trainer_state.json``; a head that opens
    one JSON document holding ``log_history``; a ``.jsonl``/``.ndjson`` name; mostly
    JSON-object lines; a header row (named ``.csv``, or with rows as wide); a first line
    that is an object; and last, text. Each answer says why."""
    assert sniff(path, head, profile) == (fmt, why)


def test_sniff_refuses_a_format_it_does_not_know() -> None:
    """A profile naming an unknown format is refused, naming it and the known ones."""
    with pytest.raises(
        ValueError, match=r"^unknown log format 'xml' \(know jsonl, csv, trainer_state, text\)$"
    ):
        sniff("x.log", b"", "xml")


# What ``_PAIR`` matched before it was made to read a line in one pass (with the time
# units it reads now): the plain statement of the rule, held equal to the fast pattern.
_PLAIN_NUMBER = r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan"
_PLAIN_PAIR = re.compile(
    r"(?P<k>[A-Za-z_][\w./\-()]*)\s*[=:]\s*(?P<v>"
    + _PLAIN_NUMBER
    + r")(?P<u>s|ms|us|µs|μs|%)?(?![\w.])"
)


@pytest.mark.parametrize(
    ("line", "record"),
    [
        ("a" * 200_000, None),
        ("a" * 200_000 + " step=3 loss=2.5", {"step": 3, "loss": 2.5}),
        ("a1" * 100_000 + " step=3 loss=2.5", {"step": 3, "loss": 2.5}),
        ("/a" * 100_000 + " step=3 loss=2.5", {"step": 3, "loss": 2.5}),
        ("blob=" + "1" * 200_000 + "x step=3 loss=2.5", {"step": 3, "loss": 2.5}),
        ("1" * 200_000 + " it/s step=3 loss=2.5", {"step": 3, "loss": 2.5}),
    ],
    ids=["word-run", "word-run-then-pairs", "alnum-run", "path-run", "digit-value", "digit-run"],
)
def test_a_long_unbroken_run_is_read_once_not_from_every_start(
    line: str, record: dict[str, Any] | None
) -> None:
    """A line that is one 200,000-character run (a printed base64 blob, a hex dump, a
    long path, a number glued to a word) holds no pair, and the pairs after it are
    read as on a short line. Each run is read once: tried from every start, as before,
    such a line took minutes (one of 1 MiB, ``max_line``, hours)."""
    assert parse_text_line(line) == (record, "pairs" if record else "")


@given(st.text(alphabet="aZ_19.,=: -/()e%smuµμ\t", max_size=40))
def test_pairs_are_read_as_the_plain_rule_reads_them(text: str) -> None:
    """The one-pass pattern finds exactly the pairs (name, number, unit, place) that the
    plain pattern, tried from every start, finds on any short text."""
    fast = [
        (m.group("k"), m.group("v"), m.group("u"), m.span())
        for m in logformats._PAIR.finditer(text)
        if m.group("k")
    ]
    plain = [
        (m.group("k"), m.group("v"), m.group("u"), m.span()) for m in _PLAIN_PAIR.finditer(text)
    ]
    assert fast == plain


@pytest.mark.parametrize(
    ("line", "seconds"),
    [
        ("step=4 iter_time=512ms", 0.512),
        ("step=4 iter_time=0.512s", 0.512),
        ("step=4 iter_time=0.512", 0.512),
        ("step=4 iter_time=250us", 0.00025),
        ("step=4 iter_time=250µs", 0.00025),
        ("step=4 iter_time=250μs", 0.00025),
        ("step=4 iter_time: 1,500ms", 1.5),
    ],
    ids=[
        "milliseconds",
        "seconds",
        "bare",
        "microseconds",
        "micro-sign",
        "greek-mu",
        "thousands-ms",
    ],
)
def test_a_time_with_a_unit_is_read_in_seconds(line: str, seconds: float) -> None:
    """A value followed by ``ms`` or ``us`` (``µs``, ``μs``) is that many thousandths or
    millionths of a second; ``s`` or no unit is seconds as written (512 ms is 0.512 s)."""
    assert parse_text_line(line) == ({"step": 4, "iter_time": seconds}, "pairs")


def test_a_step_time_in_milliseconds_gives_the_throughput_in_seconds(tmp_path: Path) -> None:
    """4096 tokens a step at ``iter_time=512ms`` is 4096 / 0.512 = 8000 tokens/s, as
    with ``iter_time=0.512s``, not 4096 / 512 = 8."""
    for time_text in ("512ms", "0.512s"):
        log = tmp_path / f"train-{time_text}.log"
        log.write_text(
            "".join(
                f"step={i} loss=2.0 num_tokens=4096 iter_time={time_text}\n" for i in range(1, 11)
            )
        )
        with io.FileIO(str(log), "r") as f:
            summary = trainlog.summarize_log(f, workers=1)
        assert summary["fields"]["step_time"] == "iter_time"
        assert summary["throughput"]["median"] == pytest.approx(8000.0, rel=1e-12)
