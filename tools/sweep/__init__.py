"""The one-round-trip sweep: every probe for a target in one command.

The doctor sends one self-contained Python program (the *bundle*: the probe modules'
own sources, stdlib only, Python >= 3.8) on stdin to ``<interpreter> -B -`` on the
target, through whatever transport and hops reach it; ``-B`` and the bundle's bootstrap
keep it from writing bytecode caches there (``tools.interpreter.PYTHON_FLAGS``). On the
target each probe runs in a forked child with its own time limit
(``tools.probes._runner``); the bundle prints one JSON document; this module turns it
into typed results. A probe that fails is a result that says why — it never loses the
others. A transport that fails raises (the ``TransportError`` family), as everywhere in
``tools``.

Public API::

    spec = SweepSpec.for_workspace("/workspace")          # or TargetProfile.sweep_spec()
    result = sweep(transport, spec, only=["gpus", "trainlog"], timeout=None)
    result["gpus"].value                                  # JSON value, see the probe's VALUE
    result.failed()                                       # the ProbeResults with an error

    plan = build_plan(spec, only=None)                    # what would run, with params
    script = render(plan)                                 # the bytes sent on stdin
    parse_output(command_result, plan)                    # CommandResult -> SweepResult

``SweepResult.results`` holds one ``ProbeResult`` per planned probe, in ``PROBES`` order.
A probe with nothing to look at (no train log in the spec, say) is still a result:
``ok=False``, error kind ``skipped``, and it never travels to the target. A probe sent
only the workspace that finds nothing there to read (no console log, say) is skipped
the same way, from the target, saying what it looked for.
"""

from __future__ import annotations

from tools.probes import PROBES
from tools.sweep.bundle import render
from tools.sweep.output import parse_output
from tools.sweep.plan import Plan, PlannedProbe, build_plan
from tools.sweep.results import ProbeError, ProbeResult, SweepResult
from tools.sweep.run import sweep
from tools.sweep.spec import INCIDENT_METADATA, SweepSpec

__all__ = [
    "INCIDENT_METADATA",
    "PROBES",
    "Plan",
    "PlannedProbe",
    "ProbeError",
    "ProbeResult",
    "SweepResult",
    "SweepSpec",
    "build_plan",
    "parse_output",
    "render",
    "sweep",
]
