"""Ineffective monkeypatch: something replaced ``is_fx_symbolic_tracing``, but compiled
wrappers bind the original when they are created, so the patch does not reach them — and
the FX-trace error is still there.

The patch is found where it is on the machine: in the training scripts (``script_patches``
reads them with ``ast``), or, when it lives in code those scripts import, in the stdout log
where the trainer announced it (``fx_check_patch``). Only the log can say when: an FX-trace
error logged after the announcement is one the patch did not prevent.
"""

from __future__ import annotations

from agent.model.claims import AtLeast, Claim, Greater
from agent.model.facts import Fact
from agent.model.hypotheses import Hypothesis, Kind
from agent.rules.base import Evidence, binds_check_at_wrap, ref
from tools.parsers.signatures import FX_CHECK_PATCH, FX_NESTED_TRACE, console_path
from tools.probes import value_paths as vp

FX = console_path(FX_NESTED_TRACE)
ANNOUNCED = console_path(FX_CHECK_PATCH)


class IneffectiveMonkeypatch:
    kind: Kind = "ineffective_monkeypatch"
    needs = frozenset({"script_patches", "torch_source", "stdoutlog"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        patches = evidence.latest("script_patches")
        log = evidence.latest("stdoutlog")
        in_scripts = evidence.value("script_patches", *vp.FX_CHECK_PATCHES)
        in_log = evidence.value("stdoutlog", *ANNOUNCED, "count")
        claims: list[Claim] = []
        if isinstance(in_scripts, int) and in_scripts > 0:
            assert patches is not None
            claims.append(self._in_scripts(patches))
        elif isinstance(in_log, int) and in_log > 0:
            assert log is not None
            claims.append(self._in_log(log))
            # An error after the announcement is one the patch did not prevent.
            claims.append(
                Claim(
                    predicate=Greater(
                        a=ref(log, *FX, "last_offset", label="last FX-trace error (byte offset)"),
                        b=ref(
                            log,
                            *ANNOUNCED,
                            "first_offset",
                            label="first announced FX-check patch (byte offset)",
                        ),
                    )
                )
            )
        elif patches is not None and patches.ok:
            # No patch anywhere: claim the usual one so the report shows it was looked
            # for (it fails, and the hypothesis is refuted).
            return [self._hypothesis((self._in_scripts(patches),))]
        else:
            return []
        source = evidence.latest("torch_source")
        if source is not None:
            claims.append(binds_check_at_wrap(source))
        if log is not None:
            claims.append(
                Claim(
                    predicate=AtLeast(
                        a=ref(log, *FX, "count", label="FX-trace error lines despite the patch"),
                        value=1,
                    )
                )
            )
        return [self._hypothesis(tuple(claims))]

    @staticmethod
    def _in_scripts(patches: Fact) -> Claim:
        return Claim(
            predicate=AtLeast(
                a=ref(
                    patches,
                    "fx_check_patches",
                    label="patches of torch's FX check (is_fx_symbolic_tracing…) in scripts",
                ),
                value=1,
            )
        )

    @staticmethod
    def _in_log(log: Fact) -> Claim:
        return Claim(
            predicate=AtLeast(
                a=ref(log, *ANNOUNCED, "count", label="FX-check patches announced in the log"),
                value=1,
            )
        )

    @staticmethod
    def _hypothesis(claims: tuple[Claim, ...]) -> Hypothesis:
        return Hypothesis(
            kind="ineffective_monkeypatch",
            claims=claims,
            weight=2,
        )
