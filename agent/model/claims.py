"""Claims: typed predicates over cited facts, checked against the ledger and rendered
from the values they were checked on.

A claim can say only what its predicate checks: there is no free-text field. The
sentence a human reads is produced by ``render`` from the predicate, the cited fact ids
and the values found there, and it states the outcome of the check (a failing claim is
rendered as what the facts actually show, never as the proposer hoped).

Whoever proposes a claim (a rule, or an optional LLM), ``check`` rejects it when it cites
nothing, cites a fact the ledger does not hold, or points at a value that is not there.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agent.model.facts import Fact, Ledger, PathPart
from agent.model.shown import shown_value
from agent.model.versions import difference
from agent.model.windows import window_values
from tools.figures import finite_number


class Ref(BaseModel):
    """A value inside a fact: ``Ref(fact="F-3a9c", path=("torch", "version"))``.

    ``label`` names the quantity ("installed torch version"); it is a noun phrase shown
    beside the value and asserts nothing.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    fact: str
    path: tuple[PathPart, ...] = ()
    label: str = ""

    def show(self) -> str:
        where = ".".join(str(p) for p in self.path) or "value"
        return self.label or where


class _Pred(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def claimed(self) -> str:
        """What the claim says of its value, in a few words ("≥ 1", "present"): shown
        beside a failing claim's sentence, which says what the facts hold instead."""
        raise NotImplementedError(type(self).__name__)

    def refs(self) -> list[Ref]:
        return [
            v for v in (getattr(self, n) for n in type(self).model_fields) if isinstance(v, Ref)
        ]


def _other(b: Ref | None, value: JsonValue) -> str:
    """The other side of an (in)equality: the fact ``b`` names, else the given value."""
    return b.show() if b is not None else shown_value(value)


class Equal(_Pred):
    op: Literal["equal"] = "equal"
    a: Ref
    b: Ref | None = None
    value: JsonValue = None

    def claimed(self) -> str:
        return (
            f"equals {self.b.show()}" if self.b is not None else f"equals {shown_value(self.value)}"
        )


class Differs(_Pred):
    op: Literal["differs"] = "differs"
    a: Ref
    b: Ref | None = None
    value: JsonValue = None

    def claimed(self) -> str:
        return (
            f"differs from {self.b.show()}"
            if self.b is not None
            else f"differs from {shown_value(self.value)}"
        )


class VersionDiffers(_Pred):
    """``a`` and ``b`` are versions of one package that differ in release or in build
    (``agent.model.versions``: a local label on one side only is no difference)."""

    op: Literal["version_differs"] = "version_differs"
    a: Ref
    b: Ref

    def claimed(self) -> str:
        return "the two versions differ"


class Contains(_Pred):
    """``a`` (a string, or a list of strings/values) contains ``item``."""

    op: Literal["contains"] = "contains"
    a: Ref
    item: JsonValue

    def claimed(self) -> str:
        return f"contains {shown_value(self.item)}"


class Matches(_Pred):
    op: Literal["matches"] = "matches"
    a: Ref
    pattern: str

    def claimed(self) -> str:
        return f"matches /{self.pattern}/"


class AtLeast(_Pred):
    op: Literal["at_least"] = "at_least"
    a: Ref
    value: float

    def claimed(self) -> str:
        return f"≥ {shown_value(self.value)}"


class AtMost(_Pred):
    op: Literal["at_most"] = "at_most"
    a: Ref
    value: float

    def claimed(self) -> str:
        return f"≤ {shown_value(self.value)}"


class RatioBelow(_Pred):
    """``a / b < ratio``: e.g. tokens/s now against the baseline's."""

    op: Literal["ratio_below"] = "ratio_below"
    a: Ref
    b: Ref
    ratio: float

    def claimed(self) -> str:
        return f"below {self.ratio:g}× {self.b.show()}"


class RatioAtLeast(_Pred):
    op: Literal["ratio_at_least"] = "ratio_at_least"
    a: Ref
    b: Ref
    ratio: float

    def claimed(self) -> str:
        return f"at least {self.ratio:g}× {self.b.show()}"


class Greater(_Pred):
    """``a > b`` for two numbers: e.g. a cache's oldest entry is newer than the baseline's."""

    op: Literal["greater"] = "greater"
    a: Ref
    b: Ref

    def claimed(self) -> str:
        return f"> {self.b.show()}"


class NotBefore(_Pred):
    """``a >= b`` for two steps: when an event is dated against the run (the first FX
    error was printed after step ``a``; the slower regime began at step ``b``)."""

    op: Literal["not_before"] = "not_before"
    a: Ref
    b: Ref

    def claimed(self) -> str:
        return f"not before {self.b.show()}"


class WindowRatio(_Pred):
    """A throughput change over a train log's windows: the median, over the windows
    ``after`` (first and last index into ``a``, the list of window summaries), of the
    number at ``series`` inside each window (summed when several paths are given:
    devices side by side add up), divided by that median over the windows ``before``;
    below ``ratio`` when ``below``, else at least ``ratio``. Windows are picked by their
    place in the log, not by step: a restarted run logs the same steps again. A window
    whose paths do not all hold a number is left out."""

    op: Literal["window_ratio"] = "window_ratio"
    a: Ref
    series: tuple[tuple[PathPart, ...], ...]
    before: tuple[int, int]
    after: tuple[int, int]
    ratio: float
    below: bool = True

    def claimed(self) -> str:
        return f"{'below' if self.below else 'at least'} {self.ratio:g}×"


class Exists(_Pred):
    """The value is there and is not false, zero or empty. A null is no observation:
    the claim is unverifiable (``check``), never false."""

    op: Literal["exists"] = "exists"
    a: Ref

    def claimed(self) -> str:
        return "present"


class Absent(_Pred):
    """The value is false, zero or empty (the path itself must resolve, to a value that
    is not null: a null is no observation, so the claim is unverifiable)."""

    op: Literal["absent"] = "absent"
    a: Ref

    def claimed(self) -> str:
        return "absent"


Predicate = Annotated[
    Equal
    | Differs
    | VersionDiffers
    | Contains
    | Matches
    | AtLeast
    | AtMost
    | RatioBelow
    | RatioAtLeast
    | Greater
    | NotBefore
    | WindowRatio
    | Exists
    | Absent,
    Field(discriminator="op"),
]

PREDICATES = (
    Equal, Differs, VersionDiffers, Contains, Matches, AtLeast, AtMost, RatioBelow,
    RatioAtLeast, Greater, NotBefore, WindowRatio, Exists, Absent,
)  # fmt: skip

Outcome = Literal["holds", "fails", "unverifiable", "rejected"]


class Claim(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    predicate: Predicate

    @property
    def cites(self) -> list[str]:
        seen: list[str] = []
        for ref in self.predicate.refs():
            if ref.fact not in seen:
                seen.append(ref.fact)
        return seen


class ClaimVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    outcome: Outcome
    sentence: str  # what the facts hold, as checked (a replay compares it)
    cites: tuple[str, ...]
    claimed: str = ""  # what the claim said (``_Pred.claimed``); "" where not recorded

    def stated(self) -> str:
        """The sentence a person reads beside the verdict's mark: what the facts hold,
        and, where the claim fails, what it claimed: ✘ marks the claim, and the sentence
        beside it ("= 0 [F-1] < 1") is true."""
        if self.outcome == "fails" and self.claimed:
            return f"{self.sentence} (the claim: {self.claimed})"
        return self.sentence


MISSING = object()


def resolve(fact: Fact, path: Sequence[PathPart]) -> object:
    """The value at ``path`` in ``fact.value``, or ``MISSING``.

    A part is a dict key, a list index, or a selector ``"@key=value"`` that picks the first
    dict in a list whose ``key`` is ``value`` (as text): ``("files", "@path=/w/train.py",
    "md5")`` names one file's md5 whatever its position in the list.
    """
    value: object = fact.value
    for part in path:
        if isinstance(part, str) and part.startswith("@") and isinstance(value, list):
            key, _, wanted = part[1:].partition("=")
            value = next(
                (v for v in value if isinstance(v, dict) and str(v.get(key)) == wanted), MISSING
            )
        elif isinstance(value, dict) and isinstance(part, str):
            value = value.get(part, MISSING)
        elif isinstance(value, list) and isinstance(part, int):
            value = value[part] if -len(value) <= part < len(value) else MISSING
        else:
            return MISSING
        if value is MISSING:
            return MISSING
    return value


def _truthy(value: object) -> bool:
    return value not in (False, 0, 0.0, "", [], {})


def check(claim: Claim, ledger: Ledger) -> ClaimVerdict:
    """Check ``claim`` on the facts it cites; the verdict's sentence is rendered here."""
    pred = claim.predicate
    refs = pred.refs()
    cites = tuple(claim.cites)
    if not refs:
        return ClaimVerdict(outcome="rejected", sentence="claim cites no fact", cites=cites)
    values: dict[Ref, object] = {}
    for ref in refs:
        if ref.fact not in ledger:
            return ClaimVerdict(
                outcome="rejected",
                sentence=f"claim cites {ref.fact}, which is not in the ledger",
                cites=cites,
            )
        fact = ledger.get(ref.fact)
        if not fact.ok:
            return ClaimVerdict(
                outcome="unverifiable",
                sentence=f"{ref.fact} ({fact.probe}) is a failed observation: {fact.error}",
                cites=cites,
            )
        value = resolve(fact, ref.path)
        if value is MISSING:
            return ClaimVerdict(
                outcome="unverifiable",
                sentence=f"{ref.fact} ({fact.probe}) has no {ref.show()}",
                cites=cites,
            )
        if value is None and not isinstance(pred, VersionDiffers):
            # (VersionDiffers renders both sides, then leaves a null one open itself.)
            # A probe writes null where it could not see the thing (a package the probed
            # interpreter cannot import, a value a file did not carry): no observation,
            # so no claim on it can fail. Only an observed value refutes.
            return ClaimVerdict(
                outcome="unverifiable",
                sentence=f"{ref.fact} ({fact.probe}) observed no {ref.show()} (null)",
                cites=cites,
            )
        values[ref] = value
    holds, sentence = _evaluate(pred, values)
    if holds is None:
        return ClaimVerdict(outcome="unverifiable", sentence=sentence, cites=cites)
    return ClaimVerdict(
        outcome="holds" if holds else "fails",
        sentence=sentence,
        cites=cites,
        claimed=pred.claimed(),
    )


def _shown(ref: Ref, values: dict[Ref, object]) -> str:
    return f"{ref.show()} = {shown_value(values[ref])} [{ref.fact}]"


def _version_differs(pred: VersionDiffers, values: dict[Ref, object]) -> tuple[bool | None, str]:
    left, right = values[pred.a], values[pred.b]
    how = difference(left, right) if isinstance(left, str) and isinstance(right, str) else None
    pair = f"{_shown(pred.a, values)} and {_shown(pred.b, values)}"
    if left is None and right is None:
        return None, f"{pair}: neither has a version; not compared"
    if (left is None) != (right is None):
        # None on one side: the interpreter probed has no such package (or a CPU torch, no
        # CUDA). That may be the wrong interpreter rather than drift: left open.
        return None, f"{pair}: only one has a version; not compared"
    if how is None:
        return None, f"{pair}: not both versions"
    if how == "release":
        return True, f"{pair} are different releases"
    if how == "build":
        return True, f"{pair} are one release in different builds (local labels differ)"
    if left != right:
        # Only one side carries a local label: see agent.model.versions for why that is the same.
        return False, f"{pair} are the same release; only one names its build"
    return False, f"{pair} are the same version"


def _evaluate(pred: _Pred, values: dict[Ref, object]) -> tuple[bool | None, str]:
    if isinstance(pred, Equal | Differs):
        left = values[pred.a]
        right = values[pred.b] if pred.b is not None else pred.value
        other = _shown(pred.b, values) if pred.b is not None else shown_value(pred.value)
        same = left == right
        verb = "equals" if same else "differs from"
        return (
            same if isinstance(pred, Equal) else not same
        ), f"{_shown(pred.a, values)} {verb} {other}"
    if isinstance(pred, VersionDiffers):
        return _version_differs(pred, values)
    if isinstance(pred, Contains):
        hay = values[pred.a]
        if (isinstance(hay, str) and isinstance(pred.item, str)) or isinstance(hay, list | dict):
            found = pred.item in hay
        else:
            return None, f"{pred.a.show()} [{pred.a.fact}] is not text or a list"
        verb = "contains" if found else "does not contain"
        return found, f"{pred.a.show()} [{pred.a.fact}] {verb} {shown_value(pred.item)}"
    if isinstance(pred, Matches):
        text = values[pred.a]
        if not isinstance(text, str):
            return None, f"{pred.a.show()} [{pred.a.fact}] is not text"
        found = re.search(pred.pattern, text) is not None
        verb = "matches" if found else "does not match"
        return found, f"{_shown(pred.a, values)} {verb} /{pred.pattern}/"
    if isinstance(pred, AtLeast | AtMost):
        number = finite_number(values[pred.a])
        if number is None:
            return None, f"{pred.a.show()} [{pred.a.fact}] is not a number"
        ok = number >= pred.value if isinstance(pred, AtLeast) else number <= pred.value
        rel = ("≥" if ok else "<") if isinstance(pred, AtLeast) else ("≤" if ok else ">")
        return ok, f"{_shown(pred.a, values)} {rel} {shown_value(pred.value)}"
    if isinstance(pred, RatioBelow | RatioAtLeast):
        num, den = finite_number(values[pred.a]), finite_number(values[pred.b])
        if num is None or den is None or den == 0:
            return None, f"{pred.a.show()} / {pred.b.show()} is not a ratio of numbers"
        ratio = num / den
        ok = ratio < pred.ratio if isinstance(pred, RatioBelow) else ratio >= pred.ratio
        rel = ("<" if ok else "≥") if isinstance(pred, RatioBelow) else ("≥" if ok else "<")
        a, b = _shown(pred.a, values), _shown(pred.b, values)
        return ok, f"{a} is {ratio:.2f}× {b} ({rel} {pred.ratio:g}×)"
    if isinstance(pred, Greater):
        left, right = finite_number(values[pred.a]), finite_number(values[pred.b])
        if left is None or right is None:
            return None, f"{pred.a.show()} or {pred.b.show()} is not a number"
        rel = ">" if left > right else "≤"
        return left > right, f"{_shown(pred.a, values)} {rel} {_shown(pred.b, values)}"
    if isinstance(pred, NotBefore):
        left, right = finite_number(values[pred.a]), finite_number(values[pred.b])
        if left is None or right is None:
            return None, f"{pred.a.show()} or {pred.b.show()} is not a step"
        rel = "not before" if left >= right else "before"
        return left >= right, f"{_shown(pred.a, values)}, {rel} {_shown(pred.b, values)}"
    if isinstance(pred, WindowRatio):
        return _window_ratio(pred, values[pred.a])
    if isinstance(pred, Exists | Absent):
        present = _truthy(values[pred.a])
        text = f"{_shown(pred.a, values)} ({'present' if present else 'empty'})"
        return (present if isinstance(pred, Exists) else not present), text
    raise AssertionError(f"unhandled predicate {type(pred).__name__}")


def _span(n: int, steps: tuple[float | None, float | None]) -> str:
    lo, hi = steps
    where = (
        f"steps {shown_value(lo)}–{shown_value(hi)}"
        if lo is not None and hi is not None
        else "no steps"
    )
    return f"{n} window(s), {where}"


def _window_ratio(pred: WindowRatio, windows: object) -> tuple[bool | None, str]:
    label = pred.a.show()
    if not isinstance(windows, list):
        return None, f"{label} [{pred.a.fact}] is not a list of windows"
    before, b_steps = window_values(windows, pred.series, pred.before)
    after, a_steps = window_values(windows, pred.series, pred.after)
    if not before or not after:
        return None, (
            f"{label} [{pred.a.fact}]: {_span(len(before), b_steps)} before, "
            f"{_span(len(after), a_steps)} after: nothing to compare"
        )
    b, a = statistics.median(before), statistics.median(after)
    if b <= 0:
        return None, f"{label} [{pred.a.fact}]: median {b:g} before: not a ratio"
    ratio = a / b
    ok = ratio < pred.ratio if pred.below else ratio >= pred.ratio
    rel = ("<" if ok else "≥") if pred.below else ("≥" if ok else "<")
    return ok, (
        f"{label}: median {shown_value(b)} in {_span(len(before), b_steps)} → {shown_value(a)} in "
        f"{_span(len(after), a_steps)} [{pred.a.fact}]: {ratio:.2f}× ({rel} {pred.ratio:g}×)"
    )
