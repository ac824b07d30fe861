"""Switches that put the trainer into the incident's failure families.

Only two of them are emulations, and both say so in the checkpoint metadata
(``emulations``): the torch <= 2.11 compile flag, and a recorded torch version that is
not the installed one. Everything else is torch behaving as installed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch
import torch._dynamo
import torch.fx._symbolic_trace

from .config import NestedFxTrace


def emulate_torch211_compile_flag() -> str:
    """Make this process compile the way torch <= 2.11 does, as far as the FX race goes.

    In torch 2.13 ``convert_frame.compile_inner`` enters
    ``torch.compiler._compile_session_context()``, which sets the process-global
    ``_is_compiling_flag`` for the whole compilation; ``is_fx_symbolic_tracing()`` is
    ``_is_fx_tracing_flag and not is_compiling()``, so the global FX flag that make_fx
    sets (``Tracer.trace``) is hidden from every thread while anything compiles. torch
    2.11 has no such context: replacing it with a no-op restores that. Nothing else
    changes: the FX flag is still set by torch's own tracer, and other threads' compiled
    calls fail in torch's own check with torch's own error text.
    """
    if not hasattr(torch.compiler, "_compile_session_context"):
        return "not needed: this torch has no compile-session flag (<= 2.11 behaviour already)"
    torch.compiler._compile_session_context = contextlib.nullcontext  # type: ignore[attr-defined]
    return "torch.compiler._compile_session_context replaced by a no-op (torch <= 2.11 behaviour)"


def set_nested_fx_trace(mode: NestedFxTrace) -> None:
    """``eager``: torch runs the uncompiled function instead of raising (silently slow)."""
    torch._dynamo.config.error_on_nested_fx_trace = mode == "error"


def _never_tracing() -> bool:
    return False


def ineffective_fx_monkeypatch() -> Callable[[], bool]:
    """The incident's patch: make ``is_fx_symbolic_tracing`` always say False.

    Applied after the compiled functions exist, it changes nothing for them: each
    ``torch.compile`` wrapper bound the original function object when it was created.
    Returns the original so a caller can show both objects.
    """
    original = torch.fx._symbolic_trace.is_fx_symbolic_tracing
    torch.fx._symbolic_trace.is_fx_symbolic_tracing = _never_tracing
    return original
