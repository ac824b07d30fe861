"""torch_source: the race's two questions answered from installed sources, with
file:line evidence — on the real torch 2.13 and on synthetic 2.11-shaped trees."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.lib.need import need
from tools.probes import torch_source
from tools.probes._common import Context

EVAL_FRAME_BINDS = """
import torch
class _TorchDynamoContext:
    def __call__(self, fn):
        is_fx_symbolic_tracing = torch.fx._symbolic_trace.is_fx_symbolic_tracing
        def compile_wrapper(*args, **kwargs):
            if is_fx_symbolic_tracing():
                raise RuntimeError("Detected that you are using FX to symbolically trace")
            return fn(*args, **kwargs)
        return compile_wrapper
"""
EVAL_FRAME_LOOKS_UP = """
import torch
def wrap(fn):
    def compile_wrapper(*args):
        if torch.fx._symbolic_trace.is_fx_symbolic_tracing():
            raise RuntimeError("nested")
        return fn(*args)
    return compile_wrapper
"""
CONVERT_FRAME_HOLDS = """
import contextlib, torch
def compile_inner(code):
    with contextlib.ExitStack() as stack:
        # Hold _is_compiling_flag True for the duration of compilation
        stack.enter_context(torch.compiler._compile_session_context())
        return code
"""
# 2.11-shaped: the flag is only mentioned in a comment, never set.
CONVERT_FRAME_OPEN = """
def compile_inner(code):
    # _is_compiling_flag is not touched here
    return code
"""
COMPILER = """
_is_compiling_flag: bool = False
def _compile_session_context():
    global _is_compiling_flag
    old = _is_compiling_flag
    try:
        _is_compiling_flag = True
        yield
    finally:
        _is_compiling_flag = old
"""
SYMBOLIC_TRACE = '''
def is_fx_symbolic_tracing() -> bool:
    """doc"""
    return _is_fx_tracing_flag and not torch.compiler.is_compiling()
'''
CONFIG = """
import os
error_on_nested_fx_trace = True
recompile_limit = 8
cache_size_limit: int = Config(alias="torch._dynamo.config.recompile_limit")
"""


def tree(root: Path, eval_frame: str, convert_frame: str) -> Path:
    pkg = root / "torch"
    for rel, text in {
        "_dynamo/eval_frame.py": eval_frame,
        "_dynamo/convert_frame.py": convert_frame,
        "compiler/__init__.py": COMPILER,
        "fx/_symbolic_trace.py": SYMBOLIC_TRACE,
        "_dynamo/config.py": CONFIG,
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    return pkg


def test_closed_race_build(tmp_path: Path) -> None:
    """2.13-shaped: binds at wrap time, holds the flag; evidence cites file:line."""
    pkg = tree(tmp_path, EVAL_FRAME_BINDS, CONVERT_FRAME_HOLDS)
    out = torch_source.collect({"torch_path": str(pkg)}, Context())
    assert out["binds_check_at_wrap"]["value"] is True
    assert out["binds_check_at_wrap"]["evidence"][0].startswith("torch/_dynamo/eval_frame.py:5:")
    assert out["holds_compiling_flag"]["value"] is True
    assert "_compile_session_context" in out["holds_compiling_flag"]["evidence"][0]
    assert out["is_fx_symbolic_tracing"]["body"] == [
        "return _is_fx_tracing_flag and not torch.compiler.is_compiling()"
    ]
    defaults = out["dynamo_config_defaults"]
    assert defaults["error_on_nested_fx_trace"] is True and defaults["recompile_limit"] == 8
    assert "Config(alias" in defaults["cache_size_limit"]["expr"]


def test_open_race_build(tmp_path: Path) -> None:
    """2.11-shaped: the flag appears only in a comment, so the race is open."""
    pkg = tree(tmp_path, EVAL_FRAME_BINDS, CONVERT_FRAME_OPEN)
    out = torch_source.collect({"torch_path": str(pkg)}, Context())
    assert out["holds_compiling_flag"]["value"] is False


def test_call_time_lookup(tmp_path: Path) -> None:
    """A build that looks the check up on each call: a module-level patch would work."""
    pkg = tree(tmp_path, EVAL_FRAME_LOOKS_UP, CONVERT_FRAME_HOLDS)
    out = torch_source.collect({"torch_path": str(pkg)}, Context())
    assert out["binds_check_at_wrap"]["value"] is False


def test_unparsable_and_missing_sources(tmp_path: Path) -> None:
    """An edit that broke eval_frame.py, and a missing convert_frame.py: unknown, with
    the reason per file — never a guess."""
    pkg = tree(tmp_path, "def broken(:\n", CONVERT_FRAME_HOLDS)
    (pkg / "_dynamo" / "convert_frame.py").unlink()
    out = torch_source.collect({"torch_path": str(pkg)}, Context())
    assert out["binds_check_at_wrap"]["value"] is None
    assert out["holds_compiling_flag"]["value"] is None
    reason = out["files"]["torch/_dynamo/eval_frame.py"]
    assert reason is not None and "does not parse" in reason
    assert out["files"]["torch/_dynamo/convert_frame.py"]


def test_installed_torch_213() -> None:
    """The .venv's torch 2.13 binds at wrap time and holds the compiling flag
    (shared/experiments/README.md's table, read from the real sources)."""
    need(
        importlib.util.find_spec("torch") is not None,
        "torch",
        "install the [torch] extra (make test does)",
    )
    out = torch_source.collect({}, Context())
    assert out["binds_check_at_wrap"]["value"] is True
    assert out["holds_compiling_flag"]["value"] is True
    assert out["dynamo_config_defaults"]["error_on_nested_fx_trace"] is True
    assert all(err is None for err in out["files"].values())
