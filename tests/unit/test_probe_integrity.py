"""integrity: installed files against their dist-info/RECORD."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import sys
from pathlib import Path

import pytest

from tests.lib.need import need
from tools.probes import integrity
from tools.probes._common import Context, ProbeFailure


def install(site: Path) -> None:
    """A tiny 'torch' installed the way pip does, RECORD included."""
    files = {
        "torch/__init__.py": b"x = 1\n",
        "torch/fx/_symbolic_trace.py": b"def is_fx_symbolic_tracing():\n    return False\n",
        "torch/lib/libtorch.so": b"\x7fELF" + b"\0" * 100,
    }
    rows = []
    for rel, data in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(data)
        h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{rel},sha256={h},{len(data)}")
    di = site / "torch-2.11.0.dist-info"
    di.mkdir()
    (di / "METADATA").write_text("Name: torch\nVersion: 2.11.0\n")
    rows += ["torch-2.11.0.dist-info/RECORD,,", "torch/__pycache__/x.pyc,,"]
    (di / "RECORD").write_text("\n".join(rows) + "\n")


def test_clean_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An intact install matches its RECORD (Python files hashed, the binary checked by size); a
    package not installed is reported as such, not as damaged."""
    install(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    out = integrity.collect({"packages": ["torch", "triton"]}, Context())
    torch, triton = out["packages"]
    assert torch["ok"] and torch["hashed"] == 2 and torch["size_checked"] == 1
    assert triton == {"package": "triton", "installed": False}


def test_in_place_edit_missing_file_and_dropped_in_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A same-size edit (hash), a deleted file and an unrecorded .py are all facts."""
    install(tmp_path)
    st = tmp_path / "torch/fx/_symbolic_trace.py"
    st.write_bytes(st.read_bytes().replace(b"False", b"Frue!"))
    (tmp_path / "torch/lib/libtorch.so").unlink()
    (tmp_path / "torch/fx/patch.py").write_text("PATCHED = True\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    torch = integrity.collect({"packages": ["torch"]}, Context())["packages"][0]
    assert not torch["ok"]
    assert [(m["path"], m["reason"]) for m in torch["mismatched"]] == [
        ("torch/fx/_symbolic_trace.py", "hash")
    ]
    assert torch["missing"] == ["torch/lib/libtorch.so"]
    assert torch["unrecorded_py"] == ["torch/fx/patch.py"]


def test_size_change_of_a_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In "py" mode binaries are checked by size, which still catches a truncation."""
    install(tmp_path)
    (tmp_path / "torch/lib/libtorch.so").write_bytes(b"\x7fELF")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    torch = integrity.collect({"packages": ["torch"]}, Context())["packages"][0]
    assert torch["mismatched"][0]["reason"] == "size"


def test_bad_mode() -> None:
    """An unknown checking mode fails the probe."""
    with pytest.raises(ProbeFailure):
        integrity.collect({"mode": "some"}, Context())


def test_installed_torch_is_intact() -> None:
    """The .venv's torch matches its RECORD (a regression here means someone edited it)."""
    need(
        importlib.util.find_spec("torch") is not None,
        "torch",
        "install the [torch] extra (make test does)",
    )
    torch = integrity.collect({"packages": ["torch"]}, Context())["packages"][0]
    assert torch["installed"] and torch["hashed"] > 1000
    assert torch["mismatched_count"] == 0 and torch["missing_count"] == 0
