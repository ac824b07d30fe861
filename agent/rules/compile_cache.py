"""Compile cache cold or wiped: a cache is missing or empty, or its oldest entry is newer
than the baseline's (everything the baseline had was deleted and rebuilt since)."""

from __future__ import annotations

from agent.claims import Absent, Claim, Greater
from agent.hypotheses import Hypothesis, Kind
from agent.rules.base import Evidence, ref


class CompileCacheCold:
    kind: Kind = "compile_cache_cold"
    needs = frozenset({"caches"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        fact = evidence.latest("caches")
        if fact is None or not fact.ok:
            return []
        caches = evidence.value("caches", "caches")
        out: list[Hypothesis] = []
        for cache in caches if isinstance(caches, list) else []:
            if not isinstance(cache, dict) or (
                cache.get("source") == "default" and not cache.get("exists")
            ):
                # A default location nobody uses (triton on a CPU machine) says nothing.
                continue
            name = str(cache.get("cache"))
            selector = f"@cache={name}"
            if not cache.get("exists") or not cache.get("files"):
                field = "exists" if not cache.get("exists") else "files"
                out.append(
                    Hypothesis(
                        kind="compile_cache_cold",
                        claims=(
                            Claim(
                                predicate=Absent(
                                    a=ref(
                                        fact,
                                        "caches",
                                        selector,
                                        field,
                                        label=f"{name} cache {field}",
                                    )
                                )
                            ),
                        ),
                        probes=("caches",),
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
