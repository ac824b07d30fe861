"""``agent.rules.environment_drift``: the environment-drift family's proposals on
hand-built diff entries. Versions are compared as versions and other quantities exactly;
a version against none or against text that is no version is left open; the claims are
the differing quantities when any differ, else the open ones with what the checkpoints
record that was not compared, else every compared quantity (the refutation); a value
read from a checkpoint is labelled with the file it came from."""

from __future__ import annotations

from typing import Any

import pytest

from agent.analysis.baseline import DiffEntry
from agent.model.claims import Claim, Differs, Ref, VersionDiffers
from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, Prediction
from agent.rules.base import Evidence
from agent.rules.environment_drift import EnvironmentDrift, _compare


@pytest.mark.parametrize(
    ("key", "now", "then", "how"),
    [
        ("torch.version", "2.11.0+cu130", "2.11.0", "same"),
        ("torch.version", "2.11.0+cu130", "2.13.0+cu130", "differs"),
        ("torch.version", "2.11.0+cu130", "2.11.0+cpu", "differs"),
        ("torch.version", None, None, "same"),
        ("torch.version", None, "2.11.0", "open"),
        ("torch.version", "n/a", "2.11.0", "open"),
        ("python.version", 3.11, "3.11", "open"),
        ("torch.git", "abc123", "abc123", "same"),
        ("torch.git", "abc123", "def456", "differs"),
        ("torch.git", None, "abc123", "differs"),
        ("torch.changed_files", 0, 3, "differs"),
    ],
    ids=[
        "build-label-one-side",
        "other-release",
        "other-build",
        "neither-recorded",
        "installed-missing",
        "not-a-version",
        "version-not-text",
        "hash-same",
        "hash-differs",
        "hash-against-none",
        "file-count",
    ],
)
def test_versions_are_compared_as_versions_and_the_rest_exactly(
    key: str, now: object, then: object, how: str
) -> None:
    """A version key is the same when the versions agree (a build label on one side says
    nothing), differs on another release or build, and is open against none or against
    anything that is not version text; any other key differs on any inequality."""
    assert _compare(key, now, then) == how


PYENV = {"python": {"version": "3.11.7"}, "torch": {"version": "2.13.0+cpu", "cuda": None}}


class World:
    """A ledger with an installed-environment fact and, optionally, a checkpoints fact."""

    def __init__(
        self, recorded: dict[str, Any] | None, sources: dict[str, str] | None = None
    ) -> None:
        self.ledger = Ledger()
        self.pyenv = self.ledger.append(Fact(probe="pyenv", target="local", value=PYENV))
        self.ids = [self.pyenv.id]
        self.checkpoints: Fact | None = None
        if recorded is not None:
            value = {"recorded": recorded, "recorded_from": sources or {}}
            self.checkpoints = self.ledger.append(
                Fact(probe="checkpoints", target="local", value=value)
            )
            self.ids.append(self.checkpoints.id)

    def entry(
        self, key: str, label: str, now: tuple[str, ...], recorded: str, values: tuple[Any, Any]
    ) -> DiffEntry:
        """A diff entry of the installed value at ``now`` against the checkpoints' record."""
        assert self.checkpoints is not None
        return DiffEntry(
            key=key,
            label=label,
            current=Ref(fact=self.pyenv.id, path=now, label=f"{label} (now)"),
            baseline=Ref(
                fact=self.checkpoints.id, path=("recorded", recorded), label=f"{label} (baseline)"
            ),
            current_value=values[0],
            baseline_value=values[1],
        )

    def propose(self, *entries: DiffEntry) -> list[Hypothesis]:
        return EnvironmentDrift().propose(Evidence(self.ledger, self.ids, list(entries)))


def test_only_the_differing_quantities_are_claimed_weighted_by_their_count() -> None:
    """Two differences and an agreement: the hypothesis claims the two, in diff order, a
    version as versions and a hash exactly, the recorded side labelled with its file where
    the checkpoints say; it weighs 2."""
    world = World(
        {"torch": "2.11.0", "torch_git": "def", "python": "3.11.7"},
        {"torch": "step_10/meta.json:torch"},
    )
    torch = world.entry(
        "torch.version", "torch version", ("torch", "version"), "torch", ("2.13.0+cpu", "2.11.0")
    )
    python = world.entry(
        "python.version", "Python version", ("python", "version"), "python", ("3.11.7", "3.11.7")
    )
    git = world.entry(
        "torch.git", "torch git hash", ("torch", "git_version"), "torch_git", ("abc", "def")
    )
    (h,) = world.propose(torch, python, git)
    assert h.claims == (
        Claim(
            predicate=VersionDiffers(
                a=torch.current,
                b=torch.baseline.model_copy(
                    update={"label": "torch version (baseline) from step_10/meta.json:torch"}
                ),
            )
        ),
        Claim(predicate=Differs(a=git.current, b=git.baseline)),
    )
    assert h.weight == 2


def test_when_all_compared_agree_every_one_is_claimed_to_be_refuted() -> None:
    """With no difference and nothing open, every compared quantity is claimed (each
    claim fails when checked: the family is refuted), weight 1."""
    world = World({"torch": "2.13.0", "python": "3.11.7"})
    torch = world.entry(
        "torch.version", "torch version", ("torch", "version"), "torch", ("2.13.0+cpu", "2.13.0")
    )
    python = world.entry(
        "python.version", "Python version", ("python", "version"), "python", ("3.11.7", "3.11.7")
    )
    (h,) = world.propose(torch, python)
    assert [c.predicate for c in h.claims] == [
        VersionDiffers(a=torch.current, b=torch.baseline),
        VersionDiffers(a=python.current, b=python.baseline),
    ]
    assert h.weight == 1


def test_an_open_quantity_brings_what_the_checkpoints_record_and_the_diff_did_not_compare() -> None:
    """Nothing differs and the installed torch is not observed: the claims are that open
    one, then each environment quantity the checkpoints record that the diff left out,
    installed side against recorded side; an agreeing one is left out."""
    world = World(
        {"torch": "2.11.0", "cuda": "12.8", "python": "3.11.7"},
        {"cuda": "env.json:cuda"},
    )
    torch = world.entry(
        "torch.version", "torch version", ("torch", "version"), "torch", (None, "2.11.0")
    )
    python = world.entry(
        "python.version", "Python version", ("python", "version"), "python", ("3.11.7", "3.11.7")
    )
    (h,) = world.propose(torch, python)
    assert world.checkpoints is not None
    assert [c.predicate for c in h.claims] == [
        VersionDiffers(a=torch.current, b=torch.baseline),
        VersionDiffers(
            a=Ref(fact=world.pyenv.id, path=("torch", "cuda"), label="torch CUDA version (now)"),
            b=Ref(
                fact=world.checkpoints.id,
                path=("recorded", "cuda"),
                label="torch CUDA version (baseline) from env.json:cuda",
            ),
        ),
    ]


def test_with_a_snapshot_what_the_checkpoints_record_is_not_the_question() -> None:
    """Entries against a snapshot's fact (not the checkpoints'): an open quantity is
    claimed alone, however much the checkpoints record."""
    world = World({"torch": "1.0.0", "cuda": "11.0"})
    snapshot = world.ledger.append(
        Fact(probe="pyenv", target="snapshot", value={"torch": {"version": "2.11.0"}})
    )
    open_torch = DiffEntry(
        key="torch.version",
        label="torch version",
        current=Ref(fact=world.pyenv.id, path=("torch", "version")),
        baseline=Ref(fact=snapshot.id, path=("torch", "version")),
        current_value="n/a",
        baseline_value="2.11.0",
    )
    (h,) = world.propose(open_torch)
    assert h.claims == (
        Claim(predicate=VersionDiffers(a=open_torch.current, b=open_torch.baseline)),
    )


def test_a_recorded_version_with_no_diff_entry_is_still_claimed() -> None:
    """No diff entry at all (the installed side could not be compared) while the
    checkpoints record torch: the family is proposed on the recorded value, to be found
    unverifiable, never dropped."""
    world = World({"torch": "2.11.0"})
    assert world.checkpoints is not None
    (h,) = world.propose()
    assert [c.predicate for c in h.claims] == [
        VersionDiffers(
            a=Ref(fact=world.pyenv.id, path=("torch", "version"), label="torch version (now)"),
            b=Ref(
                fact=world.checkpoints.id,
                path=("recorded", "torch"),
                label="torch version (baseline)",
            ),
        )
    ]


def test_other_keys_of_the_diff_are_not_the_environment() -> None:
    """A cache or script difference is no drift: with checkpoints that record nothing it
    proposes nothing."""
    world = World({})
    cache = DiffEntry(
        key="cache.inductor.files",
        label="inductor cache files",
        current=Ref(fact=world.pyenv.id, path=("x",)),
        baseline=Ref(fact=world.pyenv.id, path=("y",)),
        current_value=0,
        baseline_value=120,
    )
    assert world.propose(cache) == []


def test_without_any_checkpoints_fact_the_family_asks_for_a_baseline() -> None:
    """No diff and no checkpoints fact: a claimless hypothesis that predicts what would
    settle it, a snapshot or a checkpoint recording versions."""
    assert World(None).propose() == [
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
