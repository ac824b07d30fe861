"""Compile cache cold or wiped.

A missing or empty cache only means something where a warm one was expected: the
baseline had entries there, or a trainer has already written checkpoints in this
workspace. The other form: the cache's oldest entry is newer than the baseline's, so
everything the baseline had was deleted and rebuilt since.
"""

from __future__ import annotations

from agent.claims import Absent, AtLeast, Claim, Greater
from agent.hypotheses import Hypothesis, Kind
from agent.rules.base import Evidence, ref


class CompileCacheCold:
    kind: Kind = "compile_cache_cold"
    needs = frozenset({"caches", "checkpoints"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        fact = evidence.latest("caches")
        if fact is None or not fact.ok:
            return []
        caches = evidence.value("caches", "caches")
        out: list[Hypothesis] = []
        for cache in caches if isinstance(caches, list) else []:
            if not isinstance(cache, dict) or (cache.get("exists") and cache.get("files")):
                continue
            name = str(cache.get("cache"))
            field = "exists" if not cache.get("exists") else "files"
            gone = Claim(
                predicate=Absent(
                    a=ref(
                        fact,
                        "caches",
                        f"@cache={name}",
                        field,
                        label=f"{name} compile cache {cache.get('path')}: {field}",
                    )
                )
            )
            warm_before = self._expected_warm(evidence, name, str(cache.get("source")))
            if warm_before is not None:
                out.append(
                    Hypothesis(
                        kind="compile_cache_cold",
                        claims=(warm_before, gone),
                        probes=("caches",),
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
                        probes=("caches",),
                    )
                )
        return out

    def _expected_warm(self, evidence: Evidence, name: str, source: str) -> Claim | None:
        """Why a warm cache was expected here, as a claim; None when nothing says so."""
        before = next((d for d in evidence.diff if d.key == f"cache.{name}.files"), None)
        if before is not None:
            return Claim(predicate=AtLeast(a=before.baseline, value=1))
        if source == "default":
            # A default location (triton's on a CPU-only machine, say) may simply never
            # have been used; only a cache someone pointed the trainer at is expected.
            return None
        ckpt = evidence.latest("checkpoints")
        if ckpt is not None and ckpt.ok and evidence.value("checkpoints", "latest_step"):
            return Claim(
                predicate=AtLeast(
                    a=ref(ckpt, "latest_step", label="latest checkpoint step in this workspace"),
                    value=1,
                )
            )
        return None
