"""What a training log's fields mean (tools/parsers/_trainlog/fields.py): which key of a
record plays a role (by a common name, or a nested name ending in one, never an
evaluation's), rates in other units than tokens, dotted profile names, and the
throughput units."""

from __future__ import annotations

from typing import Any

import pytest

from tools.parsers._trainlog.fields import find_alias, lookup, other_rate, scale_of


@pytest.mark.parametrize(
    ("role", "record", "expected"),
    [
        ("step", {"global_step": 1}, "global_step"),
        ("step", {"iteration": 1, "step": 2}, "step"),
        ("loss", {"train/lm_loss": 2.0}, "train/lm_loss"),
        ("loss", {"eval/loss": 2.0}, None),
        ("loss", {"Val/sub/loss": 2.0}, None),
        ("loss", {"valid_loss": 2.0}, None),
        ("loss", {"train/x/loss": 1.0, "lm_loss": 2.0}, "lm_loss"),
        ("loss", {1: 2.0}, None),
        ("grad_norm", {"optim/grad_norm": 1.0}, "optim/grad_norm"),
        ("tokens", {"perf/num_tokens": 10}, "perf/num_tokens"),
        ("throughput", {"perf/tokens_per_sec": 10}, "perf/tokens_per_sec"),
        ("time", {"train/time": 1.0}, None),
        ("elapsed", {"perf/runtime": 1.0}, None),
        ("step_time", {"iter_time": 0.5}, "iter_time"),
    ],
    ids=[
        "common-name",
        "most-likely-name-first",
        "nested-name",
        "eval-never",
        "validation-any-case",
        "other-name-is-no-alias",
        "common-name-before-nested",
        "non-text-key",
        "nested-gradient",
        "nested-token-count",
        "nested-throughput",
        "time-never-nested",
        "elapsed-never-nested",
        "step-time",
    ],
)
def test_find_alias(role: str, record: dict[Any, Any], expected: str | None) -> None:
    """A role is found under its common names, most likely first whatever the record's
    key order; the roles whose nested names are read (step, loss, throughput, tokens,
    gradient norm) also match a name whose last part is common, unless it belongs to an
    evaluation, validation or test; times and seconds match only their own names."""
    assert find_alias(role, record) == expected


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (
            {"train/samples_per_sec": 6.0, "train/items_per_sec": 2000.0},
            ("train/items_per_sec", "items/s"),
        ),
        (
            {"throughput/device/samples_per_sec": 3.0, "throughput/samples_per_sec": 6.0},
            ("throughput/samples_per_sec", "samples/s"),
        ),
        (
            {"throughput/device/samples_per_sec": 3.0},
            ("throughput/device/samples_per_sec", "samples/s"),
        ),
        ({"eval/samples_per_sec": 6.0}, None),
        ({"it/s": 3.1}, ("it/s", "steps/s")),
        ({"train/batches_per_sec": 1.5}, ("train/batches_per_sec", "steps/s")),
        ({"train_samples_per_second": 3.2}, None),
        ({"loss": 2.0, 7: 1.0}, None),
    ],
    ids=[
        "items-before-samples",
        "process-before-device",
        "device-alone",
        "eval-never",
        "iterations",
        "batches-are-steps",
        "trainer-average-is-apart",
        "no-rate",
    ],
)
def test_other_rate(record: dict[Any, Any], expected: tuple[str, str] | None) -> None:
    """A rate in another unit is found by its whole name or last part, the best unit first
    (items, then samples, then steps), the whole process's before one device's, never an
    evaluation's; Trainer's averages since the start are not rates at a step."""
    assert other_rate(record) == expected


@pytest.mark.parametrize(
    ("record", "name", "expected"),
    [
        ({"loss": 2.0}, "loss", 2.0),
        ({"a.b": 1, "a": {"b": 2}}, "a.b", 1),
        ({"a": {"b": {"c": 3}}}, "a.b.c", 3),
        ({"a": {"b": 1}}, "a.c", None),
        ({"a": [1, 2]}, "a.0", None),
        ({"a": {"b": 1}}, "a.b.c", None),
        ({"x": 1}, "y", None),
    ],
    ids=[
        "plain",
        "dotted-key-itself-first",
        "nested",
        "missing-part",
        "list-not-reached",
        "past-a-leaf",
        "missing",
    ],
)
def test_lookup(record: dict[str, Any], name: str, expected: Any) -> None:
    """A profile's name is the record's key when the record has it; a dotted name
    otherwise walks nested objects, and anything missing on the way is None."""
    assert lookup(record, name) == expected


@pytest.mark.parametrize(
    ("name", "scale"),
    [
        ("tok/s", 1.0),
        ("tokens_per_sec", 1.0),
        ("ktok_s", 1000.0),
        ("Ktok/s", 1000.0),
        ("ktokens_per_sec", 1000.0),
        ("perf/ktok_s", 1000.0),
        ("perf/tokens_per_sec", 1.0),
        ("", 1.0),
    ],
    ids=[
        "tok/s",
        "tokens-per-sec",
        "ktok_s",
        "Ktok/s",
        "ktokens",
        "nested-ktok",
        "nested-tok",
        "none",
    ],
)
def test_scale_of(name: str, scale: float) -> None:
    """A throughput field in thousands of tokens/s is multiplied by 1000 (also under a
    nested name); every other field is in tokens/s."""
    assert scale_of(name) == scale
