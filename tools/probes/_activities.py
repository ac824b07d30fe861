"""What a thread is doing, from one sampled stack: the one table that maps frames to
activities.

A stack is read innermost frame first. Each row of ``CONTEXTS`` names a module path (a
regular expression; and, where one function says it, the function's name) of the real
library it matches, and where that was read; the first row any frame of the stack
matches, in the table's order, is the thread's activity: a thread whose own code sleeps
inside a data loader's ``__getitem__`` is loading data, one inside a collective is in the
collective. Where no row matches, the innermost frame says it, by its source line as the
target's file has it: a line that sleeps, that waits (``.acquire(``, ``.wait(``,
``.join(``, ``.get()``), or that enters a ``with`` block while py-spy sees the thread
idle (a lock another thread holds); else the trainer's own code when the frame is
outside the standard library and installed packages; else ``idle`` for a thread py-spy
saw idle, ``python`` otherwise.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = ["ACTIVITIES", "CONTEXTS", "classify", "is_library"]


class Context(NamedTuple):
    activity: str
    path: str  # a regular expression searched in the frame's file path, "/"-separated
    function: str  # a function name the frame's must start with; "" for any
    read_in: str  # where the match was read (the library's own source)


def _in(path: str) -> str:
    return re.escape(path)


# Order is precedence: the outermost meaning of a stack wins over what its inner frames
# happen to be doing (a collective's wait, a loader's user code). Running a compiled
# graph comes before compiling's broad rows: inductor's runtime (output_code.py) lives in
# the same package as its compiler.
CONTEXTS: Sequence[Context] = (
    # torch/distributed/distributed_c10d.py: all_reduce, broadcast, barrier, … each wait on
    # the process group's work object.
    Context("collective", _in("torch/distributed/distributed_c10d.py"), "", "torch 2.11-2.13"),
    Context("collective", _in("torch/distributed/"), "barrier", "torch 2.11-2.13"),
    # torch/utils/data/dataloader.py: _BaseDataLoaderIter.__next__, _next_data; the fetchers
    # in torch/utils/data/_utils/fetch.py call the dataset's __getitem__.
    Context("data_loading", _in("torch/utils/data/"), "", "torch 2.11-2.13"),
    # FX symbolic tracing: torch/fx/_symbolic_trace.py Tracer.trace, symbolic_trace.
    Context("fx_tracing", _in("torch/fx/_symbolic_trace.py"), "", "torch 2.11-2.13"),
    # dynamo turning a frame into a graph: torch/_dynamo/convert_frame.py,
    # symbolic_convert.py (InstructionTranslator); inductor lowering and compiling:
    # torch/_inductor/compile_fx.py; AOT autograd's tracing.
    Context("compiling", _in("torch/_dynamo/convert_frame.py"), "", "torch 2.11-2.13"),
    Context("compiling", _in("torch/_dynamo/symbolic_convert.py"), "", "torch 2.11-2.13"),
    Context("compiling", _in("torch/_inductor/compile_fx.py"), "", "torch 2.11-2.13"),
    # flex_attention run eagerly: torch/nn/attention/flex_attention.py calls the
    # higher-order op, whose eager path is math_attention / _math_attention_inner in
    # torch/_higher_order_ops/flex_attention.py (the unfused implementation).
    Context(
        "eager_attention", _in("torch/_higher_order_ops/flex_attention.py"), "", "torch 2.11-2.13"
    ),
    # A compiled graph running: inductor's generated module (``Runner.call``, ``call``) in
    # its cache, ``<cache>/<2 chars>/c<hash>.py`` (the default cache is
    # /tmp/torchinductor_<user>; TORCHINDUCTOR_CACHE_DIR moves it), called by
    # CompiledFxGraph.__call__ in torch/_inductor/output_code.py through AOT autograd's
    # runtime wrappers; and dynamo's compile_wrapper running a compiled frame's code
    # (torch/_dynamo/eval_frame.py, _TorchDynamoContext.__call__; its DisableContext
    # only turns dynamo off around a call, as torch.optim's methods do).
    Context("compiled_code", r"/[0-9a-z]{2}/c[0-9a-z]{40,}\.py$", "", "inductor's cache"),
    Context("compiled_code", _in("torchinductor"), "", "inductor's default cache dir"),
    Context("compiled_code", _in("torch/_inductor/output_code.py"), "", "torch 2.13"),
    Context(
        "compiled_code",
        _in("torch/_functorch/_aot_autograd/runtime_wrappers.py"),
        "",
        "torch 2.11-2.13",
    ),
    Context(
        "compiled_code", _in("torch/_dynamo/eval_frame.py"), "_TorchDynamoContext", "torch 2.13"
    ),
    # Anything else of inductor or AOT autograd's tracing on the stack is compiling.
    Context("compiling", _in("torch/_inductor/"), "", "torch 2.11-2.13"),
    Context("compiling", _in("torch/_functorch/_aot_autograd/"), "aot_", "torch 2.11-2.13"),
)

_MATCHERS = tuple((re.compile(row.path), row) for row in CONTEXTS)

ACTIVITIES = (
    "collective",
    "data_loading",
    "fx_tracing",
    "compiling",
    "eager_attention",
    "compiled_code",
    "waiting",
    "sleeping",
    "own_code",
    "idle",
    "python",
)

# The innermost frame's line, as the target's source file has it.
_SLEEP = re.compile(r"\bsleep\s*\(|\.wait\s*\(\s*(?:timeout\s*=\s*)?[0-9.]+\s*\)")
_WAIT = re.compile(r"\.acquire\s*\(|\.wait\s*\(|\.join\s*\(|\.get\s*\(\s*\)")
# A ``with`` line where the thread is idle: entering a context manager that blocks (a
# lock held by another thread).
_WITH = re.compile(r"^\s*(?:async\s+)?with\s")
# threading's and queue's own waits, seen as the innermost Python frame.
_STDLIB_WAITS = {
    ("threading.py", "Condition.wait"),
    ("threading.py", "Event.wait"),
    ("threading.py", "Thread.join"),
    ("threading.py", "Thread._wait_for_tstate_lock"),
    ("threading.py", "Semaphore.acquire"),
    ("queue.py", "Queue.get"),
    ("queue.py", "Queue.put"),
}
# The standard library, installed packages, and a package's console script (a file with
# no ``.py`` in a ``bin`` directory: ``torchrun``, ``accelerate``, ``lightning``).
_LIBRARY = re.compile(
    r"/(?:site|dist)-packages/|/lib/python3[.0-9]*/|^<frozen |^<string>|/bin/[^/.]+$"
)


def is_library(filename: str) -> bool:
    """The standard library, an installed package or its console script, not the
    trainer's own code."""
    return bool(_LIBRARY.search(filename.replace("\\", "/")))


def _context(frames: Sequence[Any]) -> str | None:
    paths = [str(frame.get("filename") or "").replace("\\", "/") for frame in frames]
    for pattern, row in _MATCHERS:
        for k, path in enumerate(paths):
            if pattern.search(path) and str(frames[k].get("name") or "").startswith(row.function):
                return row.activity
    return None


def classify(frames: Sequence[Any], text: str | None, active: bool | None) -> str:
    """The activity of one sampled stack: ``frames`` innermost first (py-spy's order),
    ``text`` the innermost frame's source line (None: unread), ``active`` py-spy's
    verdict on the thread (None: not said)."""
    found = _context(frames)
    if found is not None:
        return found
    if frames:
        top = frames[0]
        short = str(top.get("filename") or "").replace("\\", "/").rsplit("/", 1)[-1]
        if (short, str(top.get("name") or "")) in _STDLIB_WAITS:
            return "waiting"
        if text is not None and _SLEEP.search(text):
            return "sleeping"
        if text is not None and (_WAIT.search(text) or (_WITH.match(text) and active is False)):
            return "waiting"
        if not is_library(str(top.get("filename") or "")):
            return "own_code"
    return "idle" if active is False else "python"
