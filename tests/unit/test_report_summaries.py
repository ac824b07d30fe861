"""One-line summaries of probe values for the report's facts table
(``agent.report.summaries``): each shows values the fact holds, and draws no conclusion.
Each expected line is written by hand from the value in its row."""

from __future__ import annotations

from typing import Any

import pytest

from agent.model.facts import Fact
from agent.report.summaries import fact_summary


def summary(probe: str, value: Any, error: str | None = None) -> str:
    return fact_summary(Fact(probe=probe, target="local", value=value, error=error))


@pytest.mark.parametrize(
    ("probe", "value", "line"),
    [
        (
            "host",
            {"hostname": "gpu-7", "uptime_s": 3600, "cpu_count": 16},
            "gpu-7 · up 3600s · 16 cpus",
        ),
        (
            "pyenv",
            {
                "python": {"version": "3.11.9"},
                "torch": {"version": "2.5.1", "git_version": "a8d6afb511a69687bbb2b7e88a3c"},
                "key_packages": {"triton": "3.1.0"},
            },
            "python 3.11.9 · torch 2.5.1 (a8d6afb511a6) · triton 3.1.0",
        ),
        ("pyenv", {}, "python None · torch None () · triton None"),
        (
            "interpreter",
            {"path": "/v/bin/python", "chosen_because": "it runs train.py"},
            "/v/bin/python: it runs train.py",
        ),
        (
            "gpus",
            {
                "available": True,
                "count": 3,
                "gpus": [{"name": "H100"}, {"name": "A100"}, {"name": "H100"}],
            },
            "3 × A100, H100",
        ),
        (
            "gpus",
            {"available": False, "reason": "nvidia-smi not found"},
            "no GPUs visible: nvidia-smi not found",
        ),
        ("processes", {"processes": [{"pid": 1}, {"pid": 2}]}, "2 matching processes"),
        (
            "caches",
            {
                "caches": [
                    {"cache": "inductor", "exists": True, "files": 12, "source": "default"},
                    {"cache": "triton", "exists": False, "source": "TRITON_CACHE_DIR"},
                ]
            },
            "inductor 12 files (default) · triton absent (TRITON_CACHE_DIR)",
        ),
        ("checksums", {"files": [{}, {}, {}], "unmatched": ["a.py"]}, "3 files, 1 unmatched"),
        ("dataset", {"files": [], "unmatched": []}, "0 files"),
        ("script_patches", {"patches": 3}, "3 patches"),
        (
            "checkpoints",
            {"steps": [{"name": f"ckpt-{k}"} for k in (100, 200, 300, 400, 500)]},
            "5 checkpoints: ckpt-200, ckpt-300, ckpt-400, ckpt-500",
        ),
        ("checkpoints", {"steps": []}, "0 checkpoints: none"),
        (
            "stdoutlog",
            {"signatures": {"fx": {"count": 2}, "oom": {"count": 0}}},
            "signatures: fx×2",
        ),
        ("stdoutlog", {}, "signatures: none"),
        (
            "torch_source",
            {"binds_check_at_wrap": {"value": True}, "holds_compiling_flag": {"value": False}},
            "binds check at wrap: True · holds compiling flag: False",
        ),
        (
            "torch_runtime",
            {
                "is_fx_symbolic_tracing": {"module": "torch.fx._symbolic_trace"},
                "dynamo_config": {"error_on_nested_fx_trace": True},
            },
            "is_fx_symbolic_tracing from torch.fx._symbolic_trace · error_on_nested_fx_trace=True",
        ),
        (
            "integrity",
            {
                "packages": [
                    {"package": "torch", "installed": True, "mismatched_count": 3},
                    {"package": "triton", "installed": False},
                ]
            },
            "torch 3 changed files · triton not installed",
        ),
    ],
    ids=[
        "host",
        "pyenv",
        "pyenv-empty",
        "interpreter",
        "gpus",
        "gpus-none",
        "processes",
        "caches",
        "checksums",
        "dataset-empty",
        "script-patches",
        "checkpoints-last-four",
        "checkpoints-none",
        "stdoutlog-seen-only",
        "stdoutlog-none",
        "torch-source",
        "torch-runtime",
        "integrity",
    ],
)
def test_each_probe_is_summarised_from_its_own_values(probe: str, value: Any, line: str) -> None:
    """A probe's summary shows the values its fact holds in a fixed form (a missing value
    shown as None, never guessed); a list is cut to what a row can show."""
    assert summary(probe, value) == line


@pytest.mark.parametrize(
    ("value", "line"),
    [
        (
            {
                "schema": {"format": "jsonl", "step": "step", "loss": "loss", "throughput": None},
                "records": 120,
                "steps": {"min": 1, "max": 1200},
                "speed": {"unit": "tokens/s", "recent": {"value": 4298.21, "how": "median"}},
                "malformed": 0,
            },
            "jsonl (step=step, loss=loss), 120 records, steps 1–1200, "
            "speed 4,298 tokens/s (median), malformed 0",
        ),
        (
            {
                "schema": {"format": "csv"},
                "records": 9,
                "steps": {"min": 0, "max": 8},
                "group_fields": ["role"],
                "speed": {"unit": "tokens/s", "recent": {"value": 1.0, "how": "median"}},
                "throughput": {"recent_median": 12800.4, "unit": "tok/s"},
                "malformed": 2,
            },
            "csv (no known fields), 9 records, steps 0–8, recent median 12,800 tok/s, malformed 2",
        ),
        (
            {
                "records": 3,
                "steps": {"min": 5, "max": 7},
                "throughput": {"recent_median": 3, "unit": "it/s"},
                "malformed": 0,
            },
            "3 records, steps 5–7, recent median 3 it/s, malformed 0",
        ),
    ],
    ids=["stated-speed", "grouped-log", "no-schema"],
)
def test_a_train_log_shows_what_was_inferred_and_its_speed(value: Any, line: str) -> None:
    """A train log's summary names the format and fields the parser inferred (so a wrong
    guess shows), its records and steps, and its speed as stated; a log of several
    series shows the recent median instead. Figures are shown as claims show them."""
    assert summary("trainlog", value) == line


def test_a_failed_fact_is_summarised_by_its_error() -> None:
    """A failed fact shows its error, whatever its probe."""
    assert summary("gpus", None, error="nvidia-smi: timed out") == "FAILED: nvidia-smi: timed out"


@pytest.mark.parametrize(
    ("probe", "value", "line"),
    [
        ("custom", [1, 2], "[1, 2]"),
        ("host", ["not", "a", "dict"], "['not', 'a', 'dict']"),
        ("custom", "x" * 98, "'" + "x" * 98 + "'"),
        ("custom", "x" * 99, "'" + "x" * 96 + "..."),
        ("custom", None, "None"),
    ],
    ids=["unknown-probe", "not-a-dict", "exactly-100-chars", "101-chars-cut", "null"],
)
def test_a_value_without_a_summary_is_shown_as_is_up_to_100_characters(
    probe: str, value: Any, line: str
) -> None:
    """A probe without a summary, or a value that is not a mapping, is shown as its repr,
    cut to 97 characters and "..." when longer than 100."""
    assert summary(probe, value) == line


def test_a_value_of_another_shape_is_shown_as_not_summarised() -> None:
    """A value whose inside is not the shape the summary reads says so with the error,
    rather than guessing."""
    line = summary("gpus", {"available": True, "count": 1, "gpus": [7]})
    assert line == "(value not summarised: 'int' object has no attribute 'get')"
