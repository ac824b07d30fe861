"""torch as a fresh interpreter on the target sees it after ``import torch``.

What it answers: where ``torch.fx._symbolic_trace.is_fx_symbolic_tracing`` comes from
(module, qualname, file:line — not torch's own means something replaced it at import
time: a ``sitecustomize``, a ``.pth`` hook, an edited torch), the dynamo config values
in force (environment variables such as ``TORCHDYNAMO_SUPPRESS_ERRORS`` change them),
and the build as torch reports it (version, git hash, CUDA, cuDNN).

What it cannot answer: what a running trainer changed in its own memory (a monkeypatch
in the training script, ``torch._dynamo.config`` set in code). For those, see the
``script_patches`` probe (the scripts' source) and ``processes`` (its environment).

``import torch`` takes seconds; it runs in its own forked process, so a crash or a hang
fails only this probe. CUDA is not initialised unless ``cuda`` is set in the params.
It writes nothing: no bytecode (the bundle runs with ``-B``), no inductor cache directory
(``CACHE_ENV``).

Shipped in the probe bundle: stdlib only (torch is what it inspects), Python >= 3.8.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from ._common import Context, ProbeFailure, TypedDict
from ._torch_build import CONFIG_KEYS

NAME = "torch_runtime"
TIMEOUT = 120.0


class Origin(TypedDict, total=False):
    module: str | None
    qualname: str | None
    file: str | None
    line: int | None
    is_torch_own: bool
    repr: str


class TorchRuntimeValue(TypedDict, total=False):
    import_seconds: float
    version: str
    git_version: str | None
    cuda: str | None
    cudnn: int | None
    file: str
    is_fx_symbolic_tracing: Origin
    fx_tracing_flag: Any
    is_compiling_flag: Any
    dynamo_config: dict[str, Any]
    dynamo_import_error: str
    site_hooks: dict[str, str | None]
    cuda_available: bool | None
    cuda_device_count: int | None


def origin(fn: Any, expected_module: str, expected_file_tail: str) -> Origin:
    code = getattr(fn, "__code__", None)
    out: Origin = {
        "module": getattr(fn, "__module__", None),
        "qualname": getattr(fn, "__qualname__", None),
        "file": code.co_filename if code is not None else None,
        "line": code.co_firstlineno if code is not None else None,
        "repr": repr(fn)[:200],
    }
    f = (out["file"] or "").replace(os.sep, "/")
    out["is_torch_own"] = (
        out["module"] == expected_module
        and out["qualname"] == "is_fx_symbolic_tracing"
        and f.endswith(expected_file_tail)
    )
    return out


# Importing torch._dynamo makes the inductor cache directory
# (torch._inductor.runtime.cache_dir_utils.cache_dir: os.makedirs of TORCHINDUCTOR_CACHE_DIR,
# else $TMPDIR/torchinductor_$USER, found by tempfile.gettempdir(), which itself creates and
# deletes a file to test the directory). This probe only looks: while it imports, the
# variable names an existing directory in which nothing can be created, root included
# (Linux's /proc), so the import creates nothing, and a torch that wrote into it at import
# would fail, and the result would say so, rather than write. Nothing reported here depends
# on the cache directory; the caches probe, in another process, reports the trainer's.
CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"
UNWRITABLE_DIR = "/proc"


def collect(params: dict[str, Any], ctx: Context) -> TorchRuntimeValue:
    saved = os.environ.get(CACHE_ENV)
    try:
        if os.path.isdir(UNWRITABLE_DIR):
            os.environ[CACHE_ENV] = UNWRITABLE_DIR
        return _look(params)
    finally:  # as it was: run inline (no fork), the probe shares its process
        if saved is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = saved


def _look(params: dict[str, Any]) -> TorchRuntimeValue:
    t0 = time.monotonic()
    try:
        import torch
    except ImportError as exc:
        raise ProbeFailure("unavailable", f"import torch failed: {exc}") from None
    out: TorchRuntimeValue = {
        "import_seconds": time.monotonic() - t0,
        "version": str(torch.__version__),
        "git_version": getattr(torch.version, "git_version", None),
        "cuda": getattr(torch.version, "cuda", None),
        "file": getattr(torch, "__file__", "") or "",
    }
    try:
        out["cudnn"] = torch.backends.cudnn.version()
    except Exception:
        out["cudnn"] = None
    st = sys.modules.get("torch.fx._symbolic_trace")
    if st is None:
        import torch.fx._symbolic_trace as st
    out["is_fx_symbolic_tracing"] = origin(
        getattr(st, "is_fx_symbolic_tracing", None),
        "torch.fx._symbolic_trace",
        "torch/fx/_symbolic_trace.py",
    )
    out["fx_tracing_flag"] = getattr(st, "_is_fx_tracing_flag", "<missing>")
    compiler = getattr(torch, "compiler", None)
    out["is_compiling_flag"] = getattr(compiler, "_is_compiling_flag", "<missing>")
    try:
        import torch._dynamo

        cfg = torch._dynamo.config
        out["dynamo_config"] = {k: getattr(cfg, k) for k in CONFIG_KEYS if hasattr(cfg, k)}
    except Exception as exc:
        out["dynamo_import_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    out["site_hooks"] = {
        name: getattr(sys.modules.get(name), "__file__", None)
        for name in ("sitecustomize", "usercustomize")
        if name in sys.modules
    }
    if params.get("cuda"):
        try:
            out["cuda_available"] = bool(torch.cuda.is_available())
            out["cuda_device_count"] = int(torch.cuda.device_count())
        except Exception:
            out["cuda_available"] = None
    return out


VALUE = TorchRuntimeValue
