# Written by dflash-doctor (playbooks lock-warmup and recompile-limit, hook route).
# Remove the launch file's PYTHONPATH entry, or unset DFLASH_DOCTOR_COMPILE_LOCK and
# DFLASH_DOCTOR_RECOMPILE_LIMIT, to turn it off.
#
# This file is shipped as it is, as the target's sitecustomize.py (playbooks/startup_hook.py
# reads it): standard library and torch only, Python 3.8 and later. Imported without its
# variables set, it does nothing.
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

if os.environ.get("DFLASH_DOCTOR_RECOMPILE_LIMIT", "").isdigit():
    import torch._dynamo

    _wanted = int(os.environ["DFLASH_DOCTOR_RECOMPILE_LIMIT"])
    _config = torch._dynamo.config
    _name = "recompile_limit" if hasattr(_config, "recompile_limit") else "cache_size_limit"
    _entry = getattr(_config, "_config", {}).get(_name)
    if _entry is not None and hasattr(_entry, "default"):
        _entry.default = _wanted  # what every thread reads where it set nothing
    setattr(_config, _name, _wanted)
    sys.stderr.write(
        f"dflash-doctor recompile-limit hook active ({_name} = {_wanted} in every thread)\n"
    )

if os.environ.get("DFLASH_DOCTOR_COMPILE_LOCK") == "1":
    import functools
    import threading

    import torch

    class _Gate:
        def __init__(self) -> None:
            self.cond = threading.Condition()
            self.readers = 0
            self.writing = False
            self.waiting = 0

        def shared(self) -> None:
            with self.cond:
                self.cond.wait_for(lambda: not self.writing and not self.waiting)
                self.readers += 1

        def release_shared(self) -> None:
            with self.cond:
                self.readers -= 1
                self.cond.notify_all()

        def exclusive(self) -> None:
            with self.cond:
                self.waiting += 1
                self.cond.wait_for(lambda: not self.writing and not self.readers)
                self.waiting -= 1
                self.writing = True

        def release_exclusive(self) -> None:
            with self.cond:
                self.writing = False
                self.cond.notify_all()

    _GATE = _Gate()
    _ORIGINAL = torch.compile

    def _signature(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        out: list[Any] = []
        for value in list(args) + [kwargs[k] for k in sorted(kwargs)]:
            if isinstance(value, torch.Tensor):
                out.append((tuple(value.shape), str(value.dtype), str(value.device)))
            else:
                out.append(type(value).__name__)
        return tuple(out)

    def _locked(compiled: Callable[..., Any]) -> Callable[..., Any]:
        seen: set[tuple[Any, ...]] = set()

        @functools.wraps(compiled)
        def call(*args: Any, **kwargs: Any) -> Any:
            key = _signature(args, kwargs)
            if key in seen:
                _GATE.shared()
                try:
                    return compiled(*args, **kwargs)
                finally:
                    _GATE.release_shared()
            _GATE.exclusive()
            try:
                out = compiled(*args, **kwargs)
                seen.add(key)
                return out
            finally:
                _GATE.release_exclusive()

        return call

    def compile(model: Any = None, **kwargs: Any) -> Any:
        if model is None:
            return lambda m: compile(m, **kwargs)
        compiled = _ORIGINAL(model, **kwargs)
        if isinstance(compiled, torch.nn.Module):
            return compiled
        return _locked(compiled)

    torch.compile = compile
    sys.stderr.write("dflash-doctor compile-lock hook active (torch.compile wrapped)\n")
