"""Switches that put the trainer into the incident's failure families.

Only two of them are emulations, and both say so in the checkpoint metadata
(``emulations``): the torch <= 2.11 FX-tracing race, and a recorded torch version that is
not the installed one. Everything else is torch behaving as installed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
import torch._dynamo
import torch.fx._symbolic_trace

from .config import NestedFxTrace

_installed = False
_compiling = False


def _on_compile_start(_args: object) -> None:
    global _compiling
    _compiling = True


def _on_compile_end(_args: object) -> None:
    global _compiling
    _compiling = False
    torch.fx._symbolic_trace._is_fx_tracing_flag = False


def emulate_torch211_race() -> str:
    """Make this process's compilations visible to other threads as torch <= 2.11's are.

    Two documented changes, both on torch's real state, and nothing else:

    1. torch 2.13's ``convert_frame.compile_inner`` enters
       ``torch.compiler._compile_session_context()``, which sets the process-global
       ``_is_compiling_flag`` for the whole compilation. ``is_fx_symbolic_tracing()`` is
       ``_is_fx_tracing_flag and not is_compiling()``, so that flag hides the FX flag from
       every thread while anything compiles; torch 2.11 has no such context. It is
       replaced by a no-op here.
    2. torch sets the process-global ``torch.fx._symbolic_trace._is_fx_tracing_flag``
       in ``Tracer.trace``, which make_fx runs only when a compilation misses the compile
       cache (a warm cache makes no call at all). On this CPU build that window is ~0.2%
       of a flex_attention compile, so the race would need long luck. The emulation
       keeps the flag set from the end of torch's own first trace in a compilation to
       that compilation's end (dynamo's compile-end callback): the window is widened,
       and it still opens only when torch itself traced, i.e. on a cold compile.

    Another thread's compiled call then goes through torch's own check in
    ``eval_frame.compile_wrapper`` and raises torch's own RuntimeError, or runs eager
    when ``error_on_nested_fx_trace`` is False.
    """
    global _installed
    if hasattr(torch.compiler, "_compile_session_context"):
        # A no-op stand-in for torch's generator-based context manager: same use, other type.
        torch.compiler._compile_session_context = contextlib.nullcontext  # type: ignore[assignment]
    if not _installed:
        from torch._dynamo.callback import on_compile_end, on_compile_start

        original = torch.fx.Tracer.trace

        def trace_and_hold(self: Any, root: Any, concrete_args: Any = None) -> Any:
            graph = original(self, root, concrete_args)
            if _compiling:
                torch.fx._symbolic_trace._is_fx_tracing_flag = True
            return graph

        torch.fx.Tracer.trace = trace_and_hold  # type: ignore[method-assign]
        on_compile_start(_on_compile_start)
        on_compile_end(_on_compile_end)
        _installed = True
    return (
        "torch.compiler._compile_session_context is a no-op; torch's FX-tracing flag, once "
        "torch's own tracer sets it in a compilation, stays set until that compilation ends "
        "(torch <= 2.11 race, window widened)"
    )


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
