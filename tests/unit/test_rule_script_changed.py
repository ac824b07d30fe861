"""The script-changed rule: a training script's md5 differs from the baseline's. Every
script compared is claimed to differ where any does, else all of them (refuted), so the
report shows what was compared. Diff entries are built in memory over checksum facts; the
rule's claims are checked on them."""

from __future__ import annotations

from agent.analysis.baseline import DiffEntry
from agent.model.claims import Ref
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, verify
from agent.rules.base import Evidence
from agent.rules.script_changed import ScriptChanged


def said(h: Hypothesis) -> list[tuple[str, str]]:
    return [(v.outcome, v.sentence) for v in h.verdicts]


class Compared:
    """Checksums now and at the baseline, and the diff entries between them."""

    def __init__(self, now: dict[str, str], then: dict[str, str]) -> None:
        self.ledger = Ledger()
        self.now = self.checksums(now)
        self.then = self.checksums(then)
        self.diff = [self.entry(path, now[path], then[path]) for path in now]

    def checksums(self, md5s: dict[str, str]) -> Fact:
        files = [{"path": p, "md5": m} for p, m in md5s.items()]
        return self.ledger.append(Fact(probe="checksums", target="local", value={"files": files}))

    def entry(self, path: str, now: str, then: str) -> DiffEntry:
        at = ("files", f"@path={path}", "md5")
        return DiffEntry(
            key=f"md5:{path}",
            label=f"md5 of {path}",
            current=Ref(fact=self.now.id, path=at, label=f"md5 of {path} now"),
            baseline=Ref(fact=self.then.id, path=at, label=f"md5 of {path} at the baseline"),
            current_value=now,
            baseline_value=then,
        )

    def checked(self, diff: list[DiffEntry] | None = None) -> list[Hypothesis]:
        diff = self.diff if diff is None else diff
        evidence = Evidence(self.ledger, [self.then.id, self.now.id], diff)
        return [verify(h, self.ledger) for h in ScriptChanged().propose(evidence)]


def test_a_changed_script_is_verified_and_only_the_changed_ones_are_claimed() -> None:
    """Of two scripts, train.py changed: one hypothesis claiming its md5 differs (the
    unchanged one is not claimed), verified, weight 1."""
    c = Compared(
        {"/w/train.py": "aa", "/w/model.py": "cc"}, {"/w/train.py": "bb", "/w/model.py": "cc"}
    )
    [h] = c.checked()
    assert h.status == "verified"
    assert said(h) == [
        (
            "holds",
            f"md5 of /w/train.py now = 'aa' [{c.now.id}] differs from md5 of /w/train.py at the "
            f"baseline = 'bb' [{c.then.id}]",
        )
    ]
    assert h.weight == 1


def test_the_weight_is_the_number_of_changed_scripts() -> None:
    """Three scripts changed: all three claimed, and the weight is three."""
    paths = ["/w/a.py", "/w/b.py", "/w/c.py"]
    c = Compared({p: "new" for p in paths}, {p: "old" for p in paths})
    [h] = c.checked()
    assert h.status == "verified"
    assert len(h.verdicts) == 3
    assert h.weight == 3


def test_scripts_that_did_not_change_are_all_claimed_and_refuted() -> None:
    """No script changed: every one compared is claimed to differ, each claim fails with
    the md5s that are equal, and the hypothesis is refuted with weight 1."""
    c = Compared(
        {"/w/train.py": "aa", "/w/model.py": "cc"}, {"/w/train.py": "aa", "/w/model.py": "cc"}
    )
    [h] = c.checked()
    assert h.status == "refuted"
    assert said(h) == [
        (
            "fails",
            f"md5 of /w/train.py now = 'aa' [{c.now.id}] equals md5 of /w/train.py at the "
            f"baseline = 'aa' [{c.then.id}]",
        ),
        (
            "fails",
            f"md5 of /w/model.py now = 'cc' [{c.now.id}] equals md5 of /w/model.py at the "
            f"baseline = 'cc' [{c.then.id}]",
        ),
    ]
    assert h.weight == 1


def test_without_md5s_compared_nothing_is_proposed() -> None:
    """A diff with no ``md5:`` entry (no baseline, or only other quantities compared)
    proposes nothing."""
    c = Compared({"/w/train.py": "aa"}, {"/w/train.py": "bb"})
    other = DiffEntry(
        key="torch",
        label="torch",
        current=Ref(fact=c.now.id, path=("torch",)),
        baseline=Ref(fact=c.then.id, path=("torch",)),
        current_value="2.11",
        baseline_value="2.10",
    )
    assert c.checked([other]) == []
    assert c.checked([]) == []
