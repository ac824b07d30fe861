"""The console lines the doctor knows, and the one source of their ids and texts.

Each signature is a row of ``SIGNATURES``: an id the rules, the timing, the playbooks and
the tests cite, a regex (matched on bytes, multiline) and what a hit means. The scan
(``stdoutlog``) counts each; where a hit stands in its fact is ``console_path``. Torch's
own messages that a reader quotes (``FX_ERROR_TEXT``) are here too, so a change of
torch's wording is one edit.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

__all__ = [
    "CAUSES",
    "COMPILER",
    "FX_ERROR_TEXT",
    "MIDRUN",
    "SIGNATURES",
    "Signature",
    "console_path",
]

# torch._dynamo's error when a compiled function is called while FX traces (eval_frame.py).
FX_ERROR_TEXT = "Detected that you are using FX to symbolically trace a dynamo-optimized function"

# Each row's id, as the other modules cite it.
FX_NESTED_TRACE = "fx_nested_trace"
RECOMPILE_LIMIT = "recompile_limit"
EAGER_FALLBACK = "eager_fallback"
FLEX_EAGER = "flex_eager"
FX_CHECK_PATCH = "fx_check_patch"
RECOMPILE = "recompile"
INDUCTOR_ERROR = "inductor_error"
KEYERROR_CUSTOM = "keyerror_custom"
CUDA_OOM = "cuda_oom"
COLLECTIVE_TIMEOUT = "collective_timeout"
NCCL_ERROR = "nccl_error"
CUDA_ERROR = "cuda_error"
KILLED = "killed"
CPP_TERMINATE = "cpp_terminate"
EXCEPTION_IGNORED = "exception_ignored"
RESUME = "resume"
CHECKPOINT_LOAD = "checkpoint_load"
RUN_SUMMARY = "run_summary"
DATASET_SIZE = "dataset_size"
THREAD_EXCEPTION = "thread_exception"
TRACEBACK = "traceback"


class Signature(NamedTuple):
    """One row: ``needles`` are plain substrings, at least one of which every match
    contains; the scan finds them with ``bytes.find`` (GB/s) and runs the regex only on
    the lines they land in. A row without needles is searched with its regex alone
    (slower, fine for a profile's one or two extra rows)."""

    id: str
    pattern: str
    means: str
    needles: tuple[str, ...] = ()


SIGNATURES: Sequence[Signature] = (
    Signature(
        FX_NESTED_TRACE,
        FX_ERROR_TEXT,  # no character in it is special to a regex
        "a compiled function was called while an FX trace was active in the process "
        "(another thread compiling, or a real nested trace): it raised, or ran eager when "
        "error_on_nested_fx_trace is off",
        ("symbolically trace a dynamo-optimized",),
    ),
    Signature(
        RECOMPILE_LIMIT,
        r"torch\._dynamo hit config\.(?:accumulated_)?(?:recompile_limit|cache_size_limit)"
        r"|cache_size_limit reached|exceeded (?:the )?(?:recompile|cache size) limit",
        "dynamo stopped recompiling a function: it runs eager from then on",
        ("hit config.", "cache_size_limit reached", "exceeded "),
    ),
    Signature(
        EAGER_FALLBACK,
        r"[Ff]all(?:ing)? back to eager|fallback to eager|[Rr]unning (?:in )?eager mode",
        "compiled code fell back to eager execution",
        ("back to eager", "fallback to eager", "eager mode"),
    ),
    Signature(
        FLEX_EAGER,
        r"flex_attention called without torch\.compile\(\)",
        "flex_attention ran uncompiled (torch's unfused implementation, which materializes "
        "the full scores matrix): a compiled call fell back to eager, or flex was never "
        "compiled",
        ("flex_attention called without torch.compile",),
    ),
    Signature(
        FX_CHECK_PATCH,
        r"(?:[Pp]atch|[Rr]eplac|[Oo]verrid)\w*\b[^\n]*\bis_fx_symbolic_tracing\b",
        "a script announced that it patched torch's FX-tracing check is_fx_symbolic_tracing "
        "(compiled wrappers made before the patch keep the original)",
        ("is_fx_symbolic_tracing",),
    ),
    Signature(
        RECOMPILE,
        r"Recompiling function|[Rr]ecompil(?:e|ation) reasons?",
        "dynamo recompiled a function (new shapes or guards); logged with TORCH_LOGS=recompiles",
        ("ecompil",),
    ),
    Signature(
        INDUCTOR_ERROR,
        r"InductorError|BackendCompilerFailed|backend='inductor' raised",
        "torch.compile's backend (inductor) failed while compiling",
        ("InductorError", "BackendCompilerFailed", "backend='inductor' raised"),
    ),
    Signature(
        KEYERROR_CUSTOM,
        r"KeyError: 'custom'",
        "KeyError 'custom' seen when threads compile flex_attention concurrently",
        ("KeyError: 'custom'",),
    ),
    Signature(
        CUDA_OOM,
        r"CUDA out of memory|torch\.(?:cuda\.)?OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED",
        "a GPU ran out of memory",
        ("out of memory", "OutOfMemoryError", "CUBLAS_STATUS_ALLOC_FAILED"),
    ),
    Signature(
        COLLECTIVE_TIMEOUT,
        # NCCL's watchdog (ProcessGroupNCCL.cpp: "Watchdog caught collective operation
        # timeout: WorkNCCL(...) ran for N milliseconds before timing out.") and gloo's
        # transport ("Timed out waiting 1000ms for recv operation to complete").
        r"Watchdog caught collective operation timeout|ProcessGroupNCCL[^\n]*[Tt]ime ?out"
        r"|NCCL communicator was aborted|[Cc]ollective operation timeout"
        r"|gloo[^\n]*Timed out waiting \d+ ?ms for (?:send|recv) operation",
        "a collective operation timed out (a rank stalled or died)",
        (
            "ollective operation timeout",
            "ProcessGroupNCCL",
            "NCCL communicator was aborted",
            "Timed out waiting ",
        ),
    ),
    Signature(
        NCCL_ERROR,
        r"NCCL error|nccl(?:UnhandledCuda|System|Internal|InvalidUsage|Remote)Error"
        r"|DistBackendError",
        "NCCL reported an error",
        ("NCCL error", "nccl", "DistBackendError"),
    ),
    Signature(
        CUDA_ERROR,
        r"CUDA error: |device-side assert triggered|illegal memory access",
        "a CUDA runtime error",
        ("CUDA error: ", "device-side assert", "illegal memory access"),
    ),
    Signature(
        KILLED,
        r"(?:^|[\]:] ?)Killed\s*$|Segmentation fault|core dumped|[Ff]atal Python error",
        "the process died (OOM killer, segfault, fatal interpreter error)",
        ("Killed", "Segmentation fault", "core dumped", "atal Python error"),
    ),
    Signature(
        CPP_TERMINATE,
        r"terminate called after throwing an instance of '[^'\n]*'",
        "a C++ exception ended the process (libstdc++'s terminate handler; the what() line "
        "after it is the exception's text)",
        ("terminate called after throwing",),
    ),
    Signature(
        EXCEPTION_IGNORED,
        r"Exception ignored (?:in|on|while)\b",
        "Python reported an exception it ignored (in a __del__, a callback, at shutdown): "
        "the traceback after it ended nothing",
        ("Exception ignored ",),
    ),
    Signature(
        RESUME,
        # HF Trainer ("Continuing training from global step 690"), Lightning ("Restoring
        # states from the checkpoint path at …/epoch=0-step=690.ckpt"), and the many
        # scripts that print "resuming from <checkpoint>" or "resumed at step N".
        r"(?i)(?:\bresum(?:e|ed|ing)\b|\brestor(?:e|ed|ing) (?:all )?states?\b"
        r"|\bcontinuing training from\b)[^\n]*?(?:checkpoint|ckpt|step|epoch|state)",
        "the run resumed from a checkpoint (a start mid-run)",
        # Each needle is a pass over the block: a few case-shared stems, not every spelling.
        ("esum", "estor", "ontinuing training from"),
    ),
    Signature(
        CHECKPOINT_LOAD,
        # "Loading model from out/checkpoint-40.", "loaded checkpoint step_600.pt",
        # "load_checkpoint(...)". Not "Loading checkpoint shards" (a model's weights read
        # at start, in parts), nor Trainer's "Loading best model from …" at the end. A load
        # after the console printed a step is a reload mid-run (``first_midrun``): the run
        # went back to a checkpoint.
        r"(?i)\bload(?:ed|ing|_checkpoint)?\b(?![^\n]*\bbest\b)"
        r"[^\n]{0,80}?\b(?:checkpoint|ckpt)(?! shards)\b",
        "the run loaded a checkpoint (mid-run: it went back to one)",
        ("oad",),
    ),
    Signature(
        RUN_SUMMARY,
        # Trainer prints each train() call's summary as a dict: "{'train_runtime': '12.3',
        # 'train_samples_per_second': '790.4', 'train_steps_per_second': '98.81', …}".
        # Its figures are averages over that call (``run_summaries``).
        # A step's record that carries train_runtime too (tokens seen) has a loss: not one.
        r"^(?![^\n]*['\"]loss['\"]: )[^\n]*[{,] ?['\"]train_runtime['\"]: ",
        "Trainer's summary of one train() call (its runtime and average rates)",
        ("train_runtime",),
    ),
    Signature(
        DATASET_SIZE,
        # HF Trainer's "  Num examples = 1,000", and "dataset size: N", "loaded N prompts".
        r"(?i)(?:\bnum(?:ber of)?[ _](?:examples|samples|prompts|sequences)\s*[=:]\s*[0-9]"
        r"|\bdataset[ _]size\b\s*[=:]?\s*[0-9]"
        r"|\b(?:loaded|loading|found|read)\s+[0-9][0-9,_]*\s+"
        r"(?:examples|samples|prompts|sequences)\b)",
        "the trainer printed how much data it loaded (a dataset-size line)",
        ("amples", "rompts", "ataset", "equences"),
    ),
    Signature(
        THREAD_EXCEPTION,
        # threading's excepthook, and multiprocessing's BaseProcess._bootstrap
        # ("Process NAME:" then the traceback) for a worker process.
        r"Exception in (?:thread|process) [^\n]*|Process \S+:[ \t]*$",
        "an exception escaped a thread or worker process (the name follows)",
        ("Exception in thread ", "Exception in process ", "Process "),
    ),
    Signature(
        TRACEBACK,
        r"Traceback \(most recent call last\):",
        "a Python traceback (its final exception line is reported)",
        ("Traceback (most recent call last):",),
    ),
)

# What an exception line says killed its thread or process, most specific first (an
# InductorError that wraps an OOM is an OOM). An exception line that none of them matches
# is a cause of its own, named by its exception's class.
CAUSES = (CUDA_OOM, COLLECTIVE_TIMEOUT, NCCL_ERROR, CUDA_ERROR, FX_NESTED_TRACE, INDUCTOR_ERROR)
MIDRUN = (CHECKPOINT_LOAD,)  # signatures whose first hit after a printed step is kept
# What only torch's compiler prints: none of them in a run's console, and no compile site
# in its scripts, sets the compiler's families aside (``agent.graph.applicability``).
COMPILER = (
    FX_NESTED_TRACE,
    RECOMPILE_LIMIT,
    EAGER_FALLBACK,
    FLEX_EAGER,
    FX_CHECK_PATCH,
    RECOMPILE,
    INDUCTOR_ERROR,
    KEYERROR_CUSTOM,
)


def console_path(signature: str, *field: str | int) -> tuple[str | int, ...]:
    """Where ``signature``'s ``field`` (``count``, ``first``, ``first_after_step``…)
    stands in the console fact's value (``stdoutlog``)."""
    return ("signatures", signature, *field)
