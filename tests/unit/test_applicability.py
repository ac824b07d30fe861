"""agent.graph.applicability: the compiler's failure families set aside as not applicable
when checked claims show the run never compiles (no compile site in its scripts, none
unreadable, no line of torch's compiler in its console), and left as they are wherever
that cannot be checked."""

from __future__ import annotations

from typing import Any

import pytest

from agent.graph.applicability import compile_absent_claims, set_aside
from agent.model.claims import AtMost, Claim, Ref
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, Kind, Status
from tools.parsers.signatures import COMPILER


def scripts(ledger: Ledger, sites: int = 0, unread: int = 0) -> Fact:
    value = {"compile_sites": sites, "unread": unread}
    return ledger.append(Fact(probe="script_patches", target="local", value=value))


def console(ledger: Ledger, **counts: int) -> Fact:
    """A console fact counting 0 lines of each compiler signature but those given."""
    signatures: dict[str, Any] = {sig: {"count": counts.get(sig, 0)} for sig in COMPILER}
    return ledger.append(Fact(probe="stdoutlog", target="local", value={"signatures": signatures}))


def absent(fact: Fact, path: tuple[str, ...], label: str) -> Claim:
    return Claim(predicate=AtMost(a=Ref(fact=fact.id, path=path, label=label), value=0))


def test_the_claims_that_nothing_compiles() -> None:
    """No compile site and no unreadable script in the workspace, and no console line of
    each of the compiler's signatures, each claimed as at most zero."""
    ledger = Ledger()
    code, out = scripts(ledger), console(ledger)
    assert compile_absent_claims(ledger, [code.id, out.id]) == (
        absent(code, ("compile_sites",), "torch.compile sites in the workspace's scripts"),
        absent(code, ("unread",), "workspace scripts that could not be read"),
        *(
            absent(out, ("signatures", sig, "count"), f"console lines of torch's compiler ({sig})")
            for sig in COMPILER
        ),
    )


@pytest.mark.parametrize(
    "missing",
    ["scripts", "console", "scripts-failed", "console-failed"],
)
def test_without_both_observations_nothing_is_claimed(missing: str) -> None:
    """A scripts or console fact that is missing or failed leaves no claims to check: None,
    never an empty set that would hold vacuously."""
    ledger = Ledger()
    ids = []
    if missing != "scripts":
        ids.append(scripts(ledger).id)
    if missing != "console":
        ids.append(console(ledger).id)
    if missing.endswith("failed"):
        probe = "script_patches" if missing.startswith("scripts") else "stdoutlog"
        ids.append(ledger.append(Fact(probe=probe, target="local", error="unreadable")).id)
    assert compile_absent_claims(ledger, ids) is None


def hyp(kind: Kind, status: Status) -> Hypothesis:
    return Hypothesis(kind=kind, claims=(), status=status)


CHECKED = [
    hyp("fx_trace_race", "refuted"),
    hyp("environment_drift", "refuted"),
    hyp("silent_eager_fallback", "unverifiable"),
    hyp("compile_cache_cold", "verified"),
    hyp("limit_not_applied", "untested"),
]


def test_a_run_that_never_compiles_sets_the_unverified_compile_families_aside() -> None:
    """Every claim that nothing compiles holds: the compiler's families that are not
    verified are set aside, in their order, with the claims and their verdicts; a
    verified one stays (its own facts outweigh), and other families stay."""
    ledger = Ledger()
    ids = [scripts(ledger).id, console(ledger).id]
    kept, aside = set_aside(CHECKED, ledger, ids)
    assert [h.kind for h in kept] == ["environment_drift", "compile_cache_cold"]
    assert aside is not None
    assert aside.kinds == ("fx_trace_race", "silent_eager_fallback", "limit_not_applied")
    assert aside.claims == compile_absent_claims(ledger, ids)
    assert [v.outcome for v in aside.verdicts] == ["holds"] * (2 + len(COMPILER))


@pytest.mark.parametrize(
    ("sites", "unread", "lines"),
    [
        (1, 0, {}),
        (0, 2, {}),
        (0, 0, {"recompile": 3}),
        (0, 0, {"inductor_error": 1}),
    ],
    ids=["a-compile-site", "unreadable-scripts", "recompile-lines", "an-inductor-error"],
)
def test_any_sign_of_compiling_keeps_every_family(
    sites: int, unread: int, lines: dict[str, int]
) -> None:
    """A compile site, a script that could not be read, or one console line of the
    compiler: nothing is set aside."""
    ledger = Ledger()
    ids = [scripts(ledger, sites, unread).id, console(ledger, **lines).id]
    assert set_aside(CHECKED, ledger, ids) == (CHECKED, None)


def test_a_console_that_did_not_count_the_compiler_keeps_every_family() -> None:
    """A console fact without the signatures' counts leaves the claims unverifiable:
    absence is not assumed, and nothing is set aside."""
    ledger = Ledger()
    out = ledger.append(Fact(probe="stdoutlog", target="local", value={"signatures": {}}))
    assert set_aside(CHECKED, ledger, [scripts(ledger).id, out.id]) == (CHECKED, None)


def test_with_no_compile_family_to_set_aside_there_is_no_note() -> None:
    """A run that never compiles, but whose only compile family is verified (or that has
    none): the families are returned as they were, with nothing said set aside."""
    ledger = Ledger()
    ids = [scripts(ledger).id, console(ledger).id]
    only = [hyp("compile_cache_cold", "verified"), hyp("script_changed", "refuted")]
    assert set_aside(only, ledger, ids) == (only, None)
