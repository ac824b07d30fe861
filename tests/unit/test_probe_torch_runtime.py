"""torch_runtime: is is_fx_symbolic_tracing torch's own? (The import itself is tested
through the bundle, in its own process: see test_bundle.py.)"""

from __future__ import annotations

from tools.probes.torch_runtime import origin


def is_fx_symbolic_tracing() -> bool:
    return False


def test_foreign_function_is_flagged() -> None:
    """A replacement from another module (a monkeypatch) is not torch's own."""
    o = origin(is_fx_symbolic_tracing, "torch.fx._symbolic_trace", "torch/fx/_symbolic_trace.py")
    assert o["module"] == __name__ and o["is_torch_own"] is False
    assert o["file"] is not None and o["file"].endswith("test_probe_torch_runtime.py")


def test_lambda_patch_is_flagged() -> None:
    """A lambda put in place of torch's function is named as a lambda and is not torch's own, even
    when bound under torch's module."""
    o = origin(lambda: False, "torch.fx._symbolic_trace", "torch/fx/_symbolic_trace.py")
    assert o["qualname"] is not None and o["qualname"].endswith("<lambda>")
    assert o["is_torch_own"] is False
