"""Families whose precondition the run does not meet: "not applicable", checked.

Six families are about torch's compiler (an FX-tracing race while compiling, compiled
code falling back to eager, a patch of the FX check compiled wrappers bind, recompiles
from new shapes, a cold compile cache, a recompile limit set where it does not apply).
A run that never compiles cannot have any of them, and a report that lists them refuted
one by one, above the one thing that mattered, buries it. Whether the run compiles is
itself a checked claim: no ``torch.compile`` call, decorator or ``torch_compile=``
keyword in the workspace's scripts (``script_patches``), none of them unreadable, and no
line of torch's compiler in the console (``stdoutlog``). Where a claim cannot be checked
(a probe failed, a script could not be read) the families stay as they are: absence is
never assumed.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from agent.model.claims import AtMost, Claim, ClaimVerdict, Ref, check
from agent.model.facts import Fact, Ledger, latest
from agent.model.hypotheses import Hypothesis, status_of
from tools.parsers.signatures import COMPILER, console_path

# The families that need the run to compile.
COMPILE_FAMILIES = frozenset(
    {
        "fx_trace_race",
        "silent_eager_fallback",
        "ineffective_monkeypatch",
        "dataset_shape_churn",
        "compile_cache_cold",
        "limit_not_applied",
    }
)


class NotApplicable(BaseModel):
    """The families set aside, and the checked claims that the run does not compile."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kinds: tuple[str, ...]
    claims: tuple[Claim, ...]
    verdicts: tuple[ClaimVerdict, ...] = ()


def _absent(fact: Fact, path: tuple[str | int, ...], label: str) -> Claim:
    return Claim(predicate=AtMost(a=Ref(fact=fact.id, path=path, label=label), value=0))


def compile_absent_claims(ledger: Ledger, fact_ids: Sequence[str]) -> tuple[Claim, ...] | None:
    """The claims that nothing in the run compiles, or None when a probe to check them
    is missing or failed."""
    scripts = latest(ledger, fact_ids, "script_patches")
    console = latest(ledger, fact_ids, "stdoutlog")
    if scripts is None or console is None or not scripts.ok or not console.ok:
        return None
    claims = [
        _absent(scripts, ("compile_sites",), "torch.compile sites in the workspace's scripts"),
        _absent(scripts, ("unread",), "workspace scripts that could not be read"),
    ]
    claims += [
        _absent(console, console_path(sig, "count"), f"console lines of torch's compiler ({sig})")
        for sig in COMPILER
    ]
    return tuple(claims)


def set_aside(
    checked: Sequence[Hypothesis], ledger: Ledger, fact_ids: Sequence[str]
) -> tuple[list[Hypothesis], NotApplicable | None]:
    """``checked`` without the compile families that were not verified, when every
    claim that the run does not compile holds; and what was set aside, with those
    claims' verdicts. A verified family always stays: its own facts outweigh."""
    claims = compile_absent_claims(ledger, fact_ids)
    if claims is None:
        return list(checked), None
    verdicts = tuple(check(c, ledger) for c in claims)
    if status_of(verdicts) != "verified":
        return list(checked), None
    aside = [h for h in checked if h.kind in COMPILE_FAMILIES and h.status != "verified"]
    if not aside:
        return list(checked), None
    kept = [h for h in checked if h not in aside]
    return kept, NotApplicable(kinds=tuple(h.kind for h in aside), claims=claims, verdicts=verdicts)
