"""FX-tracing race under per-device compilation.

The evidence, as the incident had it: torch's own error text in the stdout log, raised in
a worker thread; compiled wrappers that bind the FX check when they are created (so a
process-global tracing flag set by one thread trips another's compiled call); and, where
the installed torch does not hold its compiling flag during compilation, a concurrent
compile alone is enough to set it off (torch <= 2.11; see ../shared/experiments). Where
no error was printed (``error_on_nested_fx_trace`` off: the calls run eagerly), the live
probe can catch it in the act: a stack dump in which one thread FX-traces while another
is inside a compiled function.
"""

from __future__ import annotations

from agent.model.claims import AtLeast, Claim, Contains, Equal, Exists, Greater
from agent.model.facts import as_dict
from agent.model.hypotheses import Hypothesis, Kind, Prediction
from agent.rules.base import Evidence, binds_check_at_wrap, has, ref
from agent.rules.live_threads import processes
from tools.parsers.signatures import (
    FX_ERROR_TEXT,
    FX_NESTED_TRACE,
    THREAD_EXCEPTION,
    console_path,
)
from tools.probes import value_paths as vp


class FxTraceRace:
    kind: Kind = "fx_trace_race"
    needs = frozenset({"stdoutlog", "torch_source", "checkpoints", "pyenv", "live"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        log = evidence.latest("stdoutlog")
        source = evidence.latest("torch_source")
        if log is None:
            return []
        sig = console_path(FX_NESTED_TRACE)
        count = evidence.value("stdoutlog", *sig, "count")
        caught = self._caught(evidence)
        if caught and not (isinstance(count, int) and count > 0):
            # No error printed (the race running eagerly), but seen in the live stacks.
            claims = caught
        else:
            claims = [
                Claim(
                    predicate=AtLeast(
                        a=ref(log, *sig, "count", label="FX-trace error lines"), value=1
                    )
                )
            ]
        if isinstance(count, int) and count > 0:
            claims.append(
                Claim(
                    predicate=Contains(
                        a=ref(log, *sig, "first", label="first FX-trace error"), item=FX_ERROR_TEXT
                    )
                )
            )
            claims.append(
                Claim(
                    predicate=AtLeast(
                        a=ref(
                            log,
                            *console_path(THREAD_EXCEPTION, "count"),
                            label="exceptions escaping a thread",
                        ),
                        value=1,
                    )
                )
            )
        if isinstance(count, int) and count > 0:
            # With the error in hand, where it struck: threads, new shapes, torch build.
            claims += self._setting(evidence)
        if source is not None:
            claims.append(binds_check_at_wrap(source))
        predictions: list[Prediction] = []
        holds = evidence.value("torch_source", *vp.HOLDS_COMPILING_FLAG)
        if holds is False and has(source, "holds_compiling_flag", "value"):
            assert source is not None
            claims.append(
                Claim(
                    predicate=Equal(
                        a=ref(
                            source,
                            "holds_compiling_flag",
                            "value",
                            label="compilation holds torch's compiling flag",
                        ),
                        value=False,
                    )
                )
            )
        elif holds is True:
            predictions.append(
                Prediction(
                    expect="something in the process other than torch's own compilation "
                    "(an FX trace, make_fx, an emulation) sets the tracing flag, since this "
                    "torch holds its compiling flag while compiling",
                    probe="processes / the trainer's code",
                )
            )
        weight = count if isinstance(count, int) and count > 0 else 1
        return [
            Hypothesis(
                kind="fx_trace_race",
                claims=tuple(claims),
                predictions=tuple(predictions),
                weight=weight + 2,
            )
        ]

    def _caught(self, evidence: Evidence) -> list[Claim]:
        """The race caught in the act by the live probe: in one stack dump, a thread FX
        tracing while another thread of the same process was inside a compiled function
        (``fx_trace_overlaps``); the first process where it was."""
        live = evidence.latest("live")
        if live is None or not live.ok:
            return []
        for i, proc in enumerate(processes(live)):
            found = as_dict(proc.get("fx_trace_overlaps"))
            if not found.get("samples"):
                continue
            names = {as_dict(t).get("tid"): as_dict(t).get("name") for t in proc["threads"]}
            tracer, caller = found.get("tracer"), found.get("caller")
            label = (
                f"samples of pid {proc.get('pid')} in which thread {names.get(tracer)!r} "
                f"(tid {tracer}) FX-traced while thread {names.get(caller)!r} (tid {caller}) "
                "was inside a compiled function"
            )
            at = ("processes", i, "fx_trace_overlaps", "samples")
            return [Claim(predicate=AtLeast(a=ref(live, *at, label=label), value=1))]
        return []

    def _setting(self, evidence: Evidence) -> list[Claim]:
        """Where the race lives, as the incident asked: the workers were threads of one
        process (one per device), the dataset brought shapes the baseline never compiled,
        and which torch build ran. Each only when its fact holds a value to check."""
        claims: list[Claim] = []
        ckpt = evidence.latest("checkpoints")
        # The config the newest finished checkpoint recorded, whatever file held it.
        workers = ("recorded", "config", "workers")
        if ckpt is not None and has(ckpt, *workers):
            label = "worker mode the trainer recorded (one per device)"
            claims.append(
                Claim(predicate=Equal(a=ref(ckpt, *workers, label=label), value="threads"))
            )
        longest = next(
            (d for d in evidence.differing() if d.key.startswith("dataset.longest:")), None
        )
        if longest is not None:
            claims.append(Claim(predicate=Greater(a=longest.current, b=longest.baseline)))
        pyenv = evidence.latest("pyenv")
        if pyenv is not None and has(pyenv, "key_packages", "torch"):
            build = ref(pyenv, "key_packages", "torch", label="installed torch build")
            claims.append(Claim(predicate=Exists(a=build)))
        return claims
