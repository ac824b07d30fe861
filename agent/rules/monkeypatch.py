"""Ineffective monkeypatch: a script replaces ``is_fx_symbolic_tracing``, but compiled
wrappers bind the original when they are created, so the patch does not reach them — and
the FX-trace error is still there."""

from __future__ import annotations

from agent.claims import AtLeast, Claim, Equal
from agent.hypotheses import Hypothesis, Kind
from agent.rules.base import Evidence, ref


class IneffectiveMonkeypatch:
    kind: Kind = "ineffective_monkeypatch"
    needs = frozenset({"script_patches", "torch_source", "stdoutlog"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        patches = evidence.latest("script_patches")
        if patches is None or not patches.ok:
            return []
        claims = [
            Claim(
                predicate=AtLeast(
                    a=ref(
                        patches, "patches", label="patches of torch's FX/compile checks in scripts"
                    ),
                    value=1,
                )
            )
        ]
        count = evidence.value("script_patches", "patches")
        source = evidence.latest("torch_source")
        log = evidence.latest("stdoutlog")
        if isinstance(count, int) and count > 0:
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
            if log is not None:
                claims.append(
                    Claim(
                        predicate=AtLeast(
                            a=ref(
                                log,
                                "signatures",
                                "fx_nested_trace",
                                "count",
                                label="FX-trace error lines despite the patch",
                            ),
                            value=1,
                        )
                    )
                )
        return [
            Hypothesis(
                kind="ineffective_monkeypatch",
                claims=tuple(claims),
                probes=("script_patches", "torch_source", "torch_runtime"),
                unlocks=("lock-warmup", "process-isolation"),
                weight=2,
            )
        ]
