"""tools.probes._layout_files: the role the layout walk gives one file (train log, console
log, script, config, launch file, saved environment list, dataset...), told by its name and,
where the name cannot tell, by a peek at its first (or last) bytes; and the rank that puts
the best candidate of each role first."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tools.probes._layout_files import (
    MAX_PEEKS,
    PEEK,
    STDOUT_NAMES,
    TEXT_STEP,
    Files,
    _first_object,
)

MTIME = 1_700_000_000.0


def _place(
    root: Path,
    rel: str,
    content: bytes = b"",
    depth: int = 1,
    in_ckpt: bool = False,
    files: Files | None = None,
    mtime: float = MTIME,
) -> dict[str, list[dict[str, Any]]]:
    """Write ``rel`` under ``root``, hand it to ``Files`` as the walk would, and return the
    roles that received a candidate."""
    files = files if files is not None else Files()
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    os.utime(path, (mtime, mtime))
    files._file(str(path), path.name, depth, in_ckpt, os.stat(path))
    return {role: [dict(c) for c in found] for role, found in files.out.items() if found}


def _ordered(files: Files, role: str) -> list[str]:
    """The role's candidates best first, as the layout probe orders them."""
    return [c["path"] for c in sorted(files.out[role], key=lambda c: files.rank[id(c)])]


# -- told by the name alone ------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "depth", "role", "why"),
    [
        ("run-abc.wandb", 1, "skipped", "a wandb run blob: not read"),
        ("requirements.txt", 2, "env_files", "named like a saved environment list"),
        ("pip_freeze.txt", 1, "env_files", "named like a saved environment list"),
        ("train.py", 1, "scripts", "a Python file 1 level down"),
        ("pkg/sub/model.py", 3, "scripts", "a Python file 3 levels down"),
        ("launch.sh", 1, "launch_files", "a shell/batch script"),
        ("job.SBATCH", 2, "launch_files", "a shell/batch script"),
        ("cfg/model.yaml", 2, "configs", "a configuration file"),
        ("setup.cfg", 1, "configs", "a configuration file"),
        ("training_args.json", 1, "configs", "a JSON file named like a configuration"),
        ("notes.md", 1, "unrecognised", "no known role"),
        ("results.json", 2, "unrecognised", "no known role"),
    ],
    ids=[
        "wandb-blob",
        "requirements",
        "pip-freeze",
        "script-top",
        "script-deep",
        "launch-sh",
        "sbatch-upper-case",
        "yaml",
        "cfg",
        "json-named-config",
        "unknown-near-top",
        "unknown-json-near-top",
    ],
)
def test_role_by_name(tmp_path: Path, rel: str, depth: int, role: str, why: str) -> None:
    """A file whose name tells its role is placed there, with the reason, and nowhere
    else."""
    path = str(tmp_path / rel)
    assert _place(tmp_path, rel, b"content\n", depth) == {role: [{"path": path, "why": why}]}


@pytest.mark.parametrize(
    ("rel", "depth"),
    [("a/b/c/d/deep.py", 4), ("a/b/notes.md", 3), ("a/b/results.json", 3)],
    ids=["script-too-deep", "unknown-too-deep", "unknown-json-too-deep"],
)
def test_deep_files_without_a_role_are_not_listed(tmp_path: Path, rel: str, depth: int) -> None:
    """A script below ``SCRIPT_DEPTH`` and an unknown file below two levels are dropped:
    listing every stray file deep in a tree would drown the candidates."""
    assert _place(tmp_path, rel, b"x\n", depth) == {}


def test_a_checkpoints_own_files_are_left_to_the_checkpoints_probe(tmp_path: Path) -> None:
    """Inside a checkpoint, a script, a log or a config is not a candidate of the layout."""
    files = Files()
    for rel in ("checkpoint-5/train.py", "checkpoint-5/log.txt", "checkpoint-5/config.yaml"):
        _place(tmp_path, rel, b"step 1\n", depth=2, in_ckpt=True, files=files)
    assert all(found == [] for found in files.out.values())


@pytest.mark.parametrize(
    ("rel", "depth", "why"),
    [
        ("out/trainer_state.json", 2, "Hugging Face Trainer state (log_history), the run's own"),
        (
            "out/checkpoint-500/trainer_state.json",
            3,
            "Hugging Face Trainer state (log_history), as of checkpoint step 500",
        ),
    ],
    ids=["output-dir", "inside-a-checkpoint"],
)
def test_trainer_state_is_a_train_log_even_inside_a_checkpoint(
    tmp_path: Path, rel: str, depth: int, why: str
) -> None:
    """A Trainer's trainer_state.json is a train log wherever it lies, saying whose state
    it is: the output dir's own, or a checkpoint's as of its step."""
    found = _place(tmp_path, rel, b"{}", depth, in_ckpt=rel.count("/") == 2)
    assert found == {
        "train_logs": [
            {"path": str(tmp_path / rel), "why": why, "kind": "trainer_state", "mtime": MTIME}
        ]
    }


def test_columnar_files_are_datasets_of_their_format(tmp_path: Path) -> None:
    """A parquet or arrow file is a dataset whose kind is its extension, lower-cased."""
    files = Files()
    _place(tmp_path, "train.PARQUET", b"PAR1", files=files)
    _place(tmp_path, "shard.arrow", b"ARROW1", files=files)
    assert files.out["dataset"] == [
        {"path": str(tmp_path / "train.PARQUET"), "why": "a columnar data file", "kind": "parquet"},
        {"path": str(tmp_path / "shard.arrow"), "why": "a columnar data file", "kind": "arrow"},
    ]


def test_a_json_file_in_a_data_directory_is_a_dataset(tmp_path: Path) -> None:
    """A JSON file not named like a config is a dataset when its directory is a data
    directory, which the reason names."""
    found = _place(tmp_path, "prompts/items.json", b"[]", depth=2)
    assert found == {
        "dataset": [
            {
                "path": str(tmp_path / "prompts/items.json"),
                "why": "a JSON file in prompts/",
                "kind": "json",
            }
        ]
    }


# -- JSON lines: told by the first record ----------------------------------------------


@pytest.mark.parametrize(
    ("record", "role", "why"),
    [
        (b'{"step": 1, "loss": 2.0}', "train_logs", "JSON lines with a step field (step)"),
        (b'{"Global_Step": 1}', "train_logs", "JSON lines with a step field (global_step)"),
        (b'{"step": 1, "iter": 1}', "train_logs", "JSON lines with a step field (iter)"),
        (b'{"step": 3, "text": "hi"}', "train_logs", "JSON lines with a step field (step)"),
        (b'{"loss": 2.0, "lr": 0.1}', "train_logs", "JSON lines with metric fields"),
        (b'{"tokens_per_s": 900}', "train_logs", "JSON lines with metric fields"),
        (b'{"prompt": "a", "answer": "b"}', "dataset", "JSON lines with a text field (prompt)"),
        (b'{"messages": [], "input": "x"}', "dataset", "JSON lines with a text field (input)"),
        (
            b'{"input_ids": [1], "loss_mask": [1]}',
            "dataset",
            "JSON lines with a text field (input_ids)",
        ),
    ],
    ids=[
        "step",
        "step-key-any-case",
        "first-step-key-sorted",
        "step-beats-text",
        "metrics",
        "metric-hint-inside-a-key",
        "prompt",
        "first-text-key-sorted",
        "text-silences-metric-hints",
    ],
)
def test_json_lines_role_by_the_first_record(
    tmp_path: Path, record: bytes, role: str, why: str
) -> None:
    """A step key makes a train log; failing that a text key makes a dataset; failing both,
    a metric-looking key makes a train log. The reason names the key that decided (the
    first in sorted order)."""
    found = _place(tmp_path, "events.jsonl", record + b"\n" + record + b"\n")
    assert [(r, c["why"]) for r, cs in found.items() for c in cs] == [(role, why)]
    assert found[role][0]["kind"] == "jsonl"


def test_json_lines_train_log_carries_its_mtime(tmp_path: Path) -> None:
    """A train log candidate keeps the file's mtime (the newest log is the live one)."""
    found = _place(tmp_path, "metrics.ndjson", b'{"step": 1}\n')
    assert found == {
        "train_logs": [
            {
                "path": str(tmp_path / "metrics.ndjson"),
                "why": "JSON lines with a step field (step)",
                "kind": "jsonl",
                "mtime": MTIME,
            }
        ]
    }


def test_json_lines_skip_what_is_not_a_record_before_the_first_one(tmp_path: Path) -> None:
    """Blank lines, binary junk, a JSON list and a broken object before the first record
    do not hide it."""
    content = b'\n\x00\x00\x00\n[1, 2]\n{"step": \nplain text\n{"step": 7, "loss": 1}\n'
    found = _place(tmp_path, "log.jsonl", content)
    assert found["train_logs"][0]["why"] == "JSON lines with a step field (step)"


def test_json_lines_whose_records_lie_past_the_peek_are_read_from_the_tail(
    tmp_path: Path,
) -> None:
    """A file whose first ``PEEK`` bytes hold no record (a config dump, a crash's NULs) is
    told by its last whole lines."""
    content = b"\x00" * (PEEK + 5000) + b"\n" + b'{"step": 5, "loss": 1.5}\n'
    found = _place(tmp_path, "train_log.jsonl", content)
    assert found["train_logs"][0]["why"] == "JSON lines with a step field (step)"


def test_json_lines_in_a_data_directory_without_known_keys_are_a_dataset(tmp_path: Path) -> None:
    """Records with no step, text or metric key are a dataset in a data directory (ranked
    after those with a text key), and unrecognised elsewhere."""
    files = Files()
    _place(tmp_path, "data/rows.jsonl", b'{"id": 1, "label": "x"}\n', depth=2, files=files)
    _place(tmp_path, "data/qa.jsonl", b'{"question": "q"}\n', depth=2, files=files)
    _place(tmp_path, "rows.jsonl", b'{"id": 1, "label": "x"}\n', files=files)
    assert [c["why"] for c in files.out["dataset"]] == [
        "JSON lines in data/",
        "JSON lines with a text field (question)",
    ]
    assert _ordered(files, "dataset") == [
        str(tmp_path / "data/qa.jsonl"),
        str(tmp_path / "data/rows.jsonl"),
    ]
    assert files.out["unrecognised"] == [
        {"path": str(tmp_path / "rows.jsonl"), "why": "no known role"}
    ]


def test_peeks_are_bounded(tmp_path: Path) -> None:
    """After ``MAX_PEEKS`` files have been opened no more are: a JSON lines file is then
    left unrecognised, however clearly its records would have said what it is."""
    files = Files()
    files.peeks = MAX_PEEKS
    found = _place(tmp_path, "log.jsonl", b'{"step": 1}\n', files=files)
    assert found == {
        "unrecognised": [{"path": str(tmp_path / "log.jsonl"), "why": "no known role"}]
    }
    assert files.peeks == MAX_PEEKS


# -- CSV: told by the header -------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "content", "role", "why"),
    [
        ("metrics.csv", b"step,loss\n1,2.0\n", "train_logs", "CSV with a step column (step)"),
        ("m.csv", b'"Epoch" , "train/loss"\n0,1\n', "train_logs", "CSV with a step column (epoch)"),
        (
            "m.csv",
            b"epoch,global_step\n0,1\n",
            "train_logs",
            "CSV with a step column (global_step)",
        ),
        ("m.csv", b"\xff\xfe\n\nstep,loss\n", "train_logs", "CSV with a step column (step)"),
        ("data/rows.csv", b"text,label\n", "dataset", "a CSV file in data/"),
        ("rows.csv", b"text,label\n", "unrecognised", "no known role"),
    ],
    ids=[
        "step-column",
        "quoted-epoch-any-case",
        "step-key-beats-epoch",
        "junk-before-header",
        "data-directory",
        "elsewhere",
    ],
)
def test_csv_role_by_its_header(
    tmp_path: Path, rel: str, content: bytes, role: str, why: str
) -> None:
    """A header with a step column (or, failing that, an epoch column) makes a train log;
    otherwise a CSV is a dataset in a data directory and unrecognised elsewhere."""
    found = _place(tmp_path, rel, content, depth=rel.count("/") + 1)
    assert [(r, c["why"]) for r, cs in found.items() for c in cs] == [(role, why)]


# -- text files: console logs and step lines -----------------------------------------------


@pytest.mark.parametrize(
    ("name", "console"),
    [
        ("nohup.out", True),
        ("stdout.txt", True),
        ("rank0_STDOUT.log", True),
        ("job.out", True),
        ("console-0.log", True),
        ("train_out.txt", True),
        ("output.log", False),
        ("layout.txt", False),
        ("timeout.log", False),
        ("nohup.out.1", True),
    ],
    ids=[
        "nohup",
        "stdout",
        "stdout-any-case",
        "dot-out",
        "console-dash",
        "underscore-out",
        "output-is-not-out",
        "out-inside-a-word",
        "timeout",
        "rotated-nohup",
    ],
)
def test_stdout_names(name: str, console: bool) -> None:
    """A console log is told by ``stdout`` anywhere in the name, ``out`` or ``console`` as
    a separate word of it (a rotated ``nohup.out.1`` too), or ``nohup.out`` itself."""
    assert bool(STDOUT_NAMES.search(name.lower())) is console


@pytest.mark.parametrize(
    ("line", "has_step"),
    [
        ("step 10 loss 2.0", True),
        ("Train - Step 12 [lr=1e-4]", True),
        ("global_step=300", True),
        ("{'step': 3, 'loss': 1.0}", True),
        ('{"step": 4}', True),
        ("iteration: 7 | loss 0.5", True),
        ("[iter 9] ok", True),
        ("|step:5|", True),
        ("steps 5", False),
        ("mystep 5", False),
        ("epoch 3 loss 1.0", False),
        ("step: done", False),
    ],
    ids=[
        "plain",
        "specforge",
        "key-value",
        "python-dict",
        "json",
        "iteration-colon",
        "bracketed-iter",
        "pipe-delimited",
        "steps-plural",
        "inside-a-word",
        "epoch-only",
        "no-number",
    ],
)
def test_text_step_lines(line: str, has_step: bool) -> None:
    """A text line holds a step when ``step``, ``global_step``, ``iter`` or ``iteration``
    starts a word and a number follows (an ``=`` or ``:`` between allowed)."""
    assert bool(TEXT_STEP.search(line)) is has_step


def test_a_log_with_step_lines_is_both_a_console_log_and_a_text_train_log(tmp_path: Path) -> None:
    """A ``.log`` file is a console log candidate; its step lines also make it a text train
    log, the reason counting them within the bytes peeked at."""
    content = b"loading\nstep 10 loss 2.0\nstep 20 loss 1.9\ndone\n"
    path = str(tmp_path / "train.log")
    assert _place(tmp_path, "train.log", content) == {
        "stdout_logs": [{"path": path, "why": "a .log/.out file", "mtime": MTIME}],
        "train_logs": [
            {
                "path": path,
                "why": f"text lines with a step (2 in its first {len(content)} bytes)",
                "kind": "text",
                "mtime": MTIME,
            }
        ],
    }


@pytest.mark.parametrize(
    ("rel", "content", "expected"),
    [
        ("nohup.out", b"hello\n", {"stdout_logs": "named like a console log"}),
        ("worker.err", b"warning\n", {"stdout_logs": "a .log/.out file"}),
        ("data/prompts.txt", b"a prompt\n", {"dataset": "a text file in data/"}),
        ("notes.txt", b"just notes\n", {"unrecognised": "no known role"}),
        (
            "eval.txt",
            b"iter 5 acc 0.9\n",
            {"train_logs": "text lines with a step (1 in its first 15 bytes)"},
        ),
    ],
    ids=["nohup", "dot-err", "data-directory-text", "plain-notes", "txt-with-steps"],
)
def test_text_file_roles(
    tmp_path: Path, rel: str, content: bytes, expected: dict[str, str]
) -> None:
    """A text file without steps is a console log by its name, a dataset in a data
    directory (``.txt``), else unrecognised; a ``.txt`` with step lines is a train log."""
    found = _place(tmp_path, rel, content, depth=rel.count("/") + 1)
    assert {r: cs[0]["why"] for r, cs in found.items()} == expected


# -- best first --------------------------------------------------------------------------


def test_train_logs_rank_trainer_state_then_jsonl_then_csv_then_text(tmp_path: Path) -> None:
    """Among train logs: the run's own trainer state, then checkpoints' states newest step
    first, then JSON lines, CSV, and text (more step lines first)."""
    files = Files()
    _place(tmp_path, "a.log", b"step 1\n", files=files)
    _place(tmp_path, "b.log", b"step 1\nstep 2\n", files=files)
    _place(tmp_path, "m.csv", b"step,loss\n", files=files)
    _place(tmp_path, "m.jsonl", b'{"step": 1}\n', files=files)
    _place(tmp_path, "out/checkpoint-10/trainer_state.json", b"{}", 3, True, files)
    _place(tmp_path, "out/checkpoint-20/trainer_state.json", b"{}", 3, True, files)
    _place(tmp_path, "out/trainer_state.json", b"{}", 2, files=files)
    assert _ordered(files, "train_logs") == [
        str(tmp_path / p)
        for p in (
            "out/trainer_state.json",
            "out/checkpoint-20/trainer_state.json",
            "out/checkpoint-10/trainer_state.json",
            "m.jsonl",
            "m.csv",
            "b.log",
            "a.log",
        )
    ]


def test_jsonl_train_logs_named_log_and_nearer_the_top_rank_first(tmp_path: Path) -> None:
    """Among JSON lines train logs, one with ``log`` in its name comes first, then the one
    nearer the top."""
    files = Files()
    _place(tmp_path, "a/b/metrics.jsonl", b'{"step": 1}\n', 3, files=files)
    _place(tmp_path, "metrics.jsonl", b'{"step": 1}\n', 1, files=files)
    _place(tmp_path, "a/b/train_log.jsonl", b'{"step": 1}\n', 3, files=files)
    assert _ordered(files, "train_logs") == [
        str(tmp_path / "a/b/train_log.jsonl"),
        str(tmp_path / "metrics.jsonl"),
        str(tmp_path / "a/b/metrics.jsonl"),
    ]


def test_console_logs_rank_named_ones_then_train_ones_then_newest(tmp_path: Path) -> None:
    """Console logs: named like one first, then those of training, then the newest."""
    files = Files()
    _place(tmp_path, "old.log", b"x\n", files=files, mtime=100.0)
    _place(tmp_path, "new.log", b"x\n", files=files, mtime=200.0)
    _place(tmp_path, "train.log", b"x\n", files=files, mtime=50.0)
    _place(tmp_path, "stdout.txt", b"x\n", files=files, mtime=10.0)
    assert _ordered(files, "stdout_logs") == [
        str(tmp_path / n) for n in ("stdout.txt", "train.log", "new.log", "old.log")
    ]


def test_scripts_rank_by_depth_then_training_ones(tmp_path: Path) -> None:
    """Scripts nearer the top come first; at one depth those named for training first."""
    files = Files()
    _place(tmp_path, "pkg/train_loop.py", b"", 2, files=files)
    _place(tmp_path, "utils.py", b"", 1, files=files)
    _place(tmp_path, "train.py", b"", 1, files=files)
    assert _ordered(files, "scripts") == [
        str(tmp_path / p) for p in ("train.py", "utils.py", "pkg/train_loop.py")
    ]


def test_launch_files_rank_launch_names_first(tmp_path: Path) -> None:
    """Launch files whose names start like a launcher (run, train, submit...) come before
    other shell scripts, however deep."""
    files = Files()
    _place(tmp_path, "setup_env.sh", b"", 1, files=files)
    _place(tmp_path, "scripts/run_8gpu.sh", b"", 2, files=files)
    assert _ordered(files, "launch_files") == [
        str(tmp_path / "scripts/run_8gpu.sh"),
        str(tmp_path / "setup_env.sh"),
    ]


# -- the first record of a peek ------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "cut", "expected"),
    [
        (None, False, None),
        (b"", False, None),
        (b'{"a": 1}\n{"b": 2}\n', False, {"a": 1}),
        (b'{"a": 1', True, None),
        (b'junk\n{"a": 1}', True, None),
        (b'junk\n{"a": 1}', False, {"a": 1}),
        (b'  {"x": NaN}\n', False, {"x": "NaN"}),
        (b'{"a": ' + b"[" * 5000 + b"\n" + b'{"ok": true}\n', False, {"ok": True}),
    ],
    ids=[
        "no-data",
        "empty",
        "first-of-two",
        "only-line-cut",
        "cut-last-line-left-out",
        "uncut-last-line-read",
        "indented-nan",
        "too-deep-skipped",
    ],
)
def test_first_object(data: bytes | None, cut: bool, expected: dict[str, Any] | None) -> None:
    """The first line that parses as a JSON object; a line the peek cut is never parsed,
    and one nested too deep for the parser is passed over."""
    assert _first_object(data, cut) == expected
