"""Probes: one module per machine fact, each shipped to the target inside the probe
bundle (see ``tools.sweep``) and run there on the target's own interpreter.

A probe module is stdlib-only, Python >= 3.8, imports only its siblings and
``tools.parsers`` (relatively, so the bundle can ship it), and defines::

    NAME = "gpus"                      # the probe's name in plans, results and CLIs
    TIMEOUT = 30.0                     # default seconds before the bundle kills it
    def collect(params: dict, ctx: Context) -> <a JSON-able value>
    VALUE = GpusValue                  # the TypedDict the value conforms to (or dict)

``collect`` raises ``ProbeFailure(kind, message, path)`` for a failure it understands
(a missing path, a permission denied); anything else it raises becomes kind ``error``.
Probes are read-only: they stat, read and list, and run read-only commands
(``nvidia-smi``); they never create a directory.

``PROBES`` lists them in the order a sweep reports them.
"""

from __future__ import annotations

import importlib
from types import ModuleType

PROBES: tuple[str, ...] = (
    "host",
    "pyenv",
    "gpus",
    "processes",
    "live",
    "applies",
    "layout",
    "caches",
    "checksums",
    "script_patches",
    "checkpoints",
    "trainlog",
    "stdoutlog",
    "flight_recorder",
    "torch_trace",
    "dataset",
    "torch_source",
    "torch_runtime",
    "integrity",
    "interpreter",
)

# Probes a sweep runs only when asked for by name (``--only``, the guided menu's probe
# again, a profile's ``torch_import = true``): ``torch_runtime`` imports torch on the
# target, seconds of the sweep's wall time, and no family's rule reads what it answers
# (``torch_source`` reads the FX check's binding and the dynamo defaults from the
# sources, without importing them).
ON_DEMAND: frozenset[str] = frozenset({"torch_runtime"})

__all__ = ["ON_DEMAND", "PROBES", "module"]


def module(name: str) -> ModuleType:
    """The probe module called ``name`` (KeyError for an unknown probe)."""
    if name not in PROBES:
        raise KeyError(name)
    return importlib.import_module(f"tools.probes.{name}")
