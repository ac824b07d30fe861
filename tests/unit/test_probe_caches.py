"""caches: where torch and triton keep compiled code, and what is in there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.probes import caches
from tools.probes._common import Context


def test_env_variable_wins_over_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TORCHINDUCTOR_CACHE_DIR / TRITON_CACHE_DIR are followed, and the source says so."""
    ind = tmp_path / "inductor"
    (ind / "fxgraph" / "ab").mkdir(parents=True)
    (ind / "fxgraph" / "ab" / "entry").write_bytes(b"x" * 100)
    (ind / "triton" / "0").mkdir(parents=True)
    (ind / "triton" / "0" / "k.cubin").write_bytes(b"y" * 50)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(ind))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-missing"))
    out = caches.collect({}, Context())["caches"]
    inductor, triton = out
    assert inductor["source"] == "env:TORCHINDUCTOR_CACHE_DIR"
    assert (inductor["files"], inductor["bytes"]) == (2, 150)
    assert [t["name"] for t in inductor["top"]] == ["fxgraph", "triton"]
    newest, oldest = inductor["newest_mtime"], inductor["oldest_mtime"]
    assert newest is not None and oldest is not None and newest >= oldest
    assert triton == {
        "cache": "triton",
        "path": str(tmp_path / "triton-missing"),
        "source": "env:TRITON_CACHE_DIR",
        "exists": False,
        "files": 0,
    }


def test_default_locations(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without variables: torch's <tmp>/torchinductor_<user>, triton's ~/.triton/cache."""
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    monkeypatch.setenv("TRITON_HOME", str(tmp_path))
    monkeypatch.setenv("USER", "alice")
    monkeypatch.setenv("LOGNAME", "alice")
    path, source = caches.locate("inductor", None)
    assert source == "default" and path.endswith("torchinductor_alice")
    assert caches.locate("triton", None) == (str(tmp_path / ".triton" / "cache"), "default")


def test_cache_dir_that_is_a_file(tmp_path: Path) -> None:
    """A file where the cache directory belongs is a fact (torch cannot write there)."""
    f = tmp_path / "cache"
    f.write_text("oops")
    out = caches.collect({"inductor": str(f), "triton": str(tmp_path / "nope")}, Context())
    inductor = out["caches"][0]
    assert inductor["exists"] and inductor["kind"] == "file" and "files" not in inductor


def test_nothing_is_created(tmp_path: Path) -> None:
    """Looking at a missing cache does not create it (torch's own cache_dir() would)."""
    target = tmp_path / "absent" / "cache"
    caches.collect({"inductor": str(target), "triton": str(target)}, Context())
    assert not target.parent.exists()


def test_unlistable_subdirectory_is_reported(tmp_path: Path) -> None:
    """A FIFO is not descended into; an unreadable directory is listed as such."""
    (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "sub" / "pipe")
    out = caches.walk(str(tmp_path), 1000)
    assert out["files"] == 1 and out["unreadable"] == []


def test_walk_stops_at_max_entries(tmp_path: Path) -> None:
    """A cache walk stops at its entry limit and says it was truncated, so a huge cache cannot stall
    the probe."""
    for i in range(30):
        (tmp_path / f"f{i}").write_text("x")
    out = caches.walk(str(tmp_path), 10)
    assert out["truncated"] and out["files"] == 10


def test_extra_caches(tmp_path: Path) -> None:
    """A profile's extra cache directories are reported after the two standard ones."""
    out = caches.collect({"extra": [str(tmp_path)]}, Context())["caches"]
    assert out[2]["cache"] == "extra" and out[2]["source"] == "param"
