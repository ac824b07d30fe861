"""Training logs in the formats trainers write: which format a file is, what a line
holds, and the summary (steps, loss, tokens/s, groups) with the schema it inferred.

Where the writer is installed (transformers' ``TrainerState``, Lightning's CSV writer)
the file is written by it; otherwise in the exact line format the trainer's public
source writes, named in the test's docstring.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.lib.need import need
from tools.parsers import logformats, trainlog
from tools.probes import trainlog as trainlog_probe
from tools.probes._common import Context, ProbeFailure


def summarize(path: Path, **kw: Any) -> dict[str, Any]:
    with io.FileIO(str(path), "r") as f:
        return trainlog.summarize_log(f, **kw)


def write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    p = tmp_path / name
    p.write_text("".join(line + "\n" for line in lines))
    return p


def torchtune_lines(steps: int) -> list[str]:
    """torchtune's ``DiskLogger.log_dict`` (torchtune/training/metric_logging.py):
    ``Step {step} | `` then ``{name}:{data} `` per metric (a space after each, the last
    too); the recipes log loss, lr, tokens_per_second_per_gpu and memory stats."""
    return [
        f"Step {i} | loss:{2.5 - i / 100} lr:2e-05 tokens_per_second_per_gpu:{1500.0 + i} "
        "peak_memory_active:12.31 "
        for i in range(1, steps + 1)
    ]


def specforge_lines(steps: int) -> list[str]:
    """SpecForge's scripts/train_dflash.py: ``record_metrics`` prints (print_on_rank0)
    ``Train - Step {global_step} [{global_step}/{total}?], Loss: {loss:.4f}, Acc:
    {accuracy:.4f}`` every ``--log-interval`` steps, between tqdm's progress bars and
    ``logging`` lines formatted ``%(asctime)s - %(levelname)s - %(name)s - %(message)s``
    with datefmt ``%m/%d/%Y %H:%M:%S``; evaluation prints ``Eval - Step …``."""
    out = ["12/01/2026 08:00:00 - INFO - specforge - Initialized distributed"]
    for i in range(1, steps + 1):
        out.append(
            f"Training Epoch 0:  {i}%|#         | {i}/100 [00:{i:02d}<01:40, 1.0it/s,"
            " loss=2.3000, acc=0.1000, iter_time=0.31s]"
        )
        out.append(
            f"Train - Step {i * 50} [{i * 50}/6000?], Loss: {2.3 - i / 100:.4f}, Acc: "
            f"{0.1 + i / 1000:.4f}"
        )
    out.append("Eval - Step 1000 [1000/6000?], Loss: 2.1000, Acc: 0.2000")
    return out


@pytest.mark.parametrize(
    ("name", "first", "expected"),
    [
        ("train_log.jsonl", '{"step": 1}', "jsonl"),
        ("history.log", '{"step": 1, "loss": 2.0}', "jsonl"),
        ("metrics.csv", "epoch,step,train_loss_step", "csv"),
        ("stats.txt", "step,loss,tok_s\n1,2.0,300\n2,1.9,310", "csv"),
        ("trainer_state.json", "{", "trainer_state"),
        ("state.json", '{\n  "best_metric": null,\n  "log_history": [],', "trainer_state"),
        ("log_1733040000.txt", "Step 1 | loss:2.5 lr:2e-05 ", "text"),
        ("train.log", "12/01/2026 08:00:00 - INFO - specforge - hi", "text"),
        ("out.log", "{'loss': 2.31, 'grad_norm': 1.2, 'learning_rate': 5e-05}", "text"),
    ],
)
def test_sniff_names_the_format(name: str, first: str, expected: str) -> None:
    """The format comes from the file's name where it says it, else from its first lines;
    the Python-dict line is no JSON: it is read as text (a dict literal), see below."""
    fmt, why = logformats.sniff(name, (first + "\n").encode())
    assert fmt == expected, why
    assert why


@pytest.mark.parametrize(
    ("line", "shape", "record"),
    [
        (
            "Step 7 | loss:2.43 lr:2e-05 tokens_per_second_per_gpu:1507.5 ",
            "torchtune",
            {"step": 7, "loss": 2.43, "lr": 2e-05, "tokens_per_second_per_gpu": 1507.5},
        ),
        (
            "Train - Step 350 [350/6000?], Loss: 2.2300, Acc: 0.1070",
            "specforge",
            {"step": 350, "loss": 2.23, "acc": 0.107},
        ),
        (
            "{'loss': 2.31, 'grad_norm': 1.25, 'learning_rate': 5e-05, 'epoch': 0.5}",
            "dict",
            {"loss": 2.31, "grad_norm": 1.25, "learning_rate": 5e-05, "epoch": 0.5},
        ),
        ("step=12 loss=1.75 tok/s=4,300", "pairs", {"step": 12, "loss": 1.75, "tok/s": 4300}),
        (
            "[rank1]: 2026-12-01 08:00:01,250 - INFO - train - step: 3, loss: 2.0, tps: 9000",
            "pairs",
            {"step": 3, "loss": 2.0, "tps": 9000, "rank": 1},
        ),
        ("iter 40 | loss 1.2 | step_time=0.5s", "pairs", {"step": 40, "step_time": 0.5}),
    ],
)
def test_text_lines(line: str, shape: str, record: dict[str, Any]) -> None:
    """Each shape of metrics line gives its record; numbers are numbers."""
    got, got_shape = logformats.parse_text_line(line)
    assert got_shape == shape
    assert got is not None
    assert {k: got[k] for k in record} == record


@pytest.mark.parametrize(
    "line",
    [
        "Training Epoch 0:  42%|####      | 42/100 [00:12<00:17, 3.4it/s, loss=2.3, acc=0.1]",
        "Loading checkpoint shards: done",
        "",
    ],
)
def test_lines_without_a_record(line: str) -> None:
    """A progress bar's postfix is a running display, not a logged step."""
    assert logformats.parse_text_line(line)[0] is None


def test_torchtune_disk_log(tmp_path: Path) -> None:
    """A torchtune log file reads as text records with the per-GPU throughput field."""
    out = summarize(write(tmp_path, "log_1733040000.txt", torchtune_lines(40)))
    assert out["format"] == "text"
    assert out["records"] == 40 and out["malformed"] == 0 and out["other_lines"] == 0
    assert out["steps"]["min"] == 1 and out["steps"]["max"] == 40
    schema = out["schema"]
    assert schema["throughput"] == "tokens_per_second_per_gpu"
    assert schema["shapes"] == {"torchtune": 40}
    assert "lr" in schema["ignored"] and "peak_memory_active" in schema["ignored"]
    assert out["throughput"]["median"] == pytest.approx(1520.5)


def test_specforge_stdout(tmp_path: Path) -> None:
    """SpecForge's console: its Train lines are the steps; progress bars, logging lines
    and Eval lines are other lines, not damage; it logs no throughput, and says so."""
    out = summarize(write(tmp_path, "train.log", specforge_lines(30)))
    assert out["records"] == 30 and out["malformed"] == 0
    assert out["other_lines"] == 32  # 30 progress bars, a logging line, an Eval line
    assert out["steps"]["min"] == 50 and out["steps"]["max"] == 1500
    assert out["steps"]["typical_increment"] == 50
    assert out["loss"]["last"] == pytest.approx(2.0)
    assert out["schema"]["throughput"] is None
    assert "no token count" in out["schema"]["why"]["throughput"]
    assert out["aggregates"]["all"]["recent_median"] is None


def test_ranks_from_line_prefixes_are_groups(tmp_path: Path) -> None:
    """torchrun's ``[rankN]:`` prefix makes one series per rank, and the aggregate sums
    the ranks' medians."""
    lines = [
        f"[rank{r}]: 2026-12-01 08:00:{i:02d},000 - INFO - train - step={i} loss=2.0 "
        f"tokens_per_second={1000 * (r + 1)}"
        for i in range(1, 31)
        for r in range(3)
    ]
    out = summarize(write(tmp_path, "console.log", lines))
    assert sorted(out["groups"]) == ["rank=0", "rank=1", "rank=2"]
    assert out["aggregates"]["all"]["recent_median"] == pytest.approx(6000)
    assert out["aggregates"]["all"]["how"] == "sum of the per-group medians"
    assert out["time"]["span_s"] == pytest.approx(29)


def test_csv_with_sparse_columns(tmp_path: Path) -> None:
    """Lightning's CSVLogger layout (lightning/fabric/loggers/csv_logs.py: sorted header,
    csv.DictWriter, empty cells where a row lacks a metric): per-step rows and the
    epoch-end row; a row with the wrong cell count is damage."""
    rows = ["epoch,step,train_loss_epoch,train_loss_step"]
    rows += [f"0,{i},,{3.0 - i / 100}" for i in range(40)]
    rows += ["0,39,2.8,", "0,40,oops"]
    out = summarize(write(tmp_path, "metrics.csv", rows))
    assert out["format"] == "csv"
    assert out["schema"]["loss"] == "train_loss_step"
    assert out["records"] == 41
    assert out["malformed_by_reason"] == {"csv_cells": 1}
    assert out["loss"]["count"] == 40


def trainer_state(tmp_path: Path, history: list[dict[str, Any]]) -> Path:
    p = tmp_path / "trainer_state.json"
    doc = {
        "global_step": history[-1]["step"],
        "max_steps": 200,
        "logging_steps": 5,
        "log_history": history,
    }
    p.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return p


def test_trainer_state_tokens_and_runtime_give_throughput(tmp_path: Path) -> None:
    """transformers 5's ``Trainer.log`` (trainer.py) with include_num_input_tokens_seen
    adds ``num_input_tokens_seen`` and ``speed_metrics`` (``train_runtime``,
    ``train_tokens_per_second``: averages since the start) to each entry; the speed is
    the Trainer's own figure, its average differenced within the run (no rate is derived
    from the token count beside it); the last entry (no ``loss``) is the run's summary,
    and eval entries are counted apart."""
    history: list[dict[str, Any]] = []
    tokens, runtime = 0, 0.0
    for i in range(1, 121):
        tokens += 5000
        # 1000 tok/s, then 250; rounded to 4 places as speed_metrics does, the runtime
        # shows its places (a whole 5.0 would read as rounded to the second).
        runtime = round(runtime + (20.0 if i > 60 else 5.0) + 0.00013 * (i % 7), 4)
        history.append(
            {
                "epoch": i / 120,
                "grad_norm": 1.1,
                "learning_rate": 5e-05,
                "loss": 3 - i / 100,
                "num_input_tokens_seen": tokens,
                "step": i * 5,
                "train_runtime": runtime,
                "train_tokens_per_second": round(tokens / runtime, 3),
            }
        )
    history.insert(40, {"epoch": 0.5, "eval_loss": 2.5, "eval_runtime": 1.0, "step": 100})
    history.append(
        {
            "epoch": 1.0,
            "step": 200,
            "total_flos": 1.0,
            "train_loss": 2.8,
            "train_runtime": runtime,
            "train_samples_per_second": 3.2,
            "train_steps_per_second": 0.8,
        }
    )
    out = summarize(trainer_state(tmp_path, history))
    assert out["format"] == "trainer_state"
    assert out["records"] == 120 and out["eval_records"] == 1
    assert out["run_summaries"][0]["train_loss"] == 2.8
    assert out["trainer_state"]["max_steps"] == 200
    schema = out["schema"]
    assert schema["derived"] is None
    assert "train_tokens_per_second" not in schema["ignored"]
    speed = out["speed"]
    assert (speed["kind"], speed["field"], speed["unit"]) == (
        "stated_average",
        "train_tokens_per_second",
        "tokens/s",
    )
    assert speed["how"] == (
        "difference of train_tokens_per_second x train_runtime over difference of train_runtime"
    )
    assert speed["early"]["value"] == pytest.approx(1000, rel=1e-3)
    assert speed["recent"]["value"] == pytest.approx(250, rel=1e-3)


def test_derived_from_per_step_tokens_and_step_time(tmp_path: Path) -> None:
    """One step's tokens over its step time."""
    recs = [{"step": i, "tokens": 4096, "step_time": 0.5} for i in range(1, 21)]
    p = write(tmp_path, "log.jsonl", [json.dumps(r) for r in recs])
    out = summarize(p)
    assert out["schema"]["derived"]["how"] == "tokens / step_time"
    assert out["throughput"]["median"] == pytest.approx(8192)


def test_derived_from_per_step_tokens_between_timestamps(tmp_path: Path) -> None:
    """Logged every 10 steps: one step's tokens times the steps between records, over
    the seconds between them, per rank."""
    recs = [
        {"step": i * 10, "rank": r, "ntokens": 1000, "time": 1.7e9 + i * 4.0}
        for i in range(1, 21)
        for r in range(2)
    ]
    out = summarize(write(tmp_path, "log.jsonl", [json.dumps(r) for r in recs]))
    assert out["schema"]["derived"]["tokens_kind"] == "per step"
    for g in ("rank=0", "rank=1"):
        assert out["groups"][g]["throughput"]["median"] == pytest.approx(2500)


def test_nested_names_and_eval_names(tmp_path: Path) -> None:
    """``train/loss`` is the loss; ``eval/loss`` never is; wandb's ``_step``."""
    recs = [
        {"_step": i, "eval/loss": 9.0, "train/loss": 2.0, "perf/throughput": 5.0e3}
        for i in range(10)
    ]
    out = summarize(write(tmp_path, "history.jsonl", [json.dumps(r) for r in recs]))
    schema = out["schema"]
    assert (schema["step"], schema["loss"], schema["throughput"]) == (
        "_step",
        "train/loss",
        "perf/throughput",
    )
    assert out["loss"]["median"] == 2.0
    assert schema["ignored"] == ["eval/loss"]


def test_profile_overrides_the_schema(tmp_path: Path) -> None:
    """The profile's format and field names win over what would be inferred."""
    lines = [f"it={i} speed={3.0} ntok={i * 1000} when={1.7e9 + i}" for i in range(1, 21)]
    p = write(tmp_path, "run.out", lines)
    plain = summarize(p)
    assert (plain["records"], plain["other_lines"]) == (0, 20)  # no common name in it
    out = summarize(
        p, fields={"format": "text", "step": "it", "throughput": "speed"}, throughput_unit="ktok/s"
    )
    assert out["records"] == 20
    assert out["schema"]["why"]["format"] == "the profile says so"
    assert out["schema"]["why"]["step"] == "named by the profile"
    assert out["throughput"]["median"] == pytest.approx(3000)
    derived = summarize(p, fields={"step": "it", "tokens": "ntok", "time": "when"})
    assert derived["schema"]["derived"]["tokens"] == "ntok"
    assert derived["throughput"]["median"] == pytest.approx(1000)


def test_unknown_profile_format_is_one_clear_error(tmp_path: Path) -> None:
    """A profile naming a log format that does not exist is one clear error naming it, not a
    guess."""
    p = write(tmp_path, "log.jsonl", ['{"step": 1}'])
    with pytest.raises(ValueError, match="unknown log format 'xml'"):
        summarize(p, fields={"format": "xml"})


def test_probe_takes_the_workspace_candidate_that_holds_steps(tmp_path: Path) -> None:
    """Given only a workspace, the probe reads the layout's candidates in order and keeps
    the first with training steps; the fact says which file and why the others lost."""
    ws = tmp_path / "ws"
    (ws / "logs").mkdir(parents=True)
    write(ws / "logs", "metrics.csv", ["epoch,step,note", "0,,warmup"])
    write(ws, "log_1733040000.txt", torchtune_lines(12))
    value = trainlog_probe.collect({"workspace": str(ws)}, Context())
    assert value["source"]["path"].endswith("log_1733040000.txt")
    assert value["steps"]["count"] == 12
    assert all(t["why_not"] for t in value["source"]["tried"])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ProbeFailure) as err:
        trainlog_probe.collect({"workspace": str(empty)}, Context())
    assert err.value.kind == "not_found"


@pytest.mark.slow
def test_files_the_real_writers_wrote(tmp_path: Path) -> None:
    """transformers' ``TrainerState.save_to_json`` and Lightning's CSV experiment writer
    write the files; the summary reads their steps and losses."""
    try:
        from lightning.fabric.loggers.csv_logs import _ExperimentWriter
        from transformers.trainer_callback import TrainerState
    except ImportError as exc:
        need(False, "transformers and lightning (the foreign extra)", str(exc))
        return
    state = TrainerState(global_step=50, max_steps=50, logging_steps=5)
    for step in range(5, 55, 5):
        state.log_history.append(
            {
                "loss": 3 - step / 100,
                "grad_norm": 1.0,
                "learning_rate": 5e-05,
                "epoch": step / 50,
                "step": step,
            }
        )
    state.log_history.append(
        {
            "train_runtime": 9.5,
            "train_samples_per_second": 4.2,
            "train_steps_per_second": 5.3,
            "total_flos": 0.0,
            "train_loss": 2.7,
            "epoch": 1.0,
            "step": 50,
        }
    )
    state.save_to_json(str(tmp_path / "trainer_state.json"))
    hf = summarize(tmp_path / "trainer_state.json")
    assert hf["format"] == "trainer_state"
    assert (hf["records"], hf["steps"]["max"], hf["schema"]["loss"]) == (10, 50, "loss")
    writer = _ExperimentWriter(str(tmp_path / "lightning"))
    for step in range(30):
        writer.log_metrics({"train_loss_step": 2.0 - step / 100, "epoch": 0}, step=step)
    writer.log_metrics({"train_loss_epoch": 1.9, "epoch": 0}, step=29)
    writer.save()
    pl = summarize(Path(writer.metrics_file_path))
    assert pl["format"] == "csv"
    assert (pl["records"], pl["steps"]["max"], pl["schema"]["loss"]) == (31, 29, "train_loss_step")
    assert pl["malformed"] == 0


def test_profile_log_fields_reach_the_probe() -> None:
    """``log_fields.format`` and ``tokens`` travel to the probe; an unknown format is
    refused with the known ones named; a workspace without a named log is passed on for
    the probe to look in."""
    from pydantic import ValidationError

    from tools.profile import LogFields
    from tools.sweep import SweepSpec, build_plan

    fields = LogFields(format="csv", tokens="num_tokens", step="it")
    spec = SweepSpec(workspace="/ws", log_fields=fields.as_params())
    [planned] = [p for p in build_plan(spec, only=["trainlog"]).probes]
    assert planned.params is not None
    assert planned.params["workspace"] == "/ws" and "path" not in planned.params
    assert planned.params["fields"] == {"format": "csv", "step": "it", "tokens": "num_tokens"}
    with pytest.raises(ValidationError, match="unknown log format 'xml'; known: jsonl, csv"):
        LogFields(format="xml")


def test_console_log_ending_in_a_progress_bar_is_not_cut(tmp_path: Path) -> None:
    """tqdm redraws its bar with a carriage return, so a live console log ends without a
    newline: that is no cut record (which would read as damage), while a CSV row cut
    mid-write is."""
    p = tmp_path / "train.log"
    p.write_text("\n".join(specforge_lines(5)) + "\nTraining Epoch 0:  6%|#  | 6/100 [00:06<")
    out = summarize(p)
    assert (out["cut_last_line"], out["unterminated_last_line"]) == (False, True)
    assert out["records"] == 5
    csv_log = tmp_path / "metrics.csv"
    csv_log.write_text("epoch,step,train_loss\n0,1,2.5\n0,2,2.4\n0,3")
    out = summarize(csv_log)
    assert out["cut_last_line"] is True and out["records"] == 2


def test_trainer_state_cut_mid_write(tmp_path: Path) -> None:
    """A trainer state that ends inside its JSON document was written in part: a cut
    file, as a cut last line is for a line log; one that is whole but no trainer state
    is damage of another kind."""
    whole = json.dumps({"log_history": [{"loss": 2.0, "step": 5}]}, indent=2)
    p = tmp_path / "trainer_state.json"
    p.write_text(whole[: len(whole) // 2])
    out = summarize(p)
    assert out["cut_last_line"] is True
    assert out["malformed_by_reason"] == {"cut_document": 1}
    p.write_text('{"global_step": 5}')
    out = summarize(p)
    assert out["cut_last_line"] is False
    assert out["malformed_by_reason"] == {"not_trainer_state": 1}
