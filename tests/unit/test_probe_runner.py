"""The runner on the target: forked probes, hard time limits, crashes, stray output."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import types
from collections.abc import Iterator
from typing import Any

import pytest

from tools.probes import _runner
from tools.probes._common import Context, ProbeFailure

PKG = "_test_runner_pkg"


def _fake_probes() -> dict[str, Any]:
    def fine(params: dict[str, Any], ctx: Context) -> Any:
        return {"echo": params.get("x"), "nan": float("nan"), "raw": b"\xff"}

    def sleepy(params: dict[str, Any], ctx: Context) -> Any:
        time.sleep(60)

    def dies(params: dict[str, Any], ctx: Context) -> Any:
        os.kill(os.getpid(), signal.SIGKILL)

    def chatty(params: dict[str, Any], ctx: Context) -> Any:
        print("import noise on stdout")
        return 1

    def refuses(params: dict[str, Any], ctx: Context) -> Any:
        raise ProbeFailure("not_found", "/ws/x: No such file or directory", "/ws/x")

    def buggy(params: dict[str, Any], ctx: Context) -> Any:
        empty: dict[str, int] = {}
        return empty["missing"]

    return {
        "fine": fine,
        "sleepy": sleepy,
        "dies": dies,
        "chatty": chatty,
        "refuses": refuses,
        "buggy": buggy,
    }


@pytest.fixture
def fake_package() -> Iterator[None]:
    """Probe modules installed in sys.modules the way the bundle's bootstrap does."""
    root = types.ModuleType(PKG)
    root.__path__ = []
    sys.modules[PKG] = root
    for name, fn in _fake_probes().items():
        mod = types.ModuleType(f"{PKG}.probes.{name}")
        mod.collect = fn  # type: ignore[attr-defined]
        sys.modules[mod.__name__] = mod
    try:
        yield
    finally:
        for key in [k for k in sys.modules if k.startswith(PKG)]:
            del sys.modules[key]


def plan(*names: str, timeout: float = 5.0) -> dict[str, Any]:
    return {
        "probes": [
            {"name": n, "module": f"probes.{n}", "params": {"x": n}, "timeout": timeout}
            for n in names
        ],
        "parallel": 3,
    }


def run(capfd: pytest.CaptureFixture[str], p: dict[str, Any]) -> dict[str, Any]:
    _runner.main(p, PKG)
    out = capfd.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.startswith(_runner.SENTINEL)]
    assert len(lines) == 1, out
    doc: dict[str, Any] = json.loads(lines[0][len(_runner.SENTINEL) :])
    return {r["probe"]: r for r in doc["results"]}


@pytest.mark.usefixtures("fake_package")
def test_partial_results_when_probes_fail(capfd: pytest.CaptureFixture[str]) -> None:
    """A hang, a crash, a refusal and a bug each fail only their own probe."""
    started = time.monotonic()
    results = run(capfd, plan("fine", "sleepy", "dies", "refuses", "buggy", timeout=2.0))
    assert time.monotonic() - started < 10
    assert results["fine"]["ok"] and results["fine"]["value"] == {
        "echo": "fine",
        "nan": "nan",
        "raw": "\ufffd",
    }
    assert results["sleepy"]["error"]["kind"] == "timeout"
    assert results["dies"]["error"]["kind"] == "crashed"
    assert "signal 9" in results["dies"]["error"]["message"]
    assert results["refuses"]["error"] == {
        "kind": "not_found",
        "message": "/ws/x: No such file or directory",
        "path": "/ws/x",
    }
    assert results["buggy"]["error"]["kind"] == "error"
    assert "KeyError" in results["buggy"]["error"]["message"]


@pytest.mark.usefixtures("fake_package")
def test_stray_print_does_not_corrupt_the_document(capfd: pytest.CaptureFixture[str]) -> None:
    """What a probe prints goes to stderr; the document stays one clean line."""
    results = run(capfd, plan("chatty"))
    assert results["chatty"]["value"] == 1


@pytest.mark.usefixtures("fake_package")
def test_broken_module_fails_its_probe(capfd: pytest.CaptureFixture[str]) -> None:
    """A module that did not load on the target fails the probes that need it."""
    p = plan("fine")
    p["probes"][0]["needs"] = ["probes.fine", "parsers.x"]
    _runner.main(p, PKG, {"parsers.x": "SyntaxError: invalid syntax"})
    line = capfd.readouterr().out.strip().splitlines()[-1]
    result = json.loads(line[len(_runner.SENTINEL) :])["results"][0]
    assert result["error"]["kind"] == "bundle_failed"
    assert "parsers.x" in result["error"]["message"]


@pytest.mark.usefixtures("fake_package")
def test_inline_mode_without_fork(capfd: pytest.CaptureFixture[str]) -> None:
    """Where fork is unavailable the probes run in-process, still one result each."""
    p = plan("fine", "refuses")
    p["inline"] = True
    results = run(capfd, p)
    assert results["fine"]["ok"] and results["refuses"]["error"]["kind"] == "not_found"
