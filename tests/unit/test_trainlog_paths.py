"""The train-log summary's paths (tools.parsers.trainlog_paths): every path the doctor
reads or cites resolves in a real summary of a log that holds each thing it names, so a
key renamed in the summary fails here rather than turning a claim unverifiable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent.model.claims import MISSING, resolve
from agent.model.facts import Fact
from tools.parsers import trainlog_paths as log_paths
from tools.parsers.trainlog import summarize_log

CONSTANTS = sorted(
    name for name, value in vars(log_paths).items() if name.isupper() and isinstance(value, tuple)
)


def _records(devices: tuple[str, ...]) -> list[dict[str, Any]]:
    """Eighty records a device: a restart (the step goes back to 21 after 40, the running
    seconds start again), a NaN loss and an infinite gradient norm: everything the paths
    name. With devices, one drafter series each; without, one series."""
    out: list[dict[str, Any]] = []
    for n, step in enumerate([*range(1, 41), *range(21, 61)]):
        restarted = n >= 40
        for device in devices or (None,):
            out.append(
                {
                    "step": step,
                    **({"role": "drafter", "device": device} if device else {}),
                    "loss": 2.0,
                    "grad_norm": 1.0,
                    "tokens_per_second": 1000.0,
                    "train_runtime": float(step - 20 if restarted else step),
                    "time": 1_700_000_000.0 + len(out),
                }
            )
    out[50]["loss"] = float("nan")
    out[60]["grad_norm"] = float("inf")
    return out


def _summary(log: Path, devices: tuple[str, ...]) -> Fact:
    log.write_text("".join(json.dumps(r) + "\n" for r in _records(devices)))
    with log.open("rb") as f:
        value = summarize_log(f)  # type: ignore[arg-type]
    return Fact(probe="trainlog", target="local", value=value)


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> Fact:
    return _summary(tmp_path_factory.mktemp("one") / "train_log.jsonl", ())


@pytest.fixture(scope="module")
def grouped(tmp_path_factory: pytest.TempPathFactory) -> Fact:
    return _summary(tmp_path_factory.mktemp("two") / "train_log.jsonl", ("sim:0", "sim:1"))


@pytest.mark.parametrize("name", CONSTANTS)
def test_every_path_resolves_in_a_real_summary(summary: Fact, name: str) -> None:
    """Each constant names a part the summarizer writes for a log of one series (its
    value may be None where this log gives none, as the speed's interval here)."""
    assert resolve(summary, getattr(log_paths, name)) is not MISSING, name


def test_the_paths_of_a_series_and_of_a_sum_resolve() -> None:
    """``group`` and ``aggregate`` build the paths of one series' figure and of a sum
    over series, as the summary keys them."""
    assert log_paths.group("role=drafter,device=sim:0", "throughput", "recent_median") == (
        "groups",
        "role=drafter,device=sim:0",
        "throughput",
        "recent_median",
    )
    assert log_paths.aggregate("role=drafter", "recent_median") == (
        "aggregates",
        "role=drafter",
        "recent_median",
    )


def test_a_series_and_its_sum_are_found_in_the_summary(grouped: Fact) -> None:
    """The two drafter devices are two series, labelled by their fields in the record's
    order, and their sum is keyed by the role."""
    for device in ("sim:0", "sim:1"):
        path = log_paths.group(f"role=drafter,device={device}", "throughput", "recent_median")
        assert resolve(grouped, path) == 1000.0
    assert resolve(grouped, log_paths.aggregate("role=drafter", "recent_median")) == 2000.0


def test_a_path_names_nothing_the_summary_does_not_hold(tmp_path: Path) -> None:
    """A summary of a log without a loss or a time holds neither: the paths resolve to
    nothing there, not to a default."""
    log = tmp_path / "train_log.jsonl"
    log.write_text("".join(json.dumps({"step": s}) + "\n" for s in range(1, 5)))
    with log.open("rb") as f:
        fact = Fact(probe="trainlog", target="local", value=summarize_log(f))  # type: ignore[arg-type]
    assert resolve(fact, log_paths.TIME_FIRST) in (MISSING, None)
    assert resolve(fact, log_paths.GRAD_NORM_FIRST_NONFINITE) in (MISSING, None)
