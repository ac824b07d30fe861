"""torch's crash texts (tests/lib/torch_error_texts.py) against the stdout-log parser's
signatures, against the installed torch where it holds the code that writes them, and
produced for real where a CPU can produce them: an exception escaping a thread, gloo's
collective timeout between two real processes, dynamo's recompile-limit warning, and
libstdc++'s terminate handler for a C++ exception nothing caught."""

from __future__ import annotations

import importlib.util
import io
import shutil
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path
from typing import Any

import pytest

from tests.lib import torch_error_texts as texts
from tests.lib.need import need
from tools.parsers import stdoutlog

HAS_TORCH = importlib.util.find_spec("torch") is not None


def scan(tmp_path: Path, text: str) -> dict[str, Any]:
    p = tmp_path / "console.log"
    p.write_text(text)
    with io.FileIO(str(p), "r") as f:
        return stdoutlog.scan(f)


def python(tmp_path: Path, source: str, timeout: float = 120) -> str:
    """Run ``source`` in a fresh interpreter; its stdout and stderr, as a log has them."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    run = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tmp_path,
    )
    return run.stdout + run.stderr


def traceback_lines(last: str, prefix: str = "") -> list[str]:
    return [
        f"{prefix}Traceback (most recent call last):",
        f'{prefix}  File "/srv/train/loop.py", line 212, in step',
        f"{prefix}    loss = model(batch)",
        f"{prefix}{last}",
    ]


@pytest.mark.parametrize(
    ("last", "cause", "exception"),
    [
        (texts.CUDA_OOM, "cuda_oom", "torch.OutOfMemoryError"),
        (texts.NCCL_ERROR, "nccl_error", "torch.distributed.DistBackendError"),
        (texts.GLOO_TIMEOUT, "collective_timeout", "RuntimeError"),
        (texts.INDUCTOR_ERROR, "inductor_error", "torch._inductor.exc.InductorError"),
        (
            texts.BACKEND_COMPILER_FAILED,
            "inductor_error",
            "torch._dynamo.exc.BackendCompilerFailed",
        ),
        (texts.FX_NESTED_TRACE, "fx_nested_trace", "RuntimeError"),
    ],
)
@pytest.mark.parametrize(
    "prefix", ["", "[rank1]:", "[default0]:", "2026-11-30 12:00:01,123 - ERROR - "]
)
def test_each_traceback_states_its_cause_behind_any_prefix(
    tmp_path: Path, last: str, cause: str, exception: str, prefix: str
) -> None:
    """The traceback's last line names the cause whatever torchrun or logging put
    before each line; the line numbers and what follows are counted."""
    lines = ["step 1 loss 2.0", *traceback_lines(last, prefix), "run ended"]
    out = scan(tmp_path, "\n".join(lines) + "\n")
    found = out["exception_causes"]
    assert list(found) == [cause]
    assert found[cause]["exception"] == exception
    assert found[cause]["first_line"] == found[cause]["last_line"] == 5
    assert found[cause]["lines_after"] == 1
    assert found[cause]["outside_threads"] == 1 and found[cause]["threads"] == []
    assert out["exception_lines"] == 1


def test_an_oom_inside_an_inductor_error_is_an_oom(tmp_path: Path) -> None:
    """The most specific cause wins: inductor failing because the GPU ran out of memory
    is the OOM, as its line says."""
    line = f"torch._inductor.exc.InductorError: OutOfMemoryError: {texts.CUDA_OOM_MESSAGE}"
    out = scan(tmp_path, "\n".join(traceback_lines(line)) + "\n")
    assert list(out["exception_causes"]) == ["cuda_oom"]


def test_nccl_watchdog_abort_is_a_collective_timeout(tmp_path: Path) -> None:
    """No Python traceback: the watchdog logs, then libstdc++ aborts the process; the
    what() line is the exception line, its C++ class the exception."""
    lines = ["step 6463 loss 1.2", *texts.NCCL_ABORT_LINES]
    out = scan(tmp_path, "\n".join(lines) + "\n")
    cause = out["exception_causes"]["collective_timeout"]
    assert cause["exception"] == "c10::DistBackendError"
    assert cause["count"] == 1 and cause["first_line"] == 6  # the what() line
    assert texts.NCCL_WATCHDOG_TIMEOUT in cause["last"]
    assert cause["lines_after"] == 1
    # The watchdog's own log line and the what() both carry the timeout text.
    assert out["signatures"]["collective_timeout"]["count"] == 2
    assert out["signatures"]["cpp_terminate"]["count"] == 1


def test_terminate_without_what_line_is_still_an_exception_line(tmp_path: Path) -> None:
    """A C++ terminate with no what() line still counts its exception class as the cause."""
    out = scan(tmp_path, texts.terminate_lines("std::bad_alloc", "x")[0] + "\nAborted\n")
    assert out["exception_causes"]["std::bad_alloc"]["count"] == 1


@pytest.mark.parametrize("limit", [texts.RECOMPILE_LIMIT, texts.RECOMPILE_LIMIT_OLD])
def test_recompile_limit_in_both_wordings(tmp_path: Path, limit: str) -> None:
    """torch 2.13 names recompile_limit; torch 2.0 to 2.5 named cache_size_limit. A
    warning is not an exception line: it states no crash."""
    warning = texts.glog_line(limit, source="torch/_dynamo/convert_frame.py:1995")
    out = scan(tmp_path, "\n".join([warning, *texts.recompile_warning(limit)[1:]]) + "\n")
    assert out["signatures"]["recompile_limit"]["count"] == 1
    assert out["exception_causes"] == {}


def test_logged_exception_mid_run_is_far_from_the_end(tmp_path: Path) -> None:
    """A traceback a trainer logged and survived has the run's progress after it."""
    lines = [*traceback_lines("ValueError: bad row 17"), *(f"step {i}" for i in range(500))]
    out = scan(tmp_path, "\n".join(lines) + "\n")
    assert out["exception_causes"]["ValueError"]["lines_after"] == 500


# --- against the installed torch ----------------------------------------------------------


@pytest.fixture
def torch_module() -> Any:
    need(HAS_TORCH, "torch", "install the [torch] extra")
    import torch

    return torch


def exception_line(exc: BaseException) -> str:
    return traceback.format_exception_only(type(exc), exc)[0].rstrip("\n")


@pytest.mark.torch
def test_exception_classes_print_as_the_texts_say(torch_module: Any) -> None:
    """Python prints each class by its module and name: the texts' first words."""
    import torch.distributed as dist
    from torch._dynamo.exc import BackendCompilerFailed
    from torch._inductor.exc import InductorError

    assert exception_line(torch_module.OutOfMemoryError(texts.CUDA_OOM_MESSAGE)) == texts.CUDA_OOM
    nccl = texts.NCCL_ERROR.split(": ", 1)[1]
    assert exception_line(dist.DistBackendError(nccl)) == texts.NCCL_ERROR
    assert exception_line(InductorError(KeyError("custom"), None)) == texts.INDUCTOR_ERROR
    failed = BackendCompilerFailed(lambda: None, KeyError("custom"), None)
    failed.backend_name = "inductor"
    assert exception_line(failed).startswith(texts.BACKEND_COMPILER_FAILED.split("'")[0])


@pytest.mark.torch
def test_dynamo_sources_hold_the_warning_and_the_fx_error(torch_module: Any) -> None:
    """The installed torch writes the recompile-limit warning with the format the texts
    fill, and raises the FX-trace error the FX-race family cites."""
    root = Path(torch_module.__file__).parent / "_dynamo"
    assert '"torch._dynamo hit config.%s (%s)\\n"' in (root / "convert_frame.py").read_text()
    source = (root / "eval_frame.py").read_text()
    assert '"Detected that you are using FX to symbolically trace "' in source
    assert '"a dynamo-optimized function. This is not supported at the moment."' in source


# --- produced for real ---------------------------------------------------------------------


def test_real_thread_traceback_names_its_thread(tmp_path: Path) -> None:
    """threading.excepthook's own output: the exception ended the thread named."""
    log = python(
        tmp_path,
        """
        import threading
        def work():
            raise ValueError("bad batch 7")
        t = threading.Thread(target=work, name="drafter-2")
        t.start(); t.join()
        print("main thread done")
        """,
    )
    out = scan(tmp_path, log)
    cause = out["exception_causes"]["ValueError"]
    assert cause["threads"] == ["drafter-2"] and cause["outside_threads"] == 0
    assert cause["last"] == "ValueError: bad batch 7"
    assert list(out["thread_exceptions"]) == ["drafter-2 -> ValueError"]


@pytest.mark.torch
@pytest.mark.slow
def test_real_oom_class_raised_in_workers(tmp_path: Path, torch_module: Any) -> None:
    """torch's OOM class raised in two worker threads (the text is the allocator's; no
    GPU here): one cause, both threads."""
    log = python(
        tmp_path,
        f"""
        import threading, torch
        def work():
            raise torch.OutOfMemoryError({texts.CUDA_OOM_MESSAGE!r})
        for name in ("gpu-0", "gpu-1"):
            t = threading.Thread(target=work, name=name)
            t.start(); t.join()
        """,
    )
    cause = scan(tmp_path, log)["exception_causes"]["cuda_oom"]
    assert cause["count"] == 2 and cause["threads"] == ["gpu-0", "gpu-1"]
    assert cause["last"].startswith("torch.OutOfMemoryError: CUDA out of memory.")


@pytest.mark.torch
@pytest.mark.slow
def test_real_recompile_limit_warning(tmp_path: Path, torch_module: Any) -> None:
    """dynamo's own warning, for a function called with more shapes than its limit."""
    log = python(
        tmp_path,
        """
        import torch
        torch._dynamo.config.recompile_limit = 2
        f = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
        for n in range(1, 6):
            f(torch.ones(n))
        """,
    )
    out = scan(tmp_path, log)
    assert out["signatures"]["recompile_limit"]["count"] == 1, log
    assert "torch._dynamo hit config.recompile_limit (2)" in log


@pytest.mark.torch
@pytest.mark.slow
def test_real_gloo_collective_timeout(tmp_path: Path, torch_module: Any) -> None:
    """Two gloo ranks, one never joins the all_reduce: torch raises gloo's timeout on the
    other, prefixed "[rankN]:" by torch itself."""
    source = """
        import datetime, sys, time
        import torch, torch.distributed as dist
        rank, port = int(sys.argv[1]), int(sys.argv[2])
        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
            timeout=datetime.timedelta(seconds=1),
        )
        if rank == 0:
            dist.all_reduce(torch.ones(1))
        else:
            time.sleep(4)
        """
    script = tmp_path / "ranks.py"
    script.write_text(textwrap.dedent(source))
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    argv = [sys.executable, str(script)]
    other = subprocess.Popen(
        [*argv, "1", port], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        run = subprocess.run([*argv, "0", port], capture_output=True, text=True, timeout=60)
    finally:
        other.wait(timeout=60)
    out = scan(tmp_path, run.stdout + run.stderr)
    cause = out["exception_causes"]["collective_timeout"]
    assert cause["last"].startswith("RuntimeError: ["), run.stderr
    assert "Timed out waiting 1000ms for recv operation" in cause["last"]
    assert "[rank0]: Traceback (most recent call last):" in run.stderr


@pytest.mark.slow
def test_real_cpp_terminate_what_line(tmp_path: Path) -> None:
    """libstdc++'s own terminate handler, for a C++ exception nothing caught (as NCCL's
    watchdog thread throws one): the what() line is the exception line."""
    compiler = shutil.which("c++")
    need(compiler is not None, "a C++ compiler", "install g++ (build-essential)")
    assert compiler is not None
    source = tmp_path / "abort.cpp"
    what = texts.NCCL_WATCHDOG_TIMEOUT.replace('"', '\\"')
    source.write_text(
        f'#include <stdexcept>\nint main() {{ throw std::runtime_error("{what}"); }}\n'
    )
    binary = tmp_path / "abort"
    subprocess.run([compiler, str(source), "-o", str(binary)], check=True, timeout=120)
    run = subprocess.run([str(binary)], capture_output=True, text=True, timeout=30)
    assert run.returncode != 0
    out = scan(tmp_path, run.stdout + run.stderr)
    cause = out["exception_causes"]["collective_timeout"]
    assert cause["exception"] == "std::runtime_error", run.stderr
    assert cause["last"] == texts.NCCL_WATCHDOG_TIMEOUT
    assert out["signatures"]["cpp_terminate"]["count"] == 1


def test_real_ignored_exception_states_no_cause(tmp_path: Path) -> None:
    """Python's own "Exception ignored in: ..." (a __del__ raising at shutdown, common in
    healthy runs) is followed by a traceback that ended nothing: no cause."""
    log = python(
        tmp_path,
        """
        class Handle:
            def __del__(self):
                raise AttributeError("'NoneType' object has no attribute 'close'")
        h = Handle()
        print("training done")
        del h
        """,
    )
    out = scan(tmp_path, log)
    assert out["signatures"]["exception_ignored"]["count"] == 1, log
    assert "AttributeError" in out["exceptions"]
    assert out["exception_causes"] == {} and out["exception_lines"] == 0


def test_real_worker_process_traceback_names_its_process(tmp_path: Path) -> None:
    """multiprocessing's own "Process NAME:" before the traceback of a worker process
    that died of it."""
    log = python(
        tmp_path,
        """
        import multiprocessing as mp
        def work():
            raise ValueError("bad shard 3")
        if __name__ == "__main__":
            p = mp.Process(target=work, name="drafter-sim:1")
            p.start(); p.join()
            print("exit code", p.exitcode)
        """,
    )
    cause = scan(tmp_path, log)["exception_causes"]["ValueError"]
    assert cause["threads"] == ["drafter-sim:1"], log
    assert cause["outside_threads"] == 0
