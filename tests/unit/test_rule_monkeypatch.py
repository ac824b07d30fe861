"""The ineffective-monkeypatch rule: something replaced torch's ``is_fx_symbolic_tracing``,
found in the training scripts or announced in the console, yet compiled wrappers bound the
original when they were created and the FX-trace error is still printed (after the
announcement, where the console dates it). Facts are built in memory as the probes write
them; the rule's claims are checked on them."""

from __future__ import annotations

from typing import Any

from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, verify
from agent.rules.base import Evidence
from agent.rules.monkeypatch import IneffectiveMonkeypatch

IN_SCRIPTS = "patches of torch's FX check (is_fx_symbolic_tracing…) in scripts"
BINDS = "compiled wrappers bind the FX check at creation"


def said(h: Hypothesis) -> list[tuple[str, str]]:
    return [(v.outcome, v.sentence) for v in h.verdicts]


def console(errors: int, last: int = 9000, announced: int = 0, first: int = 1200) -> Any:
    """A console fact's value: FX-trace errors (the last at byte ``last``) and the
    trainer's announcements of an FX-check patch (the first at byte ``first``)."""
    return {
        "signatures": {
            "fx_nested_trace": {"count": errors, "last_offset": last},
            "fx_check_patch": {"count": announced, "first_offset": first},
        }
    }


class Session:
    def __init__(self) -> None:
        self.ledger = Ledger()
        self.ids: list[str] = []

    def add(self, probe: str, value: Any = None, error: str | None = None) -> Fact:
        fact = self.ledger.append(Fact(probe=probe, target="local", value=value, error=error))
        self.ids.append(fact.id)
        return fact

    def checked(self) -> list[Hypothesis]:
        found = IneffectiveMonkeypatch().propose(Evidence(self.ledger, self.ids))
        return [verify(h, self.ledger) for h in found]


SOURCE = {"binds_check_at_wrap": {"value": True}}


def test_a_patch_in_the_scripts_with_the_error_still_printed_is_verified() -> None:
    """Two patches of the FX check in the scripts, wrappers that bind the check at
    creation, and four FX-trace errors printed: verified, weight 2."""
    s = Session()
    patches = s.add("script_patches", {"fx_check_patches": 2})
    src = s.add("torch_source", SOURCE)
    log = s.add("stdoutlog", console(4))
    [h] = s.checked()
    assert h.status == "verified"
    assert said(h) == [
        ("holds", f"{IN_SCRIPTS} = 2 [{patches.id}] ≥ 1"),
        ("holds", f"{BINDS} = True [{src.id}] equals True"),
        ("holds", f"FX-trace error lines despite the patch = 4 [{log.id}] ≥ 1"),
    ]
    assert h.weight == 2


def test_a_patch_that_did_stop_the_error_is_refuted() -> None:
    """A patch in the scripts and no FX-trace error printed: the patch did its work, and
    the family is refuted on the zero count."""
    s = Session()
    s.add("script_patches", {"fx_check_patches": 1})
    log = s.add("stdoutlog", console(0))
    [h] = s.checked()
    assert h.status == "refuted"
    assert said(h)[-1] == ("fails", f"FX-trace error lines despite the patch = 0 [{log.id}] < 1")


def test_a_patch_announced_in_the_log_before_an_error_is_verified() -> None:
    """No patch in the scripts, but the trainer announced one at byte 1,200 and an
    FX-trace error followed at byte 9,000: the error is one the patch did not prevent."""
    s = Session()
    s.add("script_patches", {"fx_check_patches": 0})
    log = s.add("stdoutlog", console(4, last=9000, announced=1, first=1200))
    [h] = s.checked()
    assert h.status == "verified"
    assert said(h) == [
        ("holds", f"FX-check patches announced in the log = 1 [{log.id}] ≥ 1"),
        (
            "holds",
            f"last FX-trace error (byte offset) = 9,000 [{log.id}] > first announced FX-check "
            f"patch (byte offset) = 1,200 [{log.id}]",
        ),
        ("holds", f"FX-trace error lines despite the patch = 4 [{log.id}] ≥ 1"),
    ]


def test_errors_only_before_the_announcement_refute_it() -> None:
    """The last FX-trace error was printed before the patch was announced: the patch may
    have worked, and the ordering claim fails."""
    s = Session()
    log = s.add("stdoutlog", console(3, last=500, announced=1, first=1200))
    [h] = s.checked()
    assert h.status == "refuted"
    assert said(h)[1] == (
        "fails",
        f"last FX-trace error (byte offset) = 500 [{log.id}] ≤ first announced FX-check "
        f"patch (byte offset) = 1,200 [{log.id}]",
    )


def test_a_patch_in_the_scripts_is_cited_before_one_in_the_log() -> None:
    """Found in both, the patch is cited from the scripts; the log's announcement and its
    ordering are not claimed."""
    s = Session()
    patches = s.add("script_patches", {"fx_check_patches": 1})
    s.add("stdoutlog", console(2, announced=1))
    [h] = s.checked()
    assert said(h)[0][1].startswith(f"{IN_SCRIPTS} = 1 [{patches.id}]")
    assert len(h.verdicts) == 2


def test_no_patch_anywhere_is_looked_for_and_refuted() -> None:
    """Scripts read with no patch in them and none announced: the usual claim is made so
    the report shows it was looked for, and it fails alone."""
    s = Session()
    patches = s.add("script_patches", {"fx_check_patches": 0})
    s.add("torch_source", SOURCE)
    s.add("stdoutlog", console(4))
    [h] = s.checked()
    assert h.status == "refuted"
    assert said(h) == [("fails", f"{IN_SCRIPTS} = 0 [{patches.id}] < 1")]


def test_without_scripts_read_or_a_patch_announced_nothing_is_proposed() -> None:
    """Scripts not read (no fact, or a failed one) and no announcement in the console: the
    family cannot be looked for, and is not proposed."""
    s = Session()
    s.add("stdoutlog", console(4))
    assert s.checked() == []
    s.add("script_patches", None, "timeout: killed")
    assert s.checked() == []
