"""Which figure is a run's speed (tools/parsers/_trainlog/speed.py): the trainer's own
first, in its own unit, and a derived one only where none is stated, each said with its
formula; and what each figure in the fact is recomputed from (tests/lib/oracle/)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from agent.analysis.throughput import subject
from agent.model.facts import Fact, Ledger
from tests.lib import oracle
from tools.parsers.trainlog import summarize_log


def summarize(path: Path) -> dict[str, Any]:
    with io.FileIO(str(path)) as f:
        out = summarize_log(f)
    assert oracle.check(path, out) == []
    return out


def jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


T0 = 1_700_000_000.25


@pytest.mark.parametrize(
    ("name", "records", "kind", "field", "unit", "how"),
    [
        (
            "stated tokens/s wins over a token count beside it",
            [
                {"step": s, "tok/s": 900.0, "num_input_tokens_seen": 100 * s, "time": T0 + s}
                for s in range(1, 41)
            ],
            "stated",
            "tok/s",
            "tokens/s",
            "tok/s as stated at each record",
        ),
        (
            "Lightning's ThroughputMonitor: items/s before samples/s, the whole process's"
            " before one device's",
            [
                {
                    "step": s,
                    "train/device/items_per_sec": 1000.0,
                    "train/items_per_sec": 2000.0,
                    "train/samples_per_sec": 60.0,
                }
                for s in range(1, 41)
            ],
            "stated",
            "train/items_per_sec",
            "items/s",
            "train/items_per_sec as stated at each record",
        ),
        (
            "samples/s alone",
            [{"step": s, "throughput/samples_per_sec": 60.0} for s in range(1, 41)],
            "stated",
            "throughput/samples_per_sec",
            "samples/s",
            "throughput/samples_per_sec as stated at each record",
        ),
        (
            "a running token count over timestamps",
            [{"step": s, "num_input_tokens_seen": 100 * s, "time": T0 + s} for s in range(1, 41)],
            "derived",
            "num_input_tokens_seen",
            "tokens/s",
            "difference of num_input_tokens_seen over difference of time",
        ),
        (
            "the last resort: steps over the records' clock",
            [{"step": 5 * s, "loss": 2.0, "time": T0 + 2.5 * s} for s in range(1, 41)],
            "derived",
            "step",
            "steps/s",
            "difference of step over difference of time",
        ),
    ],
)
def test_the_trainers_own_figure_first(
    tmp_path: Path,
    name: str,
    records: list[dict[str, Any]],
    kind: str,
    field: str,
    unit: str,
    how: str,
) -> None:
    """The trainer's stated rate is the speed, items/s over samples/s and the process's over one
    device's, and a rate is derived only where none is stated; the judged figure names its unit and
    window."""
    out = summarize(jsonl(tmp_path / "log.jsonl", records))
    speed = out["speed"]
    assert (speed["kind"], speed["field"], speed["unit"], speed["how"]) == (kind, field, unit, how)
    assert field not in out["schema"]["ignored"]
    # The judged figure is named in the trainer's unit and says its window.
    found = subject(Fact(probe="trainlog", target="local", value=out))
    assert found is not None
    assert found.label.startswith(f"{unit} (")
    assert f"last {speed['recent']['records']} records" in found.label


def test_a_clock_written_to_the_second_is_not_differenced_over_two_seconds(
    tmp_path: Path,
) -> None:
    """Whole-second timestamps 2 s apart could be 1.5 to 2.5 s apart: the rate over one
    such interval is withheld (its error bound is past a fifth of it), never guessed;
    over 40 s the same clock is good enough."""
    records = [
        {"step": s, "num_input_tokens_seen": 512 * s, "time": 1_700_000_000 + 2 * s}
        for s in range(1, 41)
    ]
    few = summarize(jsonl(tmp_path / "seconds.jsonl", records))
    assert few["windows"][1]["speed"] is None
    assert few["windows"][1]["speed_error"] > 0.2 * 256
    assert few["speed"]["recent"]["value"] == pytest.approx(256.0)
    assert few["speed"]["recent"]["error"] < 0.2 * 256


def test_a_repeated_step_is_no_restart(tmp_path: Path) -> None:
    """Lightning's CSVLogger writes a row per log call: the ThroughputMonitor's and the
    loss's for one step are two rows with the same step, and one run segment."""
    rows = ["step,train_loss,train/items_per_sec"]
    for s in range(4, 64, 5):
        rows += [f"{s},,1000.0", f"{s},2.5,"]
    path = tmp_path / "metrics.csv"
    path.write_text("\n".join(rows) + "\n")
    out = summarize(path)
    assert [seg["why"] for seg in out["speed"]["segments"]] == ["the log's first record"]
    ledger = Ledger()
    fact = ledger.append(Fact(probe="trainlog", target="local", value=out))
    assert subject(fact) is not None


def test_a_rate_that_changes_its_unit_on_the_way_is_one_speed(tmp_path: Path) -> None:
    """tok/s for 40 records, then the same run logging ktok/s: the speed stays in
    tokens/s (the oracle reads each record in its own unit), and the change is in the
    schema's changes, with its line."""
    records = [{"step": s, "tok/s": 4000.0} for s in range(1, 41)]
    records += [{"step": s, "ktok/s": 4.0} for s in range(41, 81)]
    out = summarize(jsonl(tmp_path / "units.jsonl", records))
    assert [w["speed"] for w in out["windows"]] == [4000.0] * len(out["windows"])
    (change,) = out["schema_changes"]
    assert (change["line"], change["from"], change["to"]) == (41, "tok/s", "ktok/s")
