"""Compile cache cold or wiped.

A missing or empty cache only means something where a warm one was expected, and only
two things say so: the baseline saw it warm, or the trainer's configuration names it (the
profile, the running trainer's environment, its launch file: the caches fact's
``source``) and the trainer has written checkpoints since, so it ran and compiled. A
cache at a default location, or at the bundle's own environment's, is no expectation: a
trainer may never have used it. The other form: the cache's oldest entry is newer than
the baseline's, so everything the baseline had was deleted and rebuilt since.
"""

from __future__ import annotations

from agent.model.claims import Absent, AtLeast, Claim, Greater, Matches
from agent.model.facts import Fact
from agent.model.hypotheses import Hypothesis, Kind
from agent.rules.base import Evidence, ref
from tools.probes import value_paths as vp

# Where a cache's path came from when the trainer's configuration names it (see
# tools.probes.caches: ``param`` is the profile's).
CONFIGURED = r"^(param|process:|launch:)"
SOURCES = {
    "param": "the profile",
    "process": "the trainer's environment",
    "launch": "a launch file",
}


class CompileCacheCold:
    kind: Kind = "compile_cache_cold"
    needs = frozenset({"caches", "checkpoints"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        fact = evidence.latest("caches")
        if fact is None or not fact.ok:
            return []
        caches = evidence.value("caches", *vp.CACHES)
        out: list[Hypothesis] = []
        for cache in caches if isinstance(caches, list) else []:
            if not isinstance(cache, dict) or (cache.get("exists") and cache.get("files")):
                continue
            name, path = str(cache.get("cache")), str(cache.get("path"))
            field = "exists" if not cache.get("exists") else "files"
            # Selected by path: several extra caches share the name ``extra``.
            gone = Claim(
                predicate=Absent(
                    a=ref(
                        fact,
                        "caches",
                        f"@path={path}",
                        field,
                        label=f"{name} compile cache {path}: {field}",
                    )
                )
            )
            expected = self._expected_warm(evidence, fact, cache)
            if expected:
                out.append(
                    Hypothesis(
                        kind="compile_cache_cold",
                        claims=(*expected, gone),
                        weight=2,
                    )
                )
        for entry in evidence.diff:
            if entry.key.startswith("cache.") and entry.key.endswith(".oldest"):
                out.append(
                    Hypothesis(
                        kind="compile_cache_cold",
                        claims=(Claim(predicate=Greater(a=entry.current, b=entry.baseline)),),
                        weight=2,
                    )
                )
        return out

    def _expected_warm(
        self, evidence: Evidence, fact: Fact, cache: dict[str, object]
    ) -> tuple[Claim, ...]:
        """Why a warm cache was expected here, as claims; empty when nothing says so."""
        name, path, source = str(cache.get("cache")), cache.get("path"), str(cache.get("source"))
        before = next((d for d in evidence.diff if d.key == f"cache.{name}.files"), None)
        if before is not None and _same_path(evidence, before.baseline.fact, name, path):
            return (Claim(predicate=AtLeast(a=before.baseline, value=1)),)
        kind = source.split(":", 1)[0]
        if kind not in SOURCES:
            # A default location (triton's on a CPU-only machine, say), or the bundle's
            # own environment's, may simply never have been used by this trainer.
            return ()
        configured = Claim(
            predicate=Matches(
                a=ref(
                    fact,
                    "caches",
                    f"@path={path}",
                    "source",
                    label=f"{name} compile cache {path} named by {SOURCES[kind]}",
                ),
                pattern=CONFIGURED,
            )
        )
        ckpt = evidence.latest("checkpoints")
        if ckpt is None:
            return ()
        ran = Claim(
            predicate=AtLeast(
                a=ref(ckpt, "latest_step", label="latest checkpoint step the trainer wrote"),
                value=1,
            )
        )
        return configured, ran


def _same_path(evidence: Evidence, baseline_fact: str, name: str, path: object) -> bool:
    """Whether the baseline's ``name`` cache was this one: a cache that moved (another
    profile, another environment) says nothing about the old place being warm."""
    if baseline_fact not in evidence.ledger:
        return True
    old = evidence.ledger.get(baseline_fact).value
    caches = old.get("caches") if isinstance(old, dict) else None
    for cache in caches if isinstance(caches, list) else []:
        if isinstance(cache, dict) and cache.get("cache") == name:
            return bool(cache.get("path") == path)
    return True
