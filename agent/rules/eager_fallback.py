"""Silent eager fallback: the drafter runs below the baseline and nothing crashed,
with a sign that compiled code is not what runs (dynamo hit its recompile limit, logged
an eager fallback, the trainer was configured to run eager on a nested FX trace, or the
live trainer's threads are sampled running flex_attention's eager path, or compiling for
most of the window on a run that slowed: a recompile storm)."""

from __future__ import annotations

import re

from agent.analysis.throughput import primary_entry
from agent.model.claims import AtLeast, AtMost, Claim, Equal, Matches, RatioBelow
from agent.model.facts import as_dict
from agent.model.hypotheses import Hypothesis, Kind
from agent.rules.base import Evidence, has, ref, trace_words
from agent.rules.live_threads import SHARE, doing, processes, who
from tools.parsers.signatures import (
    EAGER_FALLBACK,
    FLEX_EAGER,
    FX_NESTED_TRACE,
    RECOMPILE_LIMIT,
    console_path,
)

# Slower than the baseline, not "under half" of it. The incident's run fell to 0.34 (4.3
# of 12.8 Ktok/s, on GPUs). The reference trainer (CPU) past its recompile limit measured
# 0.49-0.83 of the good run's recent median with 8 new lengths (10 runs) and 0.37-0.43
# with 16 (6 runs); a race with nested FX trace eager 0.71 (steady, BENCHMARKS.md): 0.5
# missed most real fallbacks. Eager flex_attention costs this CPU trainer little: the same
# 16-length data fully compiled was no faster over 60 steps (first calls per length
# dominate), and identical healthy runs logged recent medians of 14.3-25.4 Ktok/s on the
# shared 2-core box. So this ratio says that the run got slower, not why; the eager
# signals say what ran, and no threshold could tell a fallback from load or a cold compile.
SLOW = 0.9
EAGER = "eager_attention"  # tools.probes._activities: flex_attention's unfused path
COMPILING = "compiling"  # tools.probes._activities: dynamo's and inductor's compilers
# compilation_metrics.fail_reason of a frame past its limit (torch 2.13: "Dynamo recompile
# limit exceeded"; older builds named the cache size limit).
LIMIT_FAILURE = re.compile(r"(?i)recompile limit exceeded|cache.size.limit")


class SilentEagerFallback:
    kind: Kind = "silent_eager_fallback"
    needs = frozenset({"trainlog", "stdoutlog", "checkpoints", "live", "torch_trace"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        speed = primary_entry(evidence.diff)
        log = evidence.latest("stdoutlog")
        if speed is None or log is None or not log.ok:
            return []
        claims = [
            Claim(predicate=RatioBelow(a=speed.current, b=speed.baseline, ratio=SLOW)),
            Claim(
                predicate=AtMost(
                    a=ref(
                        log, *console_path(FX_NESTED_TRACE, "count"), label="FX-trace error lines"
                    ),
                    value=0,
                )
            ),
        ]
        signals = self._eager_signals(evidence)
        if not signals:
            # No sign of eager execution: claim the usual one so the report shows it was
            # looked for (it fails, and the hypothesis is refuted).
            signals = [
                Claim(
                    predicate=AtLeast(
                        a=ref(
                            log,
                            *console_path(RECOMPILE_LIMIT, "count"),
                            label="recompile-limit warnings",
                        ),
                        value=1,
                    )
                )
            ]
        claims.extend(signals)
        return [
            Hypothesis(
                kind="silent_eager_fallback",
                claims=tuple(claims),
                weight=2,
            )
        ]

    def _eager_signals(self, evidence: Evidence) -> list[Claim]:
        """Every sign found that compiled code is not what runs, each one a claim."""
        log = evidence.latest("stdoutlog")
        assert log is not None
        found = []
        for name, label in (
            (RECOMPILE_LIMIT, "recompile-limit warnings"),
            (EAGER_FALLBACK, "eager-fallback messages"),
            (FLEX_EAGER, "uncompiled flex_attention warnings"),
        ):
            count = evidence.value("stdoutlog", *console_path(name, "count"))
            if isinstance(count, int) and count > 0:
                found.append(
                    Claim(
                        predicate=AtLeast(
                            a=ref(log, *console_path(name, "count"), label=label), value=1
                        )
                    )
                )
        ckpt = evidence.latest("checkpoints")
        # The config the newest finished checkpoint recorded, whatever file held it.
        path = ("recorded", "config", "nested_fx_trace")
        if has(ckpt, *path) and evidence.value("checkpoints", *path) == "eager":
            assert ckpt is not None
            found.append(
                Claim(
                    predicate=Equal(
                        a=ref(ckpt, *path, label="nested FX trace handling the trainer recorded"),
                        value="eager",
                    )
                )
            )
        found.extend(self._trace_signals(evidence))
        found.extend(self._live_signals(evidence))
        return found

    def _trace_signals(self, evidence: Evidence) -> list[Claim]:
        """A compile torch's structured trace records as failed past the recompile limit
        (the frame then runs eager): the first such, per trace file."""
        trace = evidence.latest("torch_trace")
        if trace is None or not trace.ok:
            return []
        out = []
        for i, file in enumerate(as_dict(trace.value).get("traces") or []):
            file = as_dict(file)
            for j, row in enumerate(file.get("failed") or []):
                row = as_dict(row)
                if not LIMIT_FAILURE.search(str(row.get("fail_reason") or "")):
                    continue
                label = (
                    f"why compile {row.get('compile_id')} of {row.get('function')!r} failed,"
                    f" by {trace_words(file)}"
                )
                at = ref(trace, "traces", i, "failed", j, "fail_reason", label=label)
                out.append(Claim(predicate=Matches(a=at, pattern=LIMIT_FAILURE.pattern)))
                break
        return out

    def _live_signals(self, evidence: Evidence) -> list[Claim]:
        """Per live trainer process, the thread sampled most often in flex_attention's
        eager (unfused) path: one such stack is what runs now, printed or not (a
        compiled flex_attention runs inductor's kernel and shows none of its frames).
        Else a thread that was compiling for most of the window: on a run past its
        warm-up whose speed fell (the family's first claim), new compiles are what it
        does instead of running compiled code."""
        live = evidence.latest("live")
        if live is None or not live.ok:
            return []
        out = []
        for i, proc in enumerate(processes(live)):
            threads = [as_dict(t) for t in proc.get("threads") or []]
            counts = [int(as_dict(t.get("activities")).get(EAGER) or 0) for t in threads]
            if counts and max(counts) > 0:
                j = counts.index(max(counts))
                label = f"samples of {who(threads[j], proc)} in flex_attention's eager path"
                at = ("processes", i, "threads", j, "activities", EAGER)
                out.append(Claim(predicate=AtLeast(a=ref(live, *at, label=label), value=1)))
                continue
            compiling = [
                (share, j)
                for j, t in enumerate(threads)
                if t.get("activity") == COMPILING
                and isinstance(share := t.get("activity_share"), int | float)
                and share >= SHARE
            ]
            if compiling:
                j = max(compiling)[1]
                at_thread = ("processes", i, "threads", j)
                out.extend(doing(live, at_thread, who(threads[j], proc), COMPILING))
        return out
