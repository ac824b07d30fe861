"""gpus: nvidia-smi's answers, and its absence or failure as facts."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tools.probes import gpus
from tools.probes._common import Context

GPU_ROWS = (
    "0, NVIDIA H200, GPU-aaaa, 00000000:18:00.0, 550.54.15, 143771, 61234, 97, 54, 412.30,"
    " Default\\n"
    "1, NVIDIA H200, GPU-bbbb, 00000000:2A:00.0, 550.54.15, 143771, 12, 0, 31, [N/A], Default\\n"
)
STANDIN = f"""#!/bin/sh
# STAND-IN for nvidia-smi (tests only): canned answers for the queries the probe makes.
case "$1" in
  --query-gpu=*) printf '{GPU_ROWS}' ;;
  --query-compute-apps=*) printf '4242, python train_dflash.py, GPU-aaaa, 61000\\n' ;;
  *) printf '| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4     |\\n' ;;
esac
"""
BROKEN = """#!/bin/sh
echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2
exit 9
"""


def script(tmp_path: Path, body: str) -> str:
    p = tmp_path / "nvidia-smi"
    p.write_text(body)
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return str(p)


def test_devices_processes_and_versions(tmp_path: Path) -> None:
    """Two GPUs with numbers parsed (N/A is None), one compute process, the CUDA version."""
    ctx = Context()
    out = gpus.collect({"nvidia_smi": script(tmp_path, STANDIN)}, ctx)
    assert out["available"] and out["count"] == 2
    first, second = out["gpus"]
    assert first["name"] == "NVIDIA H200" and first["memory.used"] == 61234
    assert first["power.draw"] == 412.3 and second["power.draw"] is None
    assert out["processes"] == [
        {
            "pid": 4242,
            "process_name": "python train_dflash.py",
            "gpu_uuid": "GPU-aaaa",
            "used_memory": 61000,
        }
    ]
    assert out["driver_version"] == "550.54.15" and out["cuda_version"] == "12.4"
    assert ctx.commands[0]["argv"][1].startswith("--query-gpu=") and ctx.commands[0]["rc"] == 0


def test_absent_nvidia_smi_is_a_fact(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No nvidia-smi on PATH: the probe succeeds and says there is no GPU tooling."""
    monkeypatch.setenv("PATH", str(tmp_path))
    out = gpus.collect({}, Context())
    assert out["available"] is False and "not found" in out["reason"]


def test_failing_nvidia_smi_is_a_fact(tmp_path: Path) -> None:
    """A driver that does not answer: available is false and the reason is nvidia-smi's."""
    out = gpus.collect({"nvidia_smi": script(tmp_path, BROKEN)}, Context())
    assert out["available"] is False
    assert "rc=9" in out["reason"] and "NVIDIA driver" in out["reason"]


def test_process_names_with_commas() -> None:
    """A process name containing commas stays one field: nvidia-smi's CSV is split by the columns it
    has, not on every comma."""
    rows = gpus.parse_csv("7, python a,b.py, GPU-x, 10\n", gpus.APP_FIELDS)
    assert rows == [
        {"pid": 7, "process_name": "python a,b.py", "gpu_uuid": "GPU-x", "used_memory": 10}
    ]
