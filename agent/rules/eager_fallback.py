"""Silent eager fallback: the drafter runs far below the baseline and nothing crashed,
with a sign that compiled code is not what runs (dynamo hit its recompile limit, logged
an eager fallback, or the trainer was configured to run eager on a nested FX trace)."""

from __future__ import annotations

from agent.claims import AtLeast, AtMost, Claim, Equal, RatioBelow
from agent.hypotheses import Hypothesis, Kind
from agent.rules.base import Evidence, has, ref

SLOW = 0.5  # "far below": under half the baseline's tokens/s


class SilentEagerFallback:
    kind: Kind = "silent_eager_fallback"
    needs = frozenset({"trainlog", "stdoutlog", "checkpoints"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        speed = next((d for d in evidence.diff if d.key == "throughput.drafter"), None)
        log = evidence.latest("stdoutlog")
        if speed is None or log is None or not log.ok:
            return []
        claims = [
            Claim(predicate=RatioBelow(a=speed.current, b=speed.baseline, ratio=SLOW)),
            Claim(
                predicate=AtMost(
                    a=ref(
                        log, "signatures", "fx_nested_trace", "count", label="FX-trace error lines"
                    ),
                    value=0,
                )
            ),
        ]
        signal = self._eager_signal(evidence)
        if signal is None:
            # No sign of eager execution: claim the usual one so the report shows it was
            # looked for (it fails, and the hypothesis is refuted).
            signal = Claim(
                predicate=AtLeast(
                    a=ref(
                        log,
                        "signatures",
                        "recompile_limit",
                        "count",
                        label="recompile-limit warnings",
                    ),
                    value=1,
                )
            )
        claims.append(signal)
        return [
            Hypothesis(
                kind="silent_eager_fallback",
                claims=tuple(claims),
                probes=("trainlog", "stdoutlog"),
                unlocks=("lock-warmup",),
                weight=2,
            )
        ]

    def _eager_signal(self, evidence: Evidence) -> Claim | None:
        log = evidence.latest("stdoutlog")
        assert log is not None
        for name, label in (
            ("recompile_limit", "recompile-limit warnings"),
            ("eager_fallback", "eager-fallback messages"),
        ):
            count = evidence.value("stdoutlog", "signatures", name, "count")
            if isinstance(count, int) and count > 0:
                return Claim(
                    predicate=AtLeast(a=ref(log, "signatures", name, "count", label=label), value=1)
                )
        ckpt = evidence.latest("checkpoints")
        path = ("steps", -1, "metadata", "config", "nested_fx_trace")
        if has(ckpt, *path) and evidence.value("checkpoints", *path) == "eager":
            assert ckpt is not None
            return Claim(
                predicate=Equal(
                    a=ref(ckpt, *path, label="nested FX trace handling the trainer recorded"),
                    value="eager",
                )
            )
        return None
