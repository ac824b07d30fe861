"""What a baseline diff compares, and where each quantity lives in the probes' facts.

Static entries cover versions and caches; per-file entries (script md5s) and the
drafter's throughput are found in the current facts, since their keys (file paths,
the log's role/device groups) differ from one trainer to the next.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from agent.analysis.baseline import Comparable
from agent.analysis.throughput import subject, throughput_comparables
from agent.model.claims import MISSING, resolve
from agent.model.facts import Fact, Ledger, latest, observed
from tools.probes import checkpoint_paths as ckpt_paths
from tools.probes import value_paths as vp
from tools.probes.checkpoints import records_a_finished_save

# What the newest finished checkpoint (or a saved environment file) records, as the
# canonical quantities tools/probes/_canonical.py reads from any trainer's records.
RECORDED = ckpt_paths.RECORDED

STATIC: tuple[Comparable, ...] = (
    Comparable(
        "python.version",
        "Python version",
        "pyenv",
        ("python", "version"),
        derived=("checkpoints", (*RECORDED, "python")),
    ),
    Comparable(
        "torch.version",
        "torch version",
        "pyenv",
        ("torch", "version"),
        derived=("checkpoints", (*RECORDED, "torch")),
    ),
    Comparable(
        "torch.git",
        "torch git hash",
        "pyenv",
        ("torch", "git_version"),
        derived=("checkpoints", (*RECORDED, "torch_git")),
    ),
    Comparable(
        "torch.cuda",
        "torch CUDA version",
        "pyenv",
        ("torch", "cuda"),
        derived=("checkpoints", (*RECORDED, "cuda")),
    ),
    Comparable(
        "triton.version",
        "triton version",
        "pyenv",
        # The distribution's version, whichever name it has (nightlies: pytorch-triton).
        ("triton", "dist_version"),
        derived=("checkpoints", (*RECORDED, "triton")),
    ),
    Comparable(
        "transformers.version",
        "transformers version",
        "pyenv",
        ("key_packages", "transformers"),
        derived=("checkpoints", (*RECORDED, "transformers")),
    ),
    Comparable(
        "lightning.version",
        "Lightning version",
        "pyenv",
        # A .ckpt records the version of the Lightning package that wrote it.
        ("packages", "@name=lightning", "version"),
        derived=("checkpoints", (*RECORDED, "lightning")),
    ),
    Comparable(
        "torch.holds_compiling_flag",
        "compilation holds torch's compiling flag",
        "torch_source",
        ("holds_compiling_flag", "value"),
    ),
    Comparable(
        "dynamo.error_on_nested_fx_trace",
        "dynamo error_on_nested_fx_trace",
        "torch_runtime",
        ("dynamo_config", "error_on_nested_fx_trace"),
    ),
    Comparable(
        "fx_check.module",
        "module of is_fx_symbolic_tracing",
        "torch_runtime",
        ("is_fx_symbolic_tracing", "module"),
    ),
    Comparable(
        "torch.changed_files",
        "torch files differing from RECORD",
        "integrity",
        ("packages", "@package=torch", "mismatched_count"),
    ),
    Comparable(
        "cache.inductor.files",
        "inductor cache files",
        "caches",
        ("caches", "@cache=inductor", "files"),
    ),
    Comparable(
        "cache.inductor.oldest",
        "inductor cache oldest entry (mtime)",
        "caches",
        ("caches", "@cache=inductor", "oldest_mtime"),
    ),
    Comparable(
        "cache.extra.files",
        "workspace compile cache files",
        "caches",
        ("caches", "@cache=extra", "files"),
    ),
    Comparable(
        "cache.extra.oldest",
        "workspace compile cache oldest entry (mtime)",
        "caches",
        ("caches", "@cache=extra", "oldest_mtime"),
    ),
    Comparable(
        "fx_check.patches",
        "monkeypatches of the FX check in scripts",
        "script_patches",
        ("patches",),
    ),
)

ENVIRONMENT_KEYS = (
    "python.version",
    "torch.version",
    "torch.git",
    "torch.cuda",
    "triton.version",
    "transformers.version",
    "lightning.version",
    "torch.holds_compiling_flag",
    "torch.changed_files",
)
# The environment keys whose values are package versions: compared as versions
# (agent.model.versions), so a build label recorded on one side only is no drift.
VERSION_KEYS = (
    "python.version",
    "torch.version",
    "torch.cuda",
    "triton.version",
    "transformers.version",
    "lightning.version",
)


# The throughput the newest checkpoint recorded (the trainer's own measurement).
RECORDED_THROUGHPUT = (*RECORDED, "tokens_per_s")


def drafter_group(fact: Fact) -> str | None:
    """The train log's one series the throughput is judged by ("role=drafter,…", or the
    log's only group), when a single series is the subject (see agent.analysis.throughput)."""
    found = subject(fact)
    if found is None or found.members or found.path[0] != "groups":
        return None
    return str(found.path[1])


def checkpoint_before(checkpoints: Fact | None, step: float) -> str | None:
    """The name of the newest finished checkpoint that records anything and was written
    at or before ``step``, when the newest such checkpoint overall was written after it."""
    steps = resolve(checkpoints, ckpt_paths.STEPS) if checkpoints is not None else MISSING
    if not isinstance(steps, list):
        return None
    finished = [
        s
        for s in steps
        if isinstance(s, dict)
        and records_a_finished_save(s)
        and isinstance(s.get("step"), int | float)
    ]
    if not finished or finished[-1]["step"] <= step:
        return None  # the newest already shows the state before the change
    before = [s for s in finished if s["step"] <= step]
    return str(before[-1]["name"]) if before else None


def _rebased(table: list[Comparable], name: str) -> list[Comparable]:
    """``table`` with what "the newest checkpoint recorded" read from checkpoint ``name``
    instead: the last one written before the run changed (the derived baseline)."""
    out = []
    for item in table:
        if item.derived is not None and item.derived[0] == "checkpoints":
            path = item.derived[1]
            if path[: len(RECORDED)] == RECORDED:
                tail = path[len(RECORDED) :]
                item = replace(
                    item, derived=("checkpoints", ckpt_paths.entry(name, "canonical", *tail))
                )
        out.append(item)
    return out


def comparables(
    ledger: Ledger, ids: Sequence[str], before: float | None = None
) -> list[Comparable]:
    """What the diff compares. ``before``: the step where the run changed (a drop's
    ``began``); without a snapshot, the baseline is then what the last checkpoint written
    at or before it recorded, not a newer one written while the run was already slow."""
    table = list(STATIC)
    checksums = observed(latest(ledger, ids, "checksums"))
    files = resolve(checksums, vp.FILES) if checksums else MISSING
    if isinstance(files, list):
        for entry in files:
            if isinstance(entry, dict) and "md5" in entry:
                path = str(entry["path"])
                table.append(
                    Comparable(
                        f"md5:{path}",
                        f"md5 of {path}",
                        "checksums",
                        ("files", f"@path={path}", "md5"),
                    )
                )
    dataset = observed(latest(ledger, ids, "dataset"))
    files = resolve(dataset, vp.FILES) if dataset else MISSING
    if isinstance(files, list):
        for entry in files:
            if isinstance(entry, dict) and "lines" in entry:
                path = str(entry["path"])
                table.append(
                    Comparable(
                        f"dataset.lines:{path}",
                        f"prompts in {path}",
                        "dataset",
                        ("files", f"@path={path}", "lines"),
                        derived=("checkpoints", (*RECORDED, "dataset_size")),
                    )
                )
                table.append(
                    Comparable(
                        f"dataset.longest:{path}",
                        f"longest prompt line in {path} (bytes)",
                        "dataset",
                        ("files", f"@path={path}", "line_bytes", "max"),
                    )
                )
    table.extend(
        throughput_comparables(
            observed(latest(ledger, ids, "trainlog")),
            observed(latest(ledger, ids, "checkpoints")),
            RECORDED_THROUGHPUT,
        )
    )
    if before is not None:
        name = checkpoint_before(observed(latest(ledger, ids, "checkpoints")), before)
        if name is not None:
            table = _rebased(table, name)
    return table
