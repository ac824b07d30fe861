"""The start-up hook that gives a threaded PyTorch trainer a compile lock without editing
its source. It is shipped to the target as ``sitecustomize.py`` in a directory the launch
file puts first on ``PYTHONPATH``, and is active only with ``DFLASH_DOCTOR_COMPILE_LOCK=1``.

It wraps ``torch.compile`` so that every compiled *function* takes a process-wide
readers/writer lock: a call with an input signature (shapes, dtypes, devices) that
wrapper has not seen — a call that may compile — holds it alone; any other call shares
it. While one thread compiles, no other thread is inside a compiled call, so no call can
observe the FX-tracing flag a compilation sets. (Compiled ``nn.Module``s are left alone:
their state must keep working as a module; a trainer that compiles modules needs the
trainer's own lock.) It cannot warm shapes it does not know; the trainer's own knob can.
"""

from __future__ import annotations

HOOK_SOURCE = r"""
# Written by dflash-doctor (playbook lock-warmup, hook route). Remove the launch file's
# PYTHONPATH entry, or unset DFLASH_DOCTOR_COMPILE_LOCK, to turn it off.
import os
import sys

if os.environ.get("DFLASH_DOCTOR_COMPILE_LOCK") == "1":
    import functools
    import threading

    import torch

    class _Gate:
        def __init__(self):
            self.cond = threading.Condition()
            self.readers = 0
            self.writing = False
            self.waiting = 0

        def shared(self):
            with self.cond:
                self.cond.wait_for(lambda: not self.writing and not self.waiting)
                self.readers += 1

        def release_shared(self):
            with self.cond:
                self.readers -= 1
                self.cond.notify_all()

        def exclusive(self):
            with self.cond:
                self.waiting += 1
                self.cond.wait_for(lambda: not self.writing and not self.readers)
                self.waiting -= 1
                self.writing = True

        def release_exclusive(self):
            with self.cond:
                self.writing = False
                self.cond.notify_all()

    _GATE = _Gate()
    _ORIGINAL = torch.compile

    def _signature(args, kwargs):
        out = []
        for value in list(args) + [kwargs[k] for k in sorted(kwargs)]:
            if isinstance(value, torch.Tensor):
                out.append((tuple(value.shape), str(value.dtype), str(value.device)))
            else:
                out.append(type(value).__name__)
        return tuple(out)

    def _locked(compiled):
        seen = set()

        @functools.wraps(compiled)
        def call(*args, **kwargs):
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

    def compile(model=None, **kwargs):
        if model is None:
            return lambda m: compile(m, **kwargs)
        compiled = _ORIGINAL(model, **kwargs)
        if isinstance(compiled, torch.nn.Module):
            return compiled
        return _locked(compiled)

    torch.compile = compile
    sys.stderr.write("dflash-doctor compile-lock hook active (torch.compile wrapped)\n")
"""
