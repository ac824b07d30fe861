"""When a family's evidence appeared, against the symptom it would explain.

A verified family explains a drop only if its evidence is not dated before the drop
began: FX errors first printed at step 120 of a run that fell at step 690 were there
while it ran fast, so they do not explain the fall. Two kinds of evidence can be dated,
each by a ``NotBefore`` claim whose facts are cited like any other:

- console-log events (``EVENTS``): the console parser dates each signature's first hit by
  the last step the log printed at or before it (``first_after_step``);
- a comparison with what a checkpoint recorded (the derived baseline): the checkpoint must
  have been written no later than the step the new regime began at, or it does not show
  the state in which the run was fast.

Evidence that cannot be dated (no step printed before it; a snapshot baseline, which
carries no step) gives an unverifiable timing claim: "not dated", never "does not fit".
The dating is to the resolution of a train-log window and of the steps the console
prints: a log that prints a step only every thousand steps dates coarsely.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from agent.analysis.symptoms import Symptom
from agent.model.claims import MISSING, AtMost, Claim, NotBefore, Ref, check, resolve
from agent.model.facts import Fact, Ledger, latest, observed
from agent.model.hypotheses import Hypothesis
from tools.parsers import signatures as ids
from tools.parsers.signatures import console_path
from tools.probes import checkpoint_paths as ckpt_paths
from tools.probes import value_paths as vp

# The console-log signatures whose first hit dates each family's evidence.
EVENTS: dict[str, tuple[str, ...]] = {
    "fx_trace_race": (ids.FX_NESTED_TRACE,),
    "ineffective_monkeypatch": (ids.FX_NESTED_TRACE,),
    "silent_eager_fallback": (ids.EAGER_FALLBACK, ids.FLEX_EAGER, ids.RECOMPILE_LIMIT),
    "dataset_shape_churn": (ids.RECOMPILE, ids.RECOMPILE_LIMIT),
    "limit_not_applied": (ids.RECOMPILE_LIMIT,),
    "crash_stated": (
        ids.CUDA_OOM,
        ids.COLLECTIVE_TIMEOUT,
        ids.NCCL_ERROR,
        ids.CUDA_ERROR,
        ids.INDUCTOR_ERROR,
        ids.KILLED,
        ids.CPP_TERMINATE,
    ),
}
# Lines shown around the change whichever family is open: a resume, the data loaded.
CONTEXT = (ids.RESUME, ids.DATASET_SIZE)
MAX_CONTEXT_LINES = 8


def subject_drop(symptoms: Sequence[Symptom]) -> Symptom | None:
    """The first verified drop of the judged throughput that says where it began."""
    return next(
        (
            s
            for s in symptoms
            if s.kind == "throughput_drop"
            and s.subject
            and s.status == "verified"
            and s.began is not None
        ),
        None,
    )


def _event_claims(kind: str, log: Fact | None, began: Ref) -> Iterator[Claim]:
    for sig in EVENTS.get(kind, ()):
        count = resolve(log, console_path(sig, "count")) if log is not None else MISSING
        if isinstance(count, int) and count > 0 and log is not None:
            yield Claim(
                predicate=NotBefore(
                    a=Ref(
                        fact=log.id,
                        path=console_path(sig, "first_after_step", "step"),
                        label=f"the step printed before the first {sig} line",
                    ),
                    b=began,
                )
            )


def _checkpoint_name(ckpt: Fact, path: Sequence[object]) -> str | None:
    """Which checkpoint a ref into the checkpoints fact reads: ``steps/@name=X/…``, or the
    newest finished one behind ``recorded/q`` (``recorded_from`` names it: "X/file")."""
    named = ckpt_paths.entry_name(tuple(path))
    if named is not None:
        return named
    if len(path) >= 2 and path[0] == ckpt_paths.RECORDED[0]:
        origin = resolve(ckpt, (*ckpt_paths.RECORDED_FROM, str(path[1])))
        if isinstance(origin, str) and "/" in origin:
            name = origin.split("/", 1)[0]
            steps = resolve(ckpt, ckpt_paths.STEPS)
            names = (
                [s.get("name") for s in steps if isinstance(s, dict)]
                if isinstance(steps, list)
                else []
            )
            return name if name in names else None  # a saved environment file: undated
    return None


def _baseline_claims(hypothesis: Hypothesis, ledger: Ledger, began: Ref) -> Iterator[Claim]:
    seen: set[str] = set()
    for claim in hypothesis.claims:
        refs = claim.predicate.refs()
        if len(refs) < 2:  # a comparison has two sides; one of them the baseline
            continue
        for ref in refs:
            if ref.fact not in ledger:
                continue
            fact = ledger.get(ref.fact)
            if fact.probe != "checkpoints" or not fact.ok:
                continue
            name = _checkpoint_name(fact, ref.path)
            if name is None or name in seen:
                continue
            seen.add(name)
            yield Claim(
                predicate=NotBefore(
                    a=began,
                    b=Ref(
                        fact=fact.id,
                        path=ckpt_paths.entry(name, "step"),
                        label=f"the step of checkpoint {name} (the baseline compared)",
                    ),
                )
            )


def baseline_checkpoints(refs: Sequence[Ref], ledger: Ledger) -> list[tuple[str, object, str]]:
    """(name, step, fact id) of each checkpoint the baseline sides ``refs`` read."""
    out: list[tuple[str, object, str]] = []
    for ref in refs:
        if ref.fact not in ledger or ledger.get(ref.fact).probe != "checkpoints":
            continue
        fact = ledger.get(ref.fact)
        name = _checkpoint_name(fact, ref.path)
        if name is not None and all(name != n for n, _, _ in out):
            step = resolve(fact, ckpt_paths.entry(name, "step"))
            out.append((name, None if step is MISSING else step, fact.id))
    return out


def dated(
    hypothesis: Hypothesis, ledger: Ledger, fact_ids: Sequence[str], drop: Symptom
) -> Hypothesis:
    """``hypothesis`` with its timing against ``drop`` checked (``Hypothesis.timing``)."""
    if drop.began is None:
        return hypothesis
    log = observed(latest(ledger, fact_ids, "stdoutlog"))
    claims = [
        *_event_claims(hypothesis.kind, log, drop.began),
        *_baseline_claims(hypothesis, ledger, drop.began),
    ]
    return hypothesis.model_copy(update={"timing": tuple(check(c, ledger) for c in claims)})


def context_lines(
    ledger: Ledger, fact_ids: Sequence[str], drop: Symptom
) -> list[tuple[str, list[str]]]:
    """The console lines around the change (a resume, a dataset size, each family's first
    event), in log order, each with where it stands against the step the drop began at:
    a checked ``NotBefore`` claim's sentence, unverifiable for a line the log did not
    date. Each line names the facts it rests on."""
    log = observed(latest(ledger, fact_ids, "stdoutlog"))
    if log is None or drop.began is None or drop.began_step is None:
        return []
    wanted = list(CONTEXT) + sorted({sig for sigs in EVENTS.values() for sig in sigs})
    hits = []
    for sig in wanted:
        hit = resolve(log, console_path(sig))
        if isinstance(hit, dict) and isinstance(hit.get("count"), int) and hit["count"] > 0:
            line = hit.get("first_line")
            hits.append((line if isinstance(line, int) else 1 << 62, sig, hit))
    out = []
    for line, sig, hit in sorted(hits)[:MAX_CONTEXT_LINES]:
        at = f"line {line:,}" if line < 1 << 62 else "a line of unknown number"
        n = hit["count"]
        text = repr(str(hit.get("first", ""))[:160])
        # Where the line stands against the change is the NotBefore claim's checked
        # sentence (an undated line: its unverifiable one), never a comparison made here.
        dating = Claim(
            predicate=NotBefore(
                a=Ref(
                    fact=log.id,
                    path=console_path(sig, "first_after_step", "step"),
                    label="step printed before it",
                ),
                b=drop.began,
            )
        )
        verdict = check(dating, ledger)
        shown = f"console {at} [{log.id}] ({sig}, {n:,} line{'s' if n != 1 else ''}): {text}"
        out.append((f"{shown}; {verdict.sentence}", dating.cites))
    return out


MAX_CRASH_LINES = 4
ENDS_LOG = 50  # an exception this close to the log's end is where the run stopped


def crash_lines(ledger: Ledger, fact_ids: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Where the console log says the run (or a worker) died: each cause its exception
    lines state (``exception_causes``), with the threads it ended, whether the log ends
    right after it, and the step printed before it where its signature dates it."""
    log = observed(latest(ledger, fact_ids, "stdoutlog"))
    causes = resolve(log, vp.EXCEPTION_CAUSES) if log is not None else MISSING
    if log is None or not isinstance(causes, dict):
        return []
    ended = []
    for key, cause in causes.items():
        if not isinstance(cause, dict):
            continue
        after = cause.get("lines_after")
        ends_log = isinstance(after, int) and after <= ENDS_LOG
        if cause.get("threads") or ends_log:
            line = cause.get("first_line")
            ended.append((line if isinstance(line, int) else 1 << 62, str(key), cause, ends_log))
    out = []
    for line, key, cause, ends_log in sorted(ended)[:MAX_CRASH_LINES]:
        where = f"console line {line:,}" if line < 1 << 62 else "a console line of unknown number"
        parts = [f"crash point: {key} at {where} [{log.id}]: {str(cause.get('first', ''))[:160]!r}"]
        threads = cause.get("threads") or []
        if threads:
            parts.append(f"ended thread{'s' if len(threads) != 1 else ''} {', '.join(threads)}")
        if ends_log:
            # Said only where the claim holds: its checked sentence is what is said.
            ends = Claim(
                predicate=AtMost(
                    a=Ref(
                        fact=log.id,
                        path=(*vp.EXCEPTION_CAUSES, key, "lines_after"),
                        label="console lines after it",
                    ),
                    value=ENDS_LOG,
                )
            )
            parts.append(f"the log ends right after it: {check(ends, ledger).sentence}")
        dated = resolve(log, console_path(key, "first_after_step", "step"))
        if isinstance(dated, int | float):
            parts.append(f"after step {dated:,.0f} was printed")
        out.append(("; ".join(parts), [log.id]))
    return out
