"""The loss's symptoms: a loss (or, where the trainer filters it, a gradient norm) gone
NaN or infinite, and a loss that diverged, each dated at its first record."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from agent.analysis.change_points import STEADY_MIN
from agent.analysis.symptoms import Symptom
from agent.model.claims import AtLeast, Claim, Exists, Ref, WindowRatio, resolve
from agent.model.facts import Fact, as_dict
from agent.model.windows import window_series
from tools.figures import finite_number
from tools.parsers import trainlog_paths as log_paths

DIVERGED = 2.0  # the last quarter's median loss at least this times the early windows'


def loss_diverged(fact: Fact, windows: Sequence[object]) -> list[Symptom]:
    """A loss that grew: the median of the last quarter of the windows' median losses at
    least ``DIVERGED`` times the early windows' (2 to 1+n/4, as the speed's early
    baseline), dated at the first window after them whose loss is past that. A loss
    that is not positive everywhere (some objectives go negative) is not judged."""
    paths = (("loss_median",),)
    # Read before ``window_series``, which passes over the values that are not positive.
    raw = [finite_number(as_dict(w).get("loss_median")) for w in windows]
    if any(v is not None and v <= 0 for v in raw):
        return []
    points = [(i, v) for i, v, _, _ in window_series(list(windows), paths)]
    n = len(windows)
    early = [(i, v) for i, v in points if 1 <= i <= max(1, n // 4)]
    if len(points) < 2 * STEADY_MIN or len(early) < 2:
        return []
    recent = points[-max(2, len(points) // 4) :]
    base = statistics.median(v for _, v in early)
    now = statistics.median(v for _, v in recent)
    if now < DIVERGED * base:
        return []
    first = next(i for i, v in points if i > early[-1][0] and v >= DIVERGED * base)
    window = windows[first]
    step = window.get("first_step") if isinstance(window, dict) else None
    ref = Ref(fact=fact.id, path=log_paths.WINDOWS, label="loss")
    spans = ((early[0][0], early[-1][0]), (recent[0][0], recent[-1][0]))
    return [
        Symptom(
            kind="loss_diverged",
            series="loss",
            subject=False,
            step=step if isinstance(step, int | float) else None,
            ratio=now / base,
            note=f"its recent median is {now / base:.2f}× the early windows'",
            claims=(
                Claim(
                    predicate=WindowRatio(
                        a=ref,
                        series=paths,
                        before=spans[0],
                        after=spans[1],
                        ratio=DIVERGED,
                        below=False,
                    )
                ),
            ),
        )
    ]


def _broke(fact: Fact, root: str, series: str, note: str, claim: Claim) -> Symptom:
    """A non-finite loss or gradient symptom, dated at ``root``'s first such record."""
    step = as_dict(as_dict(as_dict(fact.value).get(root)).get("first_nonfinite")).get("step")
    dated = isinstance(step, int | float)
    return Symptom(
        kind="loss_nonfinite",
        series=series,
        subject=False,
        step=step if dated else None,
        began=Ref(fact=fact.id, path=(root, "first_nonfinite", "step"), label="step")
        if dated
        else None,
        began_step=step if dated else None,
        note=note,
        claims=(claim,),
    )


def _grad_nonfinite(fact: Fact) -> list[Symptom]:
    """A NaN or infinite gradient norm where the logged loss stayed finite: a trainer
    that filters such losses out of its log (Trainer's logging_nan_inf_filter writes 0)
    still shows it in the norm."""
    first = as_dict(resolve(fact, log_paths.GRAD_NORM_FIRST_NONFINITE))
    if not first:
        return []
    field = first.get("field") or "grad_norm"
    path = (*log_paths.GRAD_NORM_FIRST_NONFINITE, "value")
    label = f"the first NaN or infinite {field}"
    claim = Claim(predicate=Exists(a=Ref(fact=fact.id, path=path, label=label)))
    return [_broke(fact, "grad_norm", f"gradient norm ({field})", str(first.get("value")), claim)]


def loss_nonfinite(fact: Fact) -> list[Symptom]:
    loss = as_dict(resolve(fact, log_paths.LOSS))
    count = loss.get("nonfinite")
    if not isinstance(count, int) or count < 1:
        return _grad_nonfinite(fact)
    value = as_dict(loss.get("first_nonfinite")).get("value", "not finite")
    label = "records whose loss is NaN or infinite"
    claim = Claim(
        predicate=AtLeast(a=Ref(fact=fact.id, path=log_paths.LOSS_NONFINITE, label=label), value=1)
    )
    return [_broke(fact, "loss", "loss", f"{value} in {count} record(s), first", claim)]
