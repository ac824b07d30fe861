"""Per-device ``torch.compile(flex_attention)`` and the compile lock (``--compile-lock``).

Each device compiles its own function, as the incident's per-GPU worker threads did.
Dynamo keeps compiled entries, and counts its recompile limit, per code object. On GPUs
the device guards keep each device's entries apart; simulated CPU devices all hold CPU
tensors and would share one entry per shape. So every (device, call site) gets its own
code object (a copy of ``_flex_site`` under another name). ``isolate_recompiles=True`` is
torch's API for this, but on torch 2.13 its region id is process-global
(``set_eval_frame_isolate_recompiles_id``), so concurrent threads mix their regions.
``dynamic=False`` keeps one static graph per sequence length, as the incident's trainer
had: new lengths mean new compilations.
"""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, cast

import torch
from torch.nn.attention.flex_attention import BlockMask, flex_attention

FlexFn = Callable[..., torch.Tensor]


def _flex_site(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_mask: BlockMask
) -> torch.Tensor:
    return flex_attention(q, k, v, block_mask=block_mask)


def compiled_flex(device: str, site: str) -> FlexFn:
    name = f"flex_{site}_" + "".join(c if c.isalnum() else "_" for c in device)
    code = _flex_site.__code__.replace(co_name=name, co_qualname=name)
    fn = types.FunctionType(code, _flex_site.__globals__, name)
    return cast(FlexFn, torch.compile(fn, dynamic=False))


class CompileGate:
    """A process-wide readers/writer lock: compiled calls share it, compilations own it.

    While one device compiles, no other device is inside a compiled call, so nothing can
    observe the tracing state a compilation leaves in torch's process-global flags.
    Writers go first once waiting, or a busy reader set would starve a compilation.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._writing and not self._writers_waiting)
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            self._cond.wait_for(lambda: not self._writing and not self._readers)
            self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()


class DeviceFlex:
    """One device's compiled flex_attention per call site, and the shapes it has seen.

    A call with a shape this device has not seen yet compiles (or, past the recompile
    limit, silently runs eager); those first calls are announced on the console so the
    log shows which device compiled what, and when.
    """

    def __init__(
        self,
        device: str,
        sites: tuple[str, ...],
        gate: CompileGate | None,
        say: Callable[[str], None],
    ) -> None:
        self.device = device
        # Created now, not on first use: each wrapper binds torch's FX-tracing check when
        # it is made, which is what makes a later monkeypatch of that check ineffective.
        self._fns = {site: compiled_flex(device, site) for site in sites}
        self._seen: set[tuple[str, tuple[int, ...], tuple[int, ...]]] = set()
        self._gate = gate
        self._say = say

    def __call__(
        self, site: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: BlockMask
    ) -> torch.Tensor:
        fn = self._fns[site]
        key = (site, tuple(q.shape), tuple(k.shape))
        if key in self._seen:
            with self._guard(first=False):
                return fn(q, k, v, block_mask=mask)
        self._say(f"first flex_attention call on {self.device} for {site} q={list(q.shape)}")
        start = time.perf_counter()
        with self._guard(first=True):
            out = fn(q, k, v, block_mask=mask)
        self._seen.add(key)
        self._say(f"first call on {self.device} for {site} took {time.perf_counter() - start:.2f}s")
        return out

    def _guard(self, first: bool) -> AbstractContextManager[Any]:
        if self._gate is None:
            return nullcontext()
        return self._gate.exclusive() if first else self._gate.shared()
