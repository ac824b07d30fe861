"""The train_log.jsonl summary: schemas, series per device, damage, bounded reading."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.lib.probe_workspace import train_log_lines
from tools.parsers import trainlog
from tools.parsers._trainlog import values
from tools.probes import trainlog as trainlog_probe
from tools.probes._common import Context
from tools.probes._runner import _jsonable
from tools.sweep import SweepSpec, build_plan, sweep
from tools.transport.local import LocalTransport


def summarize(tmp_path: Path, content: str | bytes, **kw: Any) -> dict[str, Any]:
    p = tmp_path / "train_log.jsonl"
    p.write_bytes(content.encode() if isinstance(content, str) else content)
    with io.FileIO(str(p), "r") as f:
        return trainlog.summarize_log(f, **kw)


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
    """An unknown throughput unit is refused rather than read as tokens/s."""
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
        out = trainlog.summarize_log(f)
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
    """An empty train log is a summary of no records and no steps, not an error."""
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
            out = trainlog.summarize_log(f)
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
        cwd=Path(__file__).resolve().parents[2],
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
        one = trainlog.summarize_log(f, workers=1)
    with io.FileIO(str(p), "r") as f:
        many = trainlog.summarize_log(f, workers=workers)
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
        out = trainlog.summarize_log(f, max_scan=400_000, head=100_000, workers=3)
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
        fast = trainlog.summarize_log(f, workers=1)
    monkeypatch.setattr(values, "block_loads", json.loads)
    monkeypatch.setattr(values, "DECODER", "json")
    with io.FileIO(str(p), "r") as f:
        slow = trainlog.summarize_log(f, workers=1)
    assert _without(fast, {"decoder"}) == _without(slow, {"decoder"})
    assert slow["loss"]["nonfinite"] == 1


def test_the_bundle_carries_every_module_of_the_parser(tmp_path: Path) -> None:
    """On a target the parser runs from the bundle's sources, its package a bare
    namespace there: sent in one round trip, the trainlog probe summarises a damaged,
    restarted log exactly as it does in this process."""
    lines = train_log_lines(range(0, 400))
    lines[500] = "garbage {"
    lines[900:900] = train_log_lines(range(10, 20), t0=1.7e9 + 9000)
    p = tmp_path / "train_log.jsonl"
    p.write_text("\n".join(lines) + '\n{"step": 1, "dev')
    spec = SweepSpec(interpreter=sys.executable, train_log=str(p))
    shipped = sweep(LocalTransport(), spec, only=["trainlog"])["trainlog"]
    assert shipped.ok, shipped.error
    params = build_plan(spec, only=["trainlog"]).probes[0].params
    assert params is not None
    here = trainlog_probe.collect(dict(params), Context())
    # The log's pulse is the seconds since it last changed, read when each probe ran:
    # the one thing that differs between two reads of one file.
    there: Any = shipped.value
    ages = here["file"].pop("age_s"), there["file"].pop("age_s")
    assert all(isinstance(a, float) and a >= 0 for a in ages), ages
    assert json.loads(json.dumps(_jsonable(here))) == shipped.value
    assert here["steps"]["restarts"] == 3 and here["malformed"] == 2


def test_two_values_on_one_line_are_malformed(tmp_path: Path) -> None:
    """A line holding two objects is one bad line, and later line numbers stay right."""
    out = summarize(tmp_path, '{"step": 1}, {"step": 2}\n{"step": 3}\n[]\n')
    assert out["malformed_by_reason"] == {"not_json": 1, "not_object": 1}
    assert out["malformed_samples"][1]["line"] == 3
    assert out["records"] == 1


# -- one bad record never loses the summary (issue 14, item 9) -----------------------

BIG = "9" * 400  # an integer no float can hold: float(int(BIG)) raises OverflowError
DEEP = "[" * 2000 + "]" * 2000  # deeper than the stdlib parser's recursion limit


@pytest.fixture(params=["orjson", "json"])
def decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both block parsers the bundle may run with: orjson where the target has it, the
    stdlib's json where it does not (the line-by-line path is the stdlib's either way)."""
    if request.param == "json":
        monkeypatch.setattr(values, "block_loads", json.loads)
        monkeypatch.setattr(values, "DECODER", "json")
    return str(request.param)


def _good(steps: range) -> str:
    return jsonl([{"step": i, "tok/s": 100.0, "loss": 2.0} for i in steps])


def test_huge_integer_is_no_usable_number(tmp_path: Path, decoder: str) -> None:
    """A 400-digit number where a step, throughput or loss belongs is counted and sampled
    with its line and field; the record's other numbers and every other record count."""
    content = (
        _good(range(3))
        + '{"step": 3, "tok/s": ' + BIG + ', "loss": 2.0}\n'
        + '{"step": ' + BIG + ', "tok/s": 100.0, "loss": -' + BIG + "}\n"
        + _good(range(5, 8))
    )  # fmt: skip
    out = summarize(tmp_path, content)
    assert out["records"] == 8 and out["malformed"] == 0
    bad = out["unusable_numbers"]
    assert bad["count"] == 3
    assert bad["by_field"] == {"loss": 1, "step": 1, "throughput": 1}
    assert [(s["line"], s["field"]) for s in bad["samples"]] == [
        (4, "tok/s"),
        (5, "step"),
        (5, "loss"),
    ]
    assert all("400 digits" in s["reason"] for s in bad["samples"])
    assert out["steps"]["count"] == 7 and out["steps"]["max"] == 7
    assert out["throughput"]["count"] == 7 and out["throughput"]["median"] == 100.0
    assert out["loss"]["count"] == 7 and out["loss"]["max"] == 2.0
    json.dumps(out, allow_nan=False)  # the fact ships as strict JSON


def test_integer_past_the_digit_limit_is_no_usable_number(tmp_path: Path, decoder: str) -> None:
    """5,000 digits: Python >= 3.11 (and 3.8.14+) refuses to make an int of them. The
    record still counts, its number is unusable, the same as a shorter huge one."""
    content = _good(range(2)) + '{"step": 2, "tok/s": ' + "9" * 5000 + "}\n" + _good(range(3, 5))
    out = summarize(tmp_path, content)
    assert out["records"] == 5 and out["malformed"] == 0
    sample = out["unusable_numbers"]["samples"][0]
    assert (sample["line"], sample["field"]) == (3, "tok/s")
    assert out["throughput"]["count"] == 4 and out["steps"]["count"] == 5


def test_deep_nesting_is_one_bad_line(tmp_path: Path, decoder: str) -> None:
    """A record nested 2,000 deep (the parser's recursion limit) is one malformed line,
    in the middle of the log and as its last line alike."""
    content = (
        _good(range(3))
        + '{"step": 3, "x": ' + DEEP + "}\n"
        + _good(range(4, 6))
        + '{"step": 6, "x": ' + DEEP + "}"
    )  # fmt: skip
    out = summarize(tmp_path, content)
    assert out["records"] == 5
    assert out["malformed_by_reason"] == {"too_deep": 2}
    assert [s["line"] for s in out["malformed_samples"]] == [4, 7]
    assert out["steps"]["last"] == 5 and out["throughput"]["median"] == 100.0
    assert not out["cut_last_line"]


def test_bad_records_in_every_forked_piece(tmp_path: Path) -> None:
    """Read in forked pieces, a huge number or a deep record in any piece is handled as
    when read in one: the same counts, samples and line numbers."""
    lines = [json.dumps({"step": i, "tok/s": 100.0, "loss": 2.0}) for i in range(30000)]
    for at in (10, 15000, 29990):
        lines[at] = f'{{"step": {at}, "tok/s": {BIG}}}'
        lines[at + 1] = f'{{"step": {at + 1}, "x": {DEEP}}}'
    p = tmp_path / "train_log.jsonl"
    p.write_text("\n".join(lines) + "\n")
    with io.FileIO(str(p), "r") as f:
        one = trainlog.summarize_log(f, workers=1)
    with io.FileIO(str(p), "r") as f:
        many = trainlog.summarize_log(f, workers=3)
    skip = {"windows", "offset", "window_records"}
    assert _without(many, skip) == _without(one, skip)
    assert many["malformed_by_reason"] == {"too_deep": 3}
    assert [s["line"] for s in many["malformed_samples"]] == [12, 15002, 29992]
    assert [s["line"] for s in many["unusable_numbers"]["samples"]] == [11, 15001, 29991]
    assert many["records"] == 29997 and many["throughput"]["count"] == 29994


def test_trainer_state_with_bad_content(tmp_path: Path) -> None:
    """trainer_state.json nested too deep is a fact about the file; one with a huge
    number keeps its other steps."""
    p = tmp_path / "trainer_state.json"
    p.write_text('{"log_history": [{"step": 1, "loss": 1.0, "x": ' + DEEP + "}]}")
    with io.FileIO(str(p), "r") as f:
        deep = trainlog.summarize_log(f)
    assert deep["malformed_by_reason"] == {"too_deep": 1} and deep["records"] == 0
    p.write_text(
        '{"global_step": ' + BIG + ', "log_history": [{"step": 1, "loss": 1' + "0" * 400 + "},"
        ' {"step": 2, "loss": 1.5}]}'
    )
    with io.FileIO(str(p), "r") as f:
        big = trainlog.summarize_log(f)
    assert big["records"] == 2 and big["loss"]["count"] == 1 and big["loss"]["max"] == 1.5
    assert big["unusable_numbers"]["by_field"] == {"loss": 1}
    json.dumps(big)


@pytest.mark.parametrize(
    "bad",
    [
        "step " + "9" * 5000 + " loss=1.0 tok/s=100",
        "step 3 loss=1.0 tok/s=" + "9" * 5000,
        "step 3 loss=1.0 tok/s=" + BIG,
        '{"step": 3, "x": ' + DEEP + "}",
    ],
    ids=["step-past-digit-limit", "pair-past-digit-limit", "huge-pair", "deep-dict"],
)
def test_text_log_with_a_bad_line(tmp_path: Path, bad: str) -> None:
    """A console log's line with a huge number or a deep dict costs that line's number
    at most, never the summary."""
    good = "".join(f"step {i} loss=1.0 tok/s=100\n" for i in range(3))
    p = tmp_path / "train.log"
    p.write_text(good + bad + "\n" + good.replace("step ", "step 1"))
    with io.FileIO(str(p), "r") as f:
        out = trainlog.summarize_log(f)
    assert out["format"] == "text"
    assert out["throughput"]["median"] == 100.0 and out["steps"]["max"] == 12
    json.dumps(out, allow_nan=False)


def test_deep_first_line_of_an_unnamed_log(tmp_path: Path) -> None:
    """The format is sniffed from the first lines: a deep one there is not a crash."""
    p = tmp_path / "log.txt"
    p.write_text('{"step": 0, "x": ' + DEEP + "}\n" + _good(range(1, 4)))
    with io.FileIO(str(p), "r") as f:
        out = trainlog.summarize_log(f)
    assert out["format"] == "jsonl" and out["records"] == 3
    assert out["malformed_by_reason"] == {"too_deep": 1}


_SCALARS = st.one_of(
    st.integers(min_value=-(10**500), max_value=10**500),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.booleans(),
    st.none(),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)
_KEYS = st.sampled_from(["step", "tok/s", "loss", "time", "tokens", "device", "role", "x"])


def _json_line(rec: dict[str, Any]) -> bytes:
    try:
        return json.dumps(rec).encode()  # NaN and Infinity as Python writes them
    except ValueError:  # an int past the digit limit: written out by hand
        return b'{"step": ' + b"7" * 5000 + b"}"


_LINES = st.one_of(
    st.dictionaries(_KEYS, _VALUES, max_size=5).map(_json_line),
    st.integers(1, 3000).map(lambda n: ('{"step": 1, "x": ' + "[" * n + "]" * n + "}").encode()),
    st.integers(300, 5000).map(lambda n: b'{"step": 2, "tok/s": -' + b"9" * n + b"}"),
    st.sampled_from([b"NaN", b"Infinity", b'{"loss": -Infinity}', b'{"step": NaN}', b"[1]"]),
    st.binary(max_size=40),
    st.text(max_size=40).map(str.encode),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_LINES, max_size=12), sep=st.sampled_from([b"\n", b"\r\n"]))
# Found by this test: JSON lines that mention "log_history" were read as a trainer state.
@example(lines=[b"{}", b'"log_history"'], sep=b"\n")
def test_any_line_is_a_record_or_damage(lines: list[bytes], sep: bytes) -> None:
    """Whatever the lines hold (huge ints, deep nesting, NaN/Infinity, bytes that are not
    UTF-8), the summary never raises, ships as strict JSON, and counts every line once:
    as a record, a blank line or a malformed one."""
    clean = [ln.replace(b"\n", b" ").replace(b"\r", b" ") for ln in lines]
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "train_log.jsonl"
        p.write_bytes(b"".join(ln + sep for ln in clean))
        for block_loads in (values.block_loads, json.loads):
            saved = values.block_loads
            values.block_loads = block_loads
            try:
                with io.FileIO(str(p), "r") as f:
                    out = trainlog.summarize_log(f, workers=1)
            finally:
                values.block_loads = saved
            assert out["records"] + out["blank_lines"] + out["malformed"] == len(clean), out
            json.dumps(_jsonable(out), allow_nan=False)  # as the probe ships it
