"""The train-log parser's entry point (tools/parsers/_trainlog/summary.py): the throughput
unit asked for, the window size from a first look at the lines, which bytes were read
(``coverage``), and a ``trainer_state.json`` read whole as one document."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from tools.parsers._trainlog.summary import summarize_log


def summarize(path: Path, **kw: Any) -> dict[str, Any]:
    with io.FileIO(str(path), "r") as f:
        return summarize_log(f, workers=1, **kw)


def padded_lines(steps: range, width: int = 100) -> str:
    """JSON lines of exactly ``width`` bytes each, newline included."""
    out = []
    for s in steps:
        head = f'{{"step": {s}, "tok/s": 5.0, "pad": "'
        out.append(head + "x" * (width - len(head) - 3) + '"}\n')
    assert all(len(line) == width for line in out)
    return "".join(out)


def test_unknown_unit_names_the_known_ones(tmp_path: Path) -> None:
    """A throughput unit it does not know is refused with the unit and the ones it knows."""
    p = tmp_path / "train_log.jsonl"
    p.write_text('{"step": 1}\n')
    with pytest.raises(
        ValueError, match=r"^unknown throughput unit 'furlongs/s' \(know ktok/s, mtok/s, tok/s\)$"
    ):
        summarize(p, throughput_unit="furlongs/s")


@pytest.mark.parametrize(
    ("unit", "median"),
    [("tok/s", 4.3), ("KTOK/S", 4300.0), ("mtok/s", 4_300_000.0)],
    ids=["tokens", "thousands-any-case", "millions"],
)
def test_throughput_unit_scales_the_field(tmp_path: Path, unit: str, median: float) -> None:
    """The unit asked for (in any case) overrides the one guessed from the field's name."""
    p = tmp_path / "train_log.jsonl"
    p.write_text("".join(json.dumps({"step": i, "tok/s": 4.3}) + "\n" for i in range(3)))
    out = summarize(p, throughput_unit=unit)
    assert out["throughput"]["median"] == median
    assert out["schema"]["throughput_unit"] == unit.lower()


def test_full_read_coverage(tmp_path: Path) -> None:
    """A log under the scan limit is read whole, and the summary says so: every byte and
    line read, none skipped, its last line ended."""
    p = tmp_path / "train_log.jsonl"
    p.write_text(padded_lines(range(100, 130)))
    out = summarize(p)
    assert out["size"] == 3000
    assert out["coverage"] == {
        "mode": "full",
        "ranges": [[0, 3000]],
        "bytes_read": 3000,
        "skipped_bytes": 0,
        "lines_read": 30,
    }
    assert (out["unterminated_last_line"], out["cut_last_line"]) == (False, False)
    assert out["schema"]["why"]["format"] == "named *.jsonl"


def test_windows_are_sized_to_give_about_the_number_asked(tmp_path: Path) -> None:
    """From the length of the first lines the records are cut into windows so that the
    log gives about ``windows`` of them: 100 lines of 100 bytes, 10 windows of 10."""
    p = tmp_path / "train_log.jsonl"
    p.write_text(padded_lines(range(100, 200)))
    out = summarize(p, windows=10)
    assert out["window_records"] == 10
    assert [(w["first_step"], w["records"]) for w in out["windows"]] == [
        (100 + 10 * k, 10) for k in range(10)
    ]


def test_head_and_tail_coverage(tmp_path: Path) -> None:
    """A log over the scan limit is read as its head (at most a quarter of the limit) and
    the tail that fills the rest; the bytes between are counted as skipped."""
    p = tmp_path / "train_log.jsonl"
    p.write_text(padded_lines(range(1000, 2000)))  # 100,000 bytes
    out = summarize(p, max_scan=20_000, head=8_000)
    cov = out["coverage"]
    assert cov["mode"] == "head+tail"
    assert cov["ranges"] == [[0, 5_000], [85_000, 100_000]]
    assert cov["skipped_bytes"] == 80_000
    assert out["steps"]["first"] == 1000 and out["steps"]["last"] == 1999


def test_csv_named_by_the_profile_without_a_header_is_text(tmp_path: Path) -> None:
    """A profile that says CSV for a log whose first line is no header row gets it read as
    text lines, and the schema says why."""
    p = tmp_path / "run.log"
    p.write_text("".join(f"step {i} loss=2.0 tok/s=100\n" for i in range(3)))
    out = summarize(p, fields={"format": "csv"})
    assert out["format"] == "text"
    assert out["schema"]["why"]["format"] == "no CSV header row: read as text lines"
    assert out["records"] == 3


def _state(tmp_path: Path, history: list[dict[str, Any]], **state: Any) -> Path:
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps({**state, "log_history": history}, indent=2))
    return p


def test_trainer_state_records_are_cited_by_their_place_in_the_history(tmp_path: Path) -> None:
    """A trainer state's records have no lines: each is cited by its place in
    ``log_history`` (evaluation entries counted apart but keeping their place), and the
    whole document is read."""
    history = [
        {"step": 5, "loss": 2.0},
        {"step": 5, "eval_loss": 2.2},
        {"step": 10, "loss": float("nan")},
    ]
    p = _state(tmp_path, history, global_step=10, best_model_checkpoint="out/ckpt-5")
    size = p.stat().st_size
    out = summarize(p)
    assert out["line_unit"] == "log_history entry"
    assert out["loss"]["first_nonfinite"] == {"line": 3, "step": 10, "value": "nan"}
    assert (out["records"], out["eval_records"]) == (2, 1)
    assert out["trainer_state"] == {"global_step": 10}
    assert out["coverage"] == {
        "mode": "full",
        "ranges": [[0, size]],
        "bytes_read": size,
        "skipped_bytes": 0,
        "lines_read": None,
    }
    assert out["schema"]["why"]["format"] == (
        "a JSON document with a log_history (Trainer's state)"
    )


def test_trainer_state_windows_follow_the_history_length(tmp_path: Path) -> None:
    """A trainer state's windows are sized from its number of step records: 5 records in
    2 windows are windows of 3 and 2."""
    p = _state(tmp_path, [{"step": s, "loss": 2.0} for s in range(1, 6)])
    out = summarize(p, windows=2)
    assert out["window_records"] == 3
    assert [w["records"] for w in out["windows"]] == [3, 2]


@pytest.mark.parametrize(
    ("content", "max_scan", "reason", "mode"),
    [
        ('{"log_history": []}' + " " * 100, 50, "too_large", "none"),
        ('{"log_history": []} trailing words', 1 << 20, "not_json", "full"),
    ],
    ids=["over-the-scan-limit", "text-after-the-document"],
)
def test_trainer_state_that_cannot_be_read(
    tmp_path: Path, content: str, max_scan: int, reason: str, mode: str
) -> None:
    """A trainer state larger than the scan limit is not read at all, and one with text
    after its document is no JSON: either is one piece of damage, no records, and not a
    cut file."""
    p = tmp_path / "trainer_state.json"
    p.write_text(content)
    out = summarize(p, max_scan=max_scan)
    assert out["malformed_by_reason"] == {reason: 1}
    assert out["records"] == 0
    assert out["coverage"]["mode"] == mode
    assert out["cut_last_line"] is False
