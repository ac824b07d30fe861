"""Environment drift: torch/triton/CUDA/Python/transformers, or torch's own files, differ
from the baseline (a snapshot, or what the newest checkpoint or a saved environment file
recorded, read as canonical quantities whatever the trainer's format).

Versions are compared as versions (``VersionDiffers``, see ``agent.versions``); torch's
git hash and file counts exactly. Nothing is compared that one side does not record:
a version a checkpoint records while the installed one was not observed is an
unverifiable claim, and with nothing recorded at all the family is not proposed, since
nothing said the trainer kept a record to compare with.
"""

from __future__ import annotations

from agent.claims import MISSING, Claim, Differs, Ref, VersionDiffers, resolve
from agent.comparables import ENVIRONMENT_KEYS, STATIC, VERSION_KEYS
from agent.hypotheses import Hypothesis, Kind, Prediction
from agent.rules.base import Evidence
from agent.versions import difference


def _differs(key: str, now: object, then: object) -> bool:
    if key in VERSION_KEYS and isinstance(now, str) and isinstance(then, str):
        return difference(now, then) in ("build", "release")
    return now != then


def _claim(key: str, now: Ref, then: Ref) -> Claim:
    if key in VERSION_KEYS:
        return Claim(predicate=VersionDiffers(a=now, b=then))
    return Claim(predicate=Differs(a=now, b=then))


def _on_recorded(evidence: Evidence) -> list[Claim]:
    """Claims on every quantity the checkpoints record, for when the diff compared none:
    the installed value was then not observed (its probe failed, or found no such
    package), and the claim is checked and comes out unverifiable, not failed."""
    recorded = evidence.latest("checkpoints")
    if recorded is None or not recorded.ok:
        return []
    claims = []
    for item in STATIC:
        if item.key not in ENVIRONMENT_KEYS or item.derived is None:
            continue
        if resolve(recorded, item.derived[1]) is MISSING:
            continue
        current = evidence.latest(item.probe)
        if current is None:
            continue
        claims.append(
            _claim(
                item.key,
                Ref(fact=current.id, path=item.path, label=f"{item.label} (now)"),
                Ref(fact=recorded.id, path=item.derived[1], label=f"{item.label} (baseline)"),
            )
        )
    return claims


class EnvironmentDrift:
    kind: Kind = "environment_drift"
    needs = frozenset({"pyenv", "torch_source", "integrity", "checkpoints"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        compared = [d for d in evidence.diff if d.key in ENVIRONMENT_KEYS]
        if compared:
            differing = [d for d in compared if _differs(d.key, d.current_value, d.baseline_value)]
            # Drift is "any of these differs": claim the ones that do; with none, claim
            # them all, so the refutation lists every version that was compared.
            chosen = differing or compared
            return [
                Hypothesis(
                    kind="environment_drift",
                    claims=tuple(_claim(d.key, d.current, d.baseline) for d in chosen),
                    weight=max(1, len(differing)),
                    probes=("pyenv", "integrity"),
                )
            ]
        pending = _on_recorded(evidence)
        if pending:
            return [
                Hypothesis(
                    kind="environment_drift",
                    claims=tuple(pending),
                    probes=("pyenv",),
                )
            ]
        checkpoints = evidence.latest("checkpoints")
        if checkpoints is not None and checkpoints.ok:
            # The checkpoints were read and record no versions, and no snapshot exists:
            # nothing says what the environment was, so there is nothing to drift from.
            return []
        return [
            Hypothesis(
                kind="environment_drift",
                claims=(),
                predictions=(
                    Prediction(
                        expect="versions differ from a known good state",
                        probe="snapshot a baseline, or a checkpoint that records versions",
                    ),
                ),
            )
        ]
