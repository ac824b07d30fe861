"""Environment drift: torch/triton/CUDA/Python/transformers, or torch's own files, differ
from the baseline (a snapshot, or what the newest checkpoint or a saved environment file
recorded, read as canonical quantities whatever the trainer's format).

Versions are compared as versions (``VersionDiffers``, see ``agent.model.versions``); torch's
git hash and file counts exactly. Nothing is compared that one side does not record:
a version a checkpoint records while the installed one was not observed is an
unverifiable claim, and with nothing recorded at all the family is not proposed, since
nothing said the trainer kept a record to compare with.
"""

from __future__ import annotations

from agent.analysis.diff_keys import ENVIRONMENT_KEYS, STATIC, VERSION_KEYS
from agent.model.claims import MISSING, Claim, Differs, Ref, VersionDiffers, resolve
from agent.model.facts import Fact
from agent.model.hypotheses import Hypothesis, Kind, Prediction
from agent.model.versions import difference
from agent.rules.base import Evidence


def _compare(key: str, now: object, then: object) -> str:
    """``differs``, ``same``, or ``open``: a version against none (the interpreter probed
    lacks the package: perhaps not the trainer's) or against text that is no version."""
    if key not in VERSION_KEYS or (now is None and then is None):
        return "differs" if now != then else "same"
    how = difference(now, then) if isinstance(now, str) and isinstance(then, str) else None
    if how is None:
        return "open"
    return "same" if how == "same" else "differs"


def _sourced(evidence: Evidence, then: Ref) -> Ref:
    """A recorded baseline value labelled with the file and key it was read from (the
    checkpoints fact's ``recorded_from``), so the sentence says where to look."""
    if len(then.path) != 2 or then.path[0] != "recorded" or then.fact not in evidence.ledger:
        return then
    origin = resolve(evidence.ledger.get(then.fact), ("recorded_from", then.path[1]))
    if not isinstance(origin, str):
        return then
    return then.model_copy(update={"label": f"{then.show()} from {origin}"})


def _claim(key: str, now: Ref, then: Ref, evidence: Evidence) -> Claim:
    then = _sourced(evidence, then)
    if key in VERSION_KEYS:
        return Claim(predicate=VersionDiffers(a=now, b=then))
    return Claim(predicate=Differs(a=now, b=then))


def _unobserved(evidence: Evidence, recorded: Fact, compared: set[str]) -> list[Claim]:
    """Claims on the quantities the checkpoints record that the diff could not compare:
    the installed value was not observed (its probe failed, or the interpreter probed has
    no such package), so each is checked and comes out unverifiable, not failed."""
    claims = []
    for item in STATIC:
        if item.key not in ENVIRONMENT_KEYS or item.derived is None or item.key in compared:
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
                evidence,
            )
        )
    return claims


class EnvironmentDrift:
    kind: Kind = "environment_drift"
    needs = frozenset({"pyenv", "torch_source", "integrity", "checkpoints"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        compared = [d for d in evidence.diff if d.key in ENVIRONMENT_KEYS]
        how = {d.key: _compare(d.key, d.current_value, d.baseline_value) for d in compared}
        differing = [d for d in compared if how[d.key] == "differs"]
        left_open = [d for d in compared if how[d.key] == "open"]
        checkpoints = evidence.latest("checkpoints")
        read = checkpoints if checkpoints is not None and checkpoints.ok else None
        # Drift is "any of these differs". One that does is the answer; otherwise it is
        # refuted only if every recorded version was compared: one whose installed value
        # was not observed, or is none, leaves it open. (With a snapshot, the snapshot is
        # the baseline and what checkpoints record is not the question.)
        derived = read is not None and all(d.baseline.fact == read.id for d in compared)
        unobserved = (
            _unobserved(evidence, read, {d.key for d in compared})
            if read is not None and derived and not differing
            else []
        )
        if differing or unobserved or compared:
            claims = (
                [_claim(d.key, d.current, d.baseline, evidence) for d in differing]
                or [_claim(d.key, d.current, d.baseline, evidence) for d in left_open] + unobserved
                or [_claim(d.key, d.current, d.baseline, evidence) for d in compared]
            )
            return [
                Hypothesis(
                    kind="environment_drift",
                    claims=tuple(claims),
                    weight=max(1, len(differing)),
                )
            ]
        if read is not None:
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
