"""What torch (and the libraries under it) print when a training run dies, one text per
failure, each with the source file that writes it and the version it was read from.

This is the one place the tests take these texts from: the stdout-log parser's tests,
the crash family's tests and the foreign-trainer fixtures build their logs here, and
tests/e2e/test_crash_texts.py checks every text against the parser's signatures and, where
the installed torch holds the code that writes it, against that code.

A text a CPU can produce is produced for real in the tests (gloo's collective timeout,
dynamo's recompile-limit warning, an exception escaping a ``threading.Thread``,
libstdc++'s terminate handler); what
is here is what needs a GPU, NCCL or an older torch. The numbers in a text (sizes, sequence
numbers, milliseconds) are examples; the words around them are the library's own.

Sources (torch 2.13.0 is the installed one; "main" is the public pytorch/pytorch source
at commit 001074d25084, after 2.11):
- CUDA OOM: c10/cuda/CUDACachingAllocator.cpp, ``DeviceCachingAllocator::malloc``'s
  ``TORCH_CHECK_WITH(OutOfMemoryError, ...)`` (main); raised in Python as
  ``torch.OutOfMemoryError`` (torch/__init__.py, 2.13);
- NCCL: torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, ``WorkNCCL::checkTimeout``
  (the watchdog's timeout), ``operator<<(std::ostream&, const WorkNCCL&)`` (the
  ``WorkNCCL(...)`` part), the watchdog loop's "Process group watchdog thread
  terminated with exception: " and ``WorkNCCL::handleException``'s two lines (main);
  ``C10D_NCCL_CHECK`` in torch/csrc/distributed/c10d/NCCLUtils.hpp ("NCCL error in: ")
  raised as ``torch.distributed.DistBackendError`` (2.13's class);
- a C++ exception that ends the process: libstdc++'s verbose terminate handler
  (gcc libstdc++-v3/libsupc++/vterminate.cc: "terminate called after throwing an
  instance of '...'" then "  what():  ...");
- gloo: third_party/gloo/gloo/transport/tcp/unbound_buffer.cc, as torch 2.13 CPU raises
  it (the test suite produces it for real; the text here is that run's);
- inductor: torch/_inductor/exc.py ``InductorError`` and torch/_dynamo/exc.py
  ``BackendCompilerFailed`` (2.13);
- the recompile limit: torch/_dynamo/convert_frame.py's ``log.warning("torch._dynamo hit
  config.%s (%s)" ...)`` (2.13, naming ``recompile_limit``) and the same warning in torch
  2.0 to 2.5, which named ``cache_size_limit``;
- the FX-trace error: torch/_dynamo/eval_frame.py (2.13; the FX-race family's text).
"""

from __future__ import annotations

__all__ = [
    "BACKEND_COMPILER_FAILED",
    "CUDA_OOM",
    "CUDA_OOM_MESSAGE",
    "FX_ERROR",
    "FX_NESTED_TRACE",
    "GLOO_TIMEOUT",
    "INDUCTOR_ERROR",
    "NCCL_ABORT_LINES",
    "NCCL_ERROR",
    "NCCL_WATCHDOG_LOG",
    "NCCL_WATCHDOG_TIMEOUT",
    "NCCL_WATCHDOG_WORK",
    "NCCL_WORK",
    "RECOMPILE_LIMIT",
    "RECOMPILE_LIMIT_OLD",
    "glog_line",
    "recompile_warning",
    "terminate_lines",
    "thread_crash",
]

CUDA_OOM_MESSAGE = (
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "139.80 GiB of which 1.25 GiB is free. Of the allocated memory 136.90 GiB is allocated "
    "by PyTorch, and 1.12 GiB is reserved by PyTorch but unallocated. If reserved but "
    "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:"
    "True to avoid fragmentation.  See documentation for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
)
# The traceback's last line: the class as Python prints it, then the allocator's text.
CUDA_OOM = f"torch.OutOfMemoryError: {CUDA_OOM_MESSAGE}"

NCCL_WORK = "WorkNCCL(SeqNum=6463, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000)"
NCCL_WATCHDOG_TIMEOUT = (
    f"[Rank 1] Watchdog caught collective operation timeout: {NCCL_WORK} ran for 600017 "
    "milliseconds before timing out."
)
# The watchdog's line after a failed work (ProcessGroupNCCL.cpp, the watchdog loop:
# logPrefix(), "Exception (either an error or timeout) detected by watchdog at work: ",
# then pgStatus_'s lastEnqueuedSeq and lastCompletedSeq).
NCCL_WATCHDOG_WORK = (
    "[PG ID 0 PG GUID 0(default_pg) Rank 1] Exception (either an error or timeout) detected "
    "by watchdog at work: 6463, last enqueued NCCL work: 6463, last completed NCCL work: 6462."
)
NCCL_ERROR = (
    "torch.distributed.DistBackendError: NCCL error in: "
    "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:317, unhandled system error "
    "(run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5"
)

GLOO_TIMEOUT = (
    "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
    "unbound_buffer.cc:78] Timed out waiting 1000ms for recv operation to complete"
)

INDUCTOR_ERROR = "torch._inductor.exc.InductorError: KeyError: 'custom'"
BACKEND_COMPILER_FAILED = "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:"

RECOMPILE_LIMIT = "torch._dynamo hit config.recompile_limit (8)"
RECOMPILE_LIMIT_OLD = "torch._dynamo hit config.cache_size_limit (8)"

# torch/_dynamo/eval_frame.py's message, as 2.13 raises it (test_crash_texts checks it).
FX_ERROR = "Detected that you are using FX to symbolically trace a dynamo-optimized function"
FX_NESTED_TRACE = f"RuntimeError: {FX_ERROR}. This is not supported at the moment."  # eval_frame.py


def glog_line(message: str, *, rank: int = 1, source: str = "ProcessGroupNCCL.cpp:632") -> str:
    """A c10 ``LOG(ERROR)`` line as a torchrun rank prints it: the rank tag, then glog's
    severity letter, date, time, thread id and source line."""
    return f"[rank{rank}]:[E1201 08:41:13.123456789 4242 {source}] {message}"


def terminate_lines(cpp_class: str, what: str) -> list[str]:
    """libstdc++'s two lines for a C++ exception nothing caught: the process aborts."""
    return [f"terminate called after throwing an instance of '{cpp_class}'", f"  what():  {what}"]


# What a rank whose collective timed out prints, in order, before it aborts
# (ProcessGroupNCCL.cpp: checkTimeout, handleException, the watchdog's exit, then libstdc++).
NCCL_WATCHDOG_LOG = glog_line(NCCL_WATCHDOG_TIMEOUT)
NCCL_ABORT_LINES = [
    NCCL_WATCHDOG_LOG,
    glog_line(
        "[Rank 1] Some NCCL operations have failed or timed out. Due to the asynchronous "
        "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
        "data.",
        source="ProcessGroupNCCL.cpp:2057",
    ),
    glog_line(
        "[Rank 1] To avoid data inconsistency, we are taking the entire process down.",
        source="ProcessGroupNCCL.cpp:2064",
    ),
    *terminate_lines(
        "c10::DistBackendError",
        "[PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated "
        f"with exception: {NCCL_WATCHDOG_TIMEOUT}",
    ),
    "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:686 (most recent call first):",
]


def recompile_warning(limit: str = RECOMPILE_LIMIT) -> list[str]:
    """dynamo's warning when a function hits its recompile limit, as its log prints it
    (``limit`` is the first line, in the current or the older wording)."""
    return [
        limit,
        "   function: 'forward' (/srv/train/model.py:88)",
        "   last reason: 0/7: tensor 'input_ids' size mismatch at index 1. expected 512, "
        "actual 640",
        'To log all recompilation reasons, use TORCH_LOGS="recompiles".',
        "To diagnose recompilation issues, see https://pytorch.org/docs/main/"
        "torch.compiler_troubleshooting.html",
    ]


def thread_crash(thread: str, last: str) -> list[str]:
    """What Python's threading.excepthook prints for an exception that ended ``thread``."""
    return [
        f"Exception in thread {thread}:",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner',
        "    self.run()",
        last,
    ]
