"""pyenv: versions read from files (no import), the package list, shadowed copies."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.lib.need import need
from tools.probes import pyenv
from tools.probes._common import Context


def dist(site: Path, name: str, version: str) -> None:
    d = site / f"{name.replace('-', '_')}-{version}.dist-info"
    d.mkdir(parents=True)
    (d / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nName: not-this\n"
    )
    (d / "INSTALLER").write_text("pip\n")


def fake_site(tmp_path: Path) -> tuple[Path, Path]:
    """Two site dirs: the first has torch 2.11 (CUDA build) and triton; the second an
    older, hidden torch."""
    first, second = tmp_path / "site1", tmp_path / "site2"
    dist(first, "torch", "2.11.0+cu130")
    dist(first, "triton", "3.6.0")
    dist(first, "nvidia-cudnn-cu13", "9.13.0.50")
    (first / "torch").mkdir()
    (first / "torch" / "__init__.py").write_text("raise ImportError('never imported')\n")
    (first / "torch" / "version.py").write_text(
        "from typing import Optional\n__version__ = '2.11.0+cu130'\ndebug = False\n"
        "cuda: Optional[str] = '13.0'\n"
        "git_version = '70d99e998b4955e0049d13a98d77ae1b14db1f45'\nhip = None\n"
    )
    (first / "triton").mkdir()
    (first / "triton" / "__init__.py").write_text("__version__ = '3.6.0'\nraise ImportError\n")
    dist(second, "torch", "2.9.0")
    return first, second


def test_versions_without_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch's version, git hash and CUDA come from version.py; cuDNN from its wheel."""
    first, second = fake_site(tmp_path)
    monkeypatch.setattr(sys, "path", [str(first), str(second)])
    out = pyenv.collect({}, Context())
    torch = out["torch"]
    assert torch is not None
    assert (torch["version"], torch["cuda"]) == ("2.11.0+cu130", "13.0")
    assert torch["git_version"] == "70d99e998b4955e0049d13a98d77ae1b14db1f45"
    assert (torch["cudnn"], torch["cudnn_source"]) == ("9.13.0.50", "wheel nvidia-cudnn-cu13")
    assert out["triton"] == {
        "path": str(first / "triton"),
        "version": "3.6.0",
        "dist_version": "3.6.0",
    }
    assert out["key_packages"]["torch"] == "2.11.0+cu130"
    assert out["key_packages"]["transformers"] is None
    assert out["shadowed"][0]["hidden"]["version"] == "2.9.0"
    assert "torch" not in sys.modules or sys.modules["torch"].__file__ != str(first)


def test_no_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An interpreter without torch or triton reports both as null and no packages: an observation,
    not a failure."""
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    out = pyenv.collect({}, Context())
    assert out["torch"] is None and out["triton"] is None and out["packages"] == []


def test_unreadable_version_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A torch package whose version file cannot be read is reported with that error rather than
    left out."""
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    torch = pyenv.collect({}, Context())["torch"]
    assert torch is not None and "unreadable" in torch["error"]


def test_real_environment_matches_importlib() -> None:
    """On this interpreter, the versions read from files agree with importlib.metadata
    and with torch/version.py as torch itself reports it."""
    need(
        importlib.util.find_spec("torch") is not None,
        "torch",
        "install the [torch] extra (make test does)",
    )
    from importlib.metadata import version

    out = pyenv.collect({}, Context())
    assert out["key_packages"]["torch"] == version("torch")
    assert out["torch"] is not None and out["torch"]["version"] == version("torch")
    assert len(out["packages"]) > 10
