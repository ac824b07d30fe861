"""The train_log.jsonl summary: schemas, series per device, damage, bounded reading."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.test_probe_support import train_log_lines
from tools.parsers import trainlog


def summarize(tmp_path: Path, content: str | bytes, **kw: Any) -> dict[str, Any]:
    p = tmp_path / "train_log.jsonl"
    p.write_bytes(content.encode() if isinstance(content, str) else content)
    with io.FileIO(str(p), "r") as f:
        return trainlog.summarize(f, **kw)


def jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


@pytest.mark.parametrize(
    ("field", "value", "tok_s"),
    [
        ("tok/s", 12800, 12800),
        ("tokens_per_sec", 12800, 12800),
        ("tok_per_sec", 12800, 12800),
        ("tokens_per_s", 12800, 12800),
        ("throughput", 12800, 12800),
        ("ktok_s", 12.8, 12800),
        ("Ktok/s", 4.3, 4300),
    ],
)
def test_throughput_field_names_and_units(
    tmp_path: Path, field: str, value: float, tok_s: float
) -> None:
    """Common field names are recognised and normalised to tokens/s."""
    out = summarize(tmp_path, jsonl([{"step": i, field: value} for i in range(5)]))
    assert out["fields"]["throughput"] == field
    assert out["throughput"]["median"] == pytest.approx(tok_s)
    assert out["throughput"]["unit"] == "tok/s"


def test_profile_names_unusual_fields(tmp_path: Path) -> None:
    """A profile can name fields the aliases do not know, nested ones with dots."""
    recs = [{"it": i, "perf": {"tps": 4.3}, "when": 1.7e9 + i} for i in range(4)]
    out = summarize(
        tmp_path,
        jsonl(recs),
        fields={"step": "it", "throughput": "perf.tps", "time": "when"},
        throughput_unit="ktok/s",
    )
    assert out["steps"]["last"] == 3
    assert out["throughput"]["median"] == pytest.approx(4300)
    assert out["time"]["span_s"] == pytest.approx(3)


def test_unknown_unit_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown throughput unit"):
        summarize(tmp_path, "{}\n", throughput_unit="furlongs")


def test_reference_trainer_log_is_split_per_device(tmp_path: Path) -> None:
    """One line per device and step (the reference trainer): steps are judged per
    series, so interleaved devices are not mistaken for restarts."""
    out = summarize(tmp_path, "\n".join(train_log_lines(range(0, 100, 10))) + "\n")
    assert out["group_fields"] == ["role", "device"]
    assert out["steps"]["restarts"] == 0
    drafter = out["groups"]["role=drafter,device=cuda:2"]
    assert drafter["throughput"]["median"] == pytest.approx(4266.0)
    assert drafter["steps"]["typical_increment"] == 10
    assert out["windows"][0]["tok_s_median_by_group"]["role=target,device=cuda:0"] == 4000.0


def test_restart_and_time_gap_are_located(tmp_path: Path) -> None:
    """A step that goes back is a restart with its line; a long silence is a gap."""
    recs = [{"step": s, "loss": 2.0, "tok/s": 12800, "time": 1000.0 + s} for s in range(10)]
    recs += [{"step": s, "loss": 2.0, "tok/s": 4300, "time": 5000.0 + s} for s in range(5, 10)]
    out = summarize(tmp_path, jsonl(recs))
    assert out["steps"]["restarts"] == 1
    sample = out["steps"]["restart_samples"][0]
    assert (sample["line"], sample["from_step"], sample["to_step"]) == (11, 9, 5)
    gap = out["time"]["gaps"][0]
    assert gap["line"] == 11 and gap["seconds"] == pytest.approx(3996)
    assert out["throughput"]["last"] == 4300


def test_step_jump_is_reported(tmp_path: Path) -> None:
    """Missing steps (a jump larger than the usual increment) are listed."""
    recs = [{"step": s} for s in (*range(0, 50, 10), 200, 210)]
    out = summarize(tmp_path, jsonl(recs))
    jump = out["steps"]["largest_jumps"][0]
    assert (jump["from_step"], jump["to_step"]) == (40, 200)


def test_cut_last_line(tmp_path: Path) -> None:
    """A writer killed mid-line leaves a last line that does not parse: it is counted
    as cut, and everything before it is summarised."""
    out = summarize(tmp_path, jsonl([{"step": 1}, {"step": 2}]) + '{"step": 3, "lo')
    assert out["cut_last_line"] and not out["unterminated_last_line"]
    assert out["malformed_by_reason"] == {"cut_last_line": 1}
    assert out["steps"]["last"] == 2


def test_unterminated_but_complete_last_line(tmp_path: Path) -> None:
    """A last record without its newline that parses is a record (a live log)."""
    out = summarize(tmp_path, jsonl([{"step": 1}]) + '{"step": 2}')
    assert out["unterminated_last_line"] and not out["cut_last_line"]
    assert out["records"] == 2


def test_binary_garbage_and_bad_lines_are_counted(tmp_path: Path) -> None:
    """Garbage never stops the summary; each bad line is counted by reason."""
    good = jsonl([{"step": i, "tok/s": 100} for i in range(3)]).encode()
    content = good + b"\x00\xff\xfe garbage\n" + b"[1, 2]\n" + b"{not json\n" + b"\n" + good
    out = summarize(tmp_path, content)
    assert out["malformed_by_reason"] == {"binary": 1, "not_json": 1, "not_object": 1}
    assert out["blank_lines"] == 1
    assert out["records"] == 6
    assert out["malformed_samples"][0]["line"] == 4


def test_random_bytes_file(tmp_path: Path) -> None:
    """A file of random bytes is all damage, no crash."""
    out = summarize(tmp_path, os.urandom(300_000))
    assert out["records"] == 0
    assert out["malformed"] >= 1


def test_fifty_megabyte_line(tmp_path: Path) -> None:
    """A single 50 MB line is one overlong line; the records around it are kept."""
    p = tmp_path / "train_log.jsonl"
    with p.open("wb") as f:
        f.write(b'{"step": 1, "tok/s": 10}\n')
        f.write(b'{"blob": "' + b"a" * (50 << 20) + b'"}\n')
        f.write(b'{"step": 2, "tok/s": 10}\n')
    with io.FileIO(str(p), "r") as f:
        out = trainlog.summarize(f)
    assert out["malformed_by_reason"] == {"overlong": 1}
    assert out["records"] == 2 and out["steps"]["last"] == 2


def test_non_numeric_values_and_nan(tmp_path: Path) -> None:
    """Strings, booleans and NaN where numbers belong are skipped and counted."""
    content = (
        '{"step": 1, "loss": NaN, "tok/s": "fast"}\n'
        '{"step": 2, "loss": 1.5, "tok/s": true}\n'
        '{"step": 3, "loss": 1.0, "tok/s": 100}\n'
    )
    out = summarize(tmp_path, content)
    assert out["loss"]["nonfinite"] == 1 and out["loss"]["count"] == 2
    assert out["throughput"]["count"] == 1


def test_iso_timestamps(tmp_path: Path) -> None:
    """ISO-8601 times (with Z) are understood."""
    recs = [
        {"step": 1, "time": "2026-01-01T00:00:00Z"},
        {"step": 2, "time": "2026-01-01T00:10:00Z"},
    ]
    out = summarize(tmp_path, jsonl(recs))
    assert out["time"]["span_s"] == pytest.approx(600)


def test_empty_file(tmp_path: Path) -> None:
    out = summarize(tmp_path, b"")
    assert out["records"] == 0 and out["steps"]["count"] == 0


def test_bounded_sample_keeps_quantiles_honest(tmp_path: Path) -> None:
    """Past max_values the quantiles come from a systematic sample, and say so."""
    recs = [{"step": i, "tok/s": float(i % 100)} for i in range(5000)]
    out = summarize(tmp_path, jsonl(recs), max_values=500)
    tok = out["throughput"]
    assert not tok["exact"] and tok["sampled_every"] > 1
    assert tok["count"] == 5000
    assert 40 <= tok["median"] <= 60


def test_head_and_tail_of_a_large_log(tmp_path: Path) -> None:
    """Over max_scan, head and tail are read; restarts are not invented across the gap."""
    recs = [{"step": i, "tok/s": 12800} for i in range(20000)]
    out = summarize(tmp_path, jsonl(recs), max_scan=200_000, head=50_000)
    cov = out["coverage"]
    assert cov["mode"] == "head+tail" and cov["skipped_bytes"] > 0
    assert out["steps"]["first"] == 0 and out["steps"]["last"] == 19999
    assert out["steps"]["restarts"] == 0


@pytest.mark.slow
def test_multi_gigabyte_log_reads_tail_first_in_bounded_memory(tmp_path: Path) -> None:
    """A 3 GB log (sparse in the middle) is summarised from head and tail with flat
    memory: the child's peak RSS stays far below the file size."""
    p = tmp_path / "train_log.jsonl"
    head = jsonl([{"step": i, "tok/s": 12800, "time": 1000.0 + i} for i in range(1000)])
    tail = jsonl([{"step": i, "tok/s": 4300, "time": 9e5 + i} for i in range(5000, 9000)])
    with p.open("wb") as f:
        f.write(head.encode())
        f.truncate(3 << 30)  # a hole: reads as NUL bytes, costs no disk
        f.seek(0, os.SEEK_END)
        f.write(b"\n" + tail.encode())
    code = textwrap.dedent(f"""
        import io, json
        from tools.parsers import trainlog
        with io.FileIO({str(p)!r}, "r") as f:
            out = trainlog.summarize(f)
        # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forking
        # (pytest) process, while VmHWM belongs to this process image alone.
        hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM")][0]
        print(json.dumps({{"rss_mb": int(hwm.split()[1]) / 1024,
                          "cov": out["coverage"], "last": out["steps"]["last"],
                          "recent": out["throughput"]["recent_median"]}}))
    """)
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    out = json.loads(res.stdout)
    assert out["cov"]["mode"] == "head+tail"
    assert out["cov"]["bytes_read"] <= 512 << 20
    assert out["last"] == 8999 and out["recent"] == 4300
    assert out["rss_mb"] < 200, out


def _without(value: Any, keys: set[str]) -> Any:
    if isinstance(value, dict):
        return {k: _without(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [_without(v, keys) for v in value]
    return value


@pytest.mark.parametrize("workers", [2, 3])
def test_parallel_pieces_give_the_sequential_summary(tmp_path: Path, workers: int) -> None:
    """Read in forked pieces and merged, the summary is the sequential one: counts,
    restarts and their lines, gaps, per-device series, damage. Only the windows (cut
    at the piece boundaries) and the block offsets may differ."""
    lines = train_log_lines(range(0, 3000))
    lines[4000] = "garbage {"
    lines[7000:7000] = train_log_lines(range(10, 20), t0=1.7e9 + 9000)  # a restart + gap
    content = "\n".join(lines) + '\n{"step": 1, "dev'
    p = tmp_path / "train_log.jsonl"
    p.write_text(content)
    with io.FileIO(str(p), "r") as f:
        one = trainlog.summarize(f, workers=1)
    with io.FileIO(str(p), "r") as f:
        many = trainlog.summarize(f, workers=workers)
    skip = {"windows", "offset", "window_records"}
    assert _without(many, skip) == _without(one, skip)
    assert many["steps"]["restarts"] == 3 and many["malformed"] == 2
    assert many["time"]["gaps"][0]["line"] == 7001


def test_parallel_head_and_tail(tmp_path: Path) -> None:
    """Pieces of a head+tail read merge without inventing a restart across the gap."""
    recs = [{"step": i, "tok/s": 12800, "time": float(i)} for i in range(30000)]
    p = tmp_path / "train_log.jsonl"
    p.write_text(jsonl(recs))
    with io.FileIO(str(p), "r") as f:
        out = trainlog.summarize(f, max_scan=400_000, head=100_000, workers=3)
    assert out["coverage"]["mode"] == "head+tail"
    assert out["steps"]["restarts"] == 0 and out["time"]["gaps"] == []
    assert out["steps"]["last"] == 29999 and out["records"] < 30000


def test_orjson_and_stdlib_give_the_same_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """orjson, where the target has it, only speeds up the block parse: the summary is
    the stdlib one (NaN, which orjson refuses, takes the line-by-line path)."""
    content = "\n".join(train_log_lines(range(0, 500))) + '\n{"step": 3, "loss": NaN}\n'
    p = tmp_path / "train_log.jsonl"
    p.write_text(content)
    with io.FileIO(str(p), "r") as f:
        fast = trainlog.summarize(f, workers=1)
    monkeypatch.setattr(trainlog, "_block_loads", json.loads)
    monkeypatch.setattr(trainlog, "DECODER", "json")
    with io.FileIO(str(p), "r") as f:
        slow = trainlog.summarize(f, workers=1)
    assert _without(fast, {"decoder"}) == _without(slow, {"decoder"})
    assert slow["loss"]["nonfinite"] == 1


def test_two_values_on_one_line_are_malformed(tmp_path: Path) -> None:
    """A line holding two objects is one bad line, and later line numbers stay right."""
    out = summarize(tmp_path, '{"step": 1}, {"step": 2}\n{"step": 3}\n[]\n')
    assert out["malformed_by_reason"] == {"not_json": 1, "not_object": 1}
    assert out["malformed_samples"][1]["line"] == 3
    assert out["records"] == 1
