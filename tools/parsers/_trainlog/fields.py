"""What a training log's fields mean: the common names of each role (step, loss,
throughput, time, token counts, seconds), throughput units, and the fields that split a
log into series. A profile's ``log_fields`` name what these do not know.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

from typing import Any

# Field names seen in real trainers' JSONL logs, most likely first.
# Token counts that only grow (a running total); any other count is one step's tokens.
_RUNNING_TOTALS = (
    "num_input_tokens_seen",
    "tokens_seen",
    "num_tokens_seen",
    "total_tokens",
    "consumed_tokens",
    "cumulative_tokens",
)
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "step": (
        "step",
        "global_step",
        "_step",
        "iteration",
        "iter",
        "train/step",
        "train/global_step",
        "trainer/global_step",
    ),
    "loss": (
        "loss",
        "train_loss",
        "train/loss",
        "train_loss_step",
        "lm_loss",
        "total_loss",
        "global_avg_loss",  # torchtitan's loss_metrics/global_avg_loss
    ),
    "throughput": (
        "tok/s",
        "tokens_per_sec",
        "tok_per_sec",
        "tokens_per_s",
        "tok_per_s",
        "tokens_per_second",
        "tokens_per_second_per_gpu",
        "tokens_per_sec_per_gpu",
        "tokens/s",
        "tok_s",
        "tps",
        "throughput(tps)",  # torchtitan
        "throughput",
        "train/tokens_per_sec",
        "train/tokens_per_second",
        "ktok_s",
        "ktok/s",
        "Ktok/s",
        "ktok_per_sec",
        "ktokens_per_sec",
    ),
    "time": ("time", "timestamp", "ts", "wall_time", "walltime", "_timestamp", "t"),
    # What throughput is derived from when no field holds it: a token count (running
    # total or per step) over seconds (timestamps, seconds since start, or a step time).
    "tokens": (
        *_RUNNING_TOTALS,
        "tokens",
        "num_tokens",
        "ntokens",
        "n_tokens",
        "batch_tokens",
        "tokens_per_step",
        "step_tokens",
    ),
    # Seconds since the start. (Trainer's ``train_tokens_per_second`` is no throughput
    # alias: it is the average since the start, which hides a slowdown for long after;
    # the rate is derived from ``num_input_tokens_seen`` over ``train_runtime`` instead.)
    "elapsed": (
        "_runtime",
        "train_runtime",
        "elapsed",
        "elapsed_s",
        "elapsed_time",
        "time_elapsed",
        "runtime",
    ),
    "step_time": ("step_time", "iter_time", "time_per_step", "batch_time", "iteration_time"),
    # The gradient's norm: where a trainer filters a NaN loss out of its log
    # (Trainer's logging_nan_inf_filter logs the loss as 0), a NaN here still shows it.
    "grad_norm": ("grad_norm", "gradient_norm", "grad_norm_total", "total_norm", "gnorm"),
}
CUMULATIVE_TOKENS = frozenset(_RUNNING_TOTALS)
# Rates a trainer states in another unit than tokens, best first: Lightning's
# ThroughputMonitor logs ``train/items_per_sec``, ``train/samples_per_sec`` and
# ``train/batches_per_sec`` (and ``train/device/...``)
# (``lightning/pytorch/callbacks/throughput_monitor.py``), others a plain it/s. Matched
# as the whole name or its last part; Trainer's averages (``train_samples_per_second``)
# are not rates at a step and are read apart (``speed.AVERAGE_FIELDS``).
OTHER_RATES: tuple[tuple[str, str], ...] = (
    # Lightning's items are whatever the user's length_fn counts (tokens, usually).
    ("items_per_sec", "items/s"),
    ("samples_per_sec", "samples/s"),
    ("samples_per_second", "samples/s"),
    ("samples/s", "samples/s"),
    ("batches_per_sec", "steps/s"),
    ("steps_per_sec", "steps/s"),
    ("steps_per_second", "steps/s"),
    ("it/s", "steps/s"),
)


def other_rate(d: dict[str, Any]) -> tuple[str, str] | None:
    """The key of ``d`` holding a rate of ``OTHER_RATES`` and its unit: the whole
    process's (``throughput/samples_per_sec``) before one device's
    (``throughput/device/samples_per_sec``), never an evaluation's."""
    keys = [k for k in d if isinstance(k, str)]
    for name, unit in OTHER_RATES:
        found = [
            k
            for k in keys
            if (k == name or k.rpartition("/")[2] == name)
            and k.split("/")[0].lower() not in NOT_TRAINING
        ]
        if found:
            return sorted(found, key=lambda k: ("/device/" in k, k))[0], unit
    return None


# Roles also found by the last part of a nested name (``train/loss``, ``perf/throughput``)
# unless the name is an evaluation's (``eval/loss``).
BY_LAST_PART = ("step", "loss", "throughput", "tokens", "grad_norm")
NOT_TRAINING = ("eval", "val", "valid", "validation", "test")
# Multiplier to tokens/s for throughput fields whose unit is not tokens/s.
THROUGHPUT_SCALE: dict[str, float] = {
    "ktok_s": 1000.0,
    "ktok/s": 1000.0,
    "Ktok/s": 1000.0,
    "ktok_per_sec": 1000.0,
    "ktokens_per_sec": 1000.0,
}
UNIT_SCALE = {"tok/s": 1.0, "ktok/s": 1000.0, "mtok/s": 1e6}

# Fields that split one log into series (one per device and role): steps restart per
# series, and throughput is compared per series.
GROUP_ALIASES = ("role", "device", "rank", "local_rank", "global_rank")
MAX_GROUPS = 64


def lookup(d: dict[str, Any], name: str) -> Any:
    """``d[name]``; a dotted name the profile gave also reaches into nested objects."""
    if name in d:
        return d[name]
    if "." in name:
        cur: Any = d
        for part in name.split("."):
            if not isinstance(cur, dict) or part not in cur:
                return None
            cur = cur[part]
        return cur
    return None


def find_alias(role: str, d: dict[str, Any]) -> str | None:
    """The key of ``d`` that holds ``role``: a common name, else (for the roles of
    ``BY_LAST_PART``) a nested name whose last part is one (``train/loss``), never an
    evaluation's (``eval/loss``)."""
    aliases = FIELD_ALIASES[role]
    for a in aliases:
        if a in d:
            return a
    if role not in BY_LAST_PART:
        return None
    for k in d:
        if not isinstance(k, str) or "/" not in k:
            continue
        head, _, last = k.rpartition("/")
        if last in aliases and head.split("/")[0].lower() not in NOT_TRAINING:
            return k
    return None


def scale_of(name: str) -> float:
    """The multiplier to tokens/s of a throughput field (``ktok_s``: 1000)."""
    if name in THROUGHPUT_SCALE:
        return THROUGHPUT_SCALE[name]
    return THROUGHPUT_SCALE.get(name.rpartition("/")[2], 1.0)
