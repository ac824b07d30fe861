"""script_patches: monkeypatches and compile/thread sites found by reading the scripts."""

from __future__ import annotations

from pathlib import Path

from tools.probes import script_patches
from tools.probes._common import Context

SCRIPT = """
import threading, torch
import torch.fx._symbolic_trace as st
from torch.nn.attention.flex_attention import flex_attention, create_block_mask

st.is_fx_symbolic_tracing = lambda: False
setattr(torch.fx._symbolic_trace, "_is_fx_tracing_flag", False)
torch._dynamo.config.recompile_limit = 64
with torch._dynamo.config.patch(error_on_nested_fx_trace=False):
    pass
is_compiling = None            # a module-level rebinding of a watched name
flex = torch.compile(flex_attention)

@torch.compile
def step(x):
    return x

def worker():
    recompile_limit = 3        # a local name: not a patch
    create_block_mask(None, 1, 1, 8, 8)

threads = [threading.Thread(target=worker) for _ in range(3)]
torch._dynamo.reset()
"""


def test_patches_and_markers(tmp_path: Path) -> None:
    """Reading a script finds each monkeypatch with its target, line and code, the compile
    and thread sites by line, and counts the patches that replace the FX check."""
    p = tmp_path / "train.py"
    p.write_text(SCRIPT)
    out = script_patches.collect({"paths": [str(tmp_path)]}, Context())
    report = out["files"][0]
    targets = [x["target"] for x in report["patches"]]
    assert targets == [
        "st.is_fx_symbolic_tracing",
        "torch.fx._symbolic_trace._is_fx_tracing_flag",
        "torch._dynamo.config.recompile_limit",
        "torch._dynamo.config.patch(error_on_nested_fx_trace)",
        "is_compiling",
    ]
    first = next(x for x in report["patches"] if x["target"] == "st.is_fx_symbolic_tracing")
    assert first["line"] == 6 and first["code"] == "st.is_fx_symbolic_tracing = lambda: False"
    m = report["markers"]
    assert m["torch.compile"] == [12, 14]
    assert m["create_block_mask"] == [20] and m["thread"] == [22] and m["dynamo_reset"] == [23]
    assert out["patches"] == 5
    # Of those, three replace a name of the FX check; the other two are dynamo config.
    assert out["fx_check_patches"] == 3


def test_dynamo_config_alone_patches_no_check(tmp_path: Path) -> None:
    """A trainer that raises recompile_limit changes a setting, not torch's FX check."""
    (tmp_path / "train.py").write_text(
        "import torch\ntorch._dynamo.config.recompile_limit = 64\n"
        "torch._dynamo.config.cache_size_limit = 64\n"
    )
    out = script_patches.collect({"paths": [str(tmp_path)]}, Context())
    assert out["patches"] == 2 and out["fx_check_patches"] == 0


def test_unparsable_missing_and_unmatched(tmp_path: Path) -> None:
    """A script that does not parse, one that is missing, and a glob matching nothing are
    each reported, not raised."""
    (tmp_path / "bad.py").write_text("def f(:\n")
    out = script_patches.collect(
        {"paths": [str(tmp_path / "bad.py"), str(tmp_path / "gone.py"), f"{tmp_path}/*.yaml"]},
        Context(),
    )
    assert "does not parse" in out["files"][0]["error"]
    assert out["files"][1]["error"]
    assert out["unmatched"] == [f"{tmp_path}/*.yaml"]
