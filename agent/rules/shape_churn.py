"""Dataset shape churn: the workers meet new sequence lengths and compile new shapes
mid-run (recompiles, and the window in which the FX race can strike). Shown either by the
dataset, grown since the baseline with longer prompts, or by torch itself: its
``TORCH_LOGS=recompiles`` lines in the console name a function recompiled for new sizes
of one tensor dimension, each with the guard failure that says so."""

from __future__ import annotations

from typing import Any

from agent.model.claims import AtLeast, Claim, Exists, Greater, Matches, Ref
from agent.model.facts import Fact
from agent.model.hypotheses import Hypothesis, Kind, Prediction
from agent.rules.base import Evidence, ref, trace_words
from tools.probes import value_paths as vp

# New sizes of one dimension before a function's recompiles are churn: dynamo's
# automatic dynamic shapes recompile once, on the second size, and not again.
CHURN_SIZES = 2
RECOMPILES = ("torch_logs", "recompiles", "functions")
SIZE_GUARD = "size mismatch at index"  # a guard failure on a tensor's size (torch 2.13)


class DatasetShapeChurn:
    kind: Kind = "dataset_shape_churn"
    needs = frozenset({"dataset", "stdoutlog", "torch_trace"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        sizes = [d for d in evidence.diff if d.key.startswith("dataset.lines:")]
        if not sizes:
            return _from_torch_logs(evidence) or _from_torch_trace(evidence)
        out = []
        for size in sizes:
            path = size.key.split(":", 1)[1]
            longest = next((d for d in evidence.diff if d.key == f"dataset.longest:{path}"), None)
            # More prompts, and longer ones than the longest the baseline had: the
            # workers will meet sequence lengths they never compiled.
            claims = [Claim(predicate=Greater(a=size.current, b=size.baseline))]
            if longest is not None:
                claims.append(Claim(predicate=Greater(a=longest.current, b=longest.baseline)))
            else:
                # More prompts alone are no new shapes: the longest prompt then must be
                # compared too, and where the baseline never recorded it the claim stays
                # open (unverifiable) rather than the churn being taken as shown.
                claims.append(
                    Claim(
                        predicate=Greater(
                            a=Ref(
                                fact=size.current.fact,
                                path=vp.file(path, "line_bytes", "max"),
                                label=f"longest prompt line in {path} (bytes, now)",
                            ),
                            b=Ref(
                                fact=size.baseline.fact,
                                path=(*size.baseline.path[:-1], "dataset_longest"),
                                label=f"longest prompt line in {path} (bytes, baseline)",
                            ),
                        )
                    )
                )
            out.append(
                Hypothesis(
                    kind="dataset_shape_churn",
                    claims=tuple(claims),
                    predictions=(
                        Prediction(
                            expect="dynamo recompiles for the new lengths",
                            probe="stdoutlog with TORCH_LOGS=recompiles",
                        ),
                    ),
                )
            )
        return out


def _churned(log: Fact) -> tuple[int, dict[str, Any]] | None:
    """The function torch logged the most distinct new sizes for, at least
    ``CHURN_SIZES``: its index in the fact and its summary."""
    value: Any = log.value
    for part in RECOMPILES:
        value = value.get(part) if isinstance(value, dict) else None
    functions: list[Any] = value if isinstance(value, list) else []
    ranked = [
        (f.get("distinct_new_sizes") or 0, i, f)
        for i, f in enumerate(functions)
        if isinstance(f, dict)
    ]
    if not ranked:
        return None
    sizes, i, fn = max(ranked, key=lambda r: (r[0], -r[1]))
    return (i, fn) if isinstance(sizes, int) and sizes >= CHURN_SIZES else None


def _from_torch_logs(evidence: Evidence) -> list[Hypothesis]:
    """Shape churn as torch logged it: one function recompiled for new sizes of one
    dimension, the first guard failure quoted. A cost of compiling, so a fault only on
    a run that slowed (a run warming up on its lengths recompiles too)."""
    log = evidence.latest("stdoutlog")
    if log is None or not log.ok:
        return []
    churned = _churned(log)
    if churned is None:
        return []
    i, fn = churned
    name = f"{fn.get('function')!r} ({fn.get('file')}:{fn.get('line')})"
    at = (*RECOMPILES, i)
    claims = [
        Claim(
            predicate=AtLeast(
                a=ref(
                    log,
                    *at,
                    "distinct_new_sizes",
                    label=f"distinct new sizes torch recompiled {name} for",
                ),
                value=CHURN_SIZES,
            )
        ),
        Claim(
            predicate=Exists(
                a=ref(
                    log,
                    *at,
                    "guard_failures",
                    0,
                    "reason",
                    label=f"the guard failure behind {name}'s first logged recompile",
                )
            )
        ),
    ]
    return [
        Hypothesis(
            kind="dataset_shape_churn",
            claims=tuple(claims),
            predictions=(
                Prediction(
                    expect="the recompiles stop once every length is compiled, or dynamic shapes",
                    probe="stdoutlog with TORCH_LOGS=recompiles",
                ),
            ),
            fault_alone=False,
        )
    ]


def _from_torch_trace(evidence: Evidence) -> list[Hypothesis]:
    """Shape churn as torch's structured trace (TORCH_TRACE) records it: a function
    recompiled at least ``CHURN_SIZES`` times, a recompile behind a size guard. A cost of
    compiling, so a fault only on a run that slowed."""
    trace = evidence.latest("torch_trace")
    if trace is None or not trace.ok or not isinstance(trace.value, dict):
        return []
    traces: Any = trace.value.get("traces")
    for i, file in enumerate(traces if isinstance(traces, list) else []):
        file = file if isinstance(file, dict) else {}
        for k, fn in enumerate(file.get("functions") or []):
            fn = fn if isinstance(fn, dict) else {}
            recompiles = fn.get("recompiles")
            if not isinstance(recompiles, int) or recompiles < CHURN_SIZES:
                continue
            rows = [
                (r, row)
                for r, row in enumerate(file.get("compiles") or [])
                if isinstance(row, dict)
                and row.get("frame") == fn.get("frame")
                and SIZE_GUARD in str(row.get("guard_failure") or "")
            ]
            if not rows:
                continue
            r, row = rows[0]
            name = f"{fn.get('function')!r} ({fn.get('file')}:{fn.get('line')})"
            label = f"recompiles of {name} in {trace_words(file)}"
            guard = f"the guard failure behind compile {row.get('compile_id')} of {name}"
            claims = (
                Claim(
                    predicate=AtLeast(
                        a=ref(trace, "traces", i, "functions", k, "recompiles", label=label),
                        value=CHURN_SIZES,
                    )
                ),
                Claim(
                    predicate=Matches(
                        a=ref(trace, "traces", i, "compiles", r, "guard_failure", label=guard),
                        pattern=SIZE_GUARD,
                    )
                ),
            )
            return [
                Hypothesis(
                    kind="dataset_shape_churn",
                    claims=claims,
                    predictions=(
                        Prediction(
                            expect="the recompiles stop once every length is compiled",
                            probe="torch_trace",
                        ),
                    ),
                    fault_alone=False,
                )
            ]
    return []
