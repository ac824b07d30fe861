"""FX-tracing race under per-device compilation.

The evidence, as the incident had it: torch's own error text in the stdout log, raised in
a worker thread; compiled wrappers that bind the FX check when they are created (so a
process-global tracing flag set by one thread trips another's compiled call); and, where
the installed torch does not hold its compiling flag during compilation, a concurrent
compile alone is enough to set it off (torch <= 2.11; see ../shared/experiments).
"""

from __future__ import annotations

from agent.claims import AtLeast, Claim, Contains, Equal
from agent.hypotheses import Hypothesis, Kind, Prediction
from agent.rules.base import Evidence, has, ref

FX_ERROR = "Detected that you are using FX to symbolically trace a dynamo-optimized function"


class FxTraceRace:
    kind: Kind = "fx_trace_race"
    needs = frozenset({"stdoutlog", "torch_source"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        log = evidence.latest("stdoutlog")
        source = evidence.latest("torch_source")
        if log is None:
            return []
        sig = ("signatures", "fx_nested_trace")
        claims = [
            Claim(
                predicate=AtLeast(a=ref(log, *sig, "count", label="FX-trace error lines"), value=1)
            )
        ]
        count = evidence.value("stdoutlog", *sig, "count")
        if isinstance(count, int) and count > 0:
            claims.append(
                Claim(
                    predicate=Contains(
                        a=ref(log, *sig, "first", label="first FX-trace error"), item=FX_ERROR
                    )
                )
            )
            claims.append(
                Claim(
                    predicate=AtLeast(
                        a=ref(
                            log,
                            "signatures",
                            "thread_exception",
                            "count",
                            label="exceptions escaping a thread",
                        ),
                        value=1,
                    )
                )
            )
        if source is not None:
            claims.append(
                Claim(
                    predicate=Equal(
                        a=ref(
                            source,
                            "binds_check_at_wrap",
                            "value",
                            label="compiled wrappers bind the FX check at creation",
                        ),
                        value=True,
                    )
                )
            )
        predictions: list[Prediction] = []
        holds = evidence.value("torch_source", "holds_compiling_flag", "value")
        if holds is False and has(source, "holds_compiling_flag", "value"):
            assert source is not None
            claims.append(
                Claim(
                    predicate=Equal(
                        a=ref(
                            source,
                            "holds_compiling_flag",
                            "value",
                            label="compilation holds torch's compiling flag",
                        ),
                        value=False,
                    )
                )
            )
        elif holds is True:
            predictions.append(
                Prediction(
                    expect="something in the process other than torch's own compilation "
                    "(an FX trace, make_fx, an emulation) sets the tracing flag, since this "
                    "torch holds its compiling flag while compiling",
                    probe="processes / the trainer's code",
                )
            )
        weight = count if isinstance(count, int) and count > 0 else 1
        return [
            Hypothesis(
                kind="fx_trace_race",
                claims=tuple(claims),
                predictions=tuple(predictions),
                probes=("stdoutlog", "torch_source", "torch_runtime"),
                unlocks=("lock-warmup", "process-isolation"),
                weight=weight + 2,
            )
        ]
