# Shipped to targets running Python 3.8: zip(strict=) and itertools.pairwise are 3.10+.
# ruff: noqa: B905
"""GPUs as ``nvidia-smi`` reports them: one query for the devices, one for the compute
processes. No nvidia-smi, or one that fails (no driver), is a fact, not an error:
``available`` is false and ``reason`` says why.

Shipped in the probe bundle: stdlib only, Python >= 3.8. It runs nvidia-smi from inside
the bundle, so the GPUs cost no extra round trip.
"""

from __future__ import annotations

import shutil
from typing import Any

from ._common import Context, TypedDict

NAME = "gpus"
TIMEOUT = 30.0

GPU_FIELDS = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "driver_version",
    "memory.total",
    "memory.used",
    "utilization.gpu",
    "temperature.gpu",
    "power.draw",
    "compute_mode",
)
APP_FIELDS = ("pid", "process_name", "gpu_uuid", "used_memory")
INT_FIELDS = {
    "index",
    "memory.total",
    "memory.used",
    "utilization.gpu",
    "temperature.gpu",
    "pid",
    "used_memory",
}
FLOAT_FIELDS = {"power.draw"}


class GpusValue(TypedDict, total=False):
    available: bool
    reason: str  # why not available
    nvidia_smi: str | None
    driver_version: str | None
    cuda_version: str | None  # the driver's CUDA version, from nvidia-smi's banner
    count: int
    gpus: list[dict[str, Any]]  # keys: GPU_FIELDS, numbers where nvidia-smi gives them
    processes: list[dict[str, Any]]  # keys: APP_FIELDS
    processes_error: str


def _value(key: str, raw: str) -> Any:
    raw = raw.strip()
    if raw in ("[N/A]", "N/A", "[Not Supported]", ""):
        return None
    try:
        if key in INT_FIELDS:
            return int(float(raw))
        if key in FLOAT_FIELDS:
            return float(raw)
    except ValueError:
        return raw
    return raw


def parse_csv(text: str, fields: tuple[str, ...]) -> list[dict[str, Any]]:
    """Rows of ``--format=csv,noheader,nounits`` output (names never contain commas in
    the fields asked for, except process names, which are the last-but-two field)."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) > len(fields) and "process_name" in fields:
            i = fields.index("process_name")
            extra = len(parts) - len(fields)
            parts[i : i + extra + 1] = [",".join(parts[i : i + extra + 1])]
        if len(parts) != len(fields):
            rows.append({"unparsed": line})
            continue
        rows.append({k: _value(k, v) for k, v in zip(fields, parts)})
    return rows


def collect(params: dict[str, Any], ctx: Context) -> GpusValue:
    exe = params.get("nvidia_smi") or shutil.which("nvidia-smi")
    if not exe:
        return {
            "available": False,
            "reason": "nvidia-smi not found on PATH",
            "nvidia_smi": None,
            "count": 0,
            "gpus": [],
            "processes": [],
        }
    rc, out, err = ctx.run(
        [exe, "--query-gpu=" + ",".join(GPU_FIELDS), "--format=csv,noheader,nounits"], timeout=20
    )
    if rc != 0:
        msg = (err or out).decode("utf-8", "replace").strip()[:500]
        return {
            "available": False,
            "nvidia_smi": exe,
            "count": 0,
            "gpus": [],
            "processes": [],
            "reason": f"nvidia-smi failed (rc={rc}): {msg}",
        }
    gpus = parse_csv(out.decode("utf-8", "replace"), GPU_FIELDS)
    value: GpusValue = {
        "available": bool(gpus),
        "nvidia_smi": exe,
        "count": len(gpus),
        "gpus": gpus,
        "driver_version": gpus[0].get("driver_version") if gpus else None,
        "cuda_version": None,
        "processes": [],
    }
    if not gpus:
        value["reason"] = "nvidia-smi lists no GPU"
    rc, out, err = ctx.run(
        [exe, "--query-compute-apps=" + ",".join(APP_FIELDS), "--format=csv,noheader,nounits"],
        timeout=20,
    )
    if rc == 0:
        value["processes"] = parse_csv(out.decode("utf-8", "replace"), APP_FIELDS)
    else:
        value["processes_error"] = (err or out).decode("utf-8", "replace").strip()[:500]
    rc, out, _ = ctx.run([exe], timeout=20)
    if rc == 0:
        for line in out.decode("utf-8", "replace").splitlines():
            if "CUDA Version" in line:
                value["cuda_version"] = line.split("CUDA Version:")[-1].strip(" |")
                break
    return value


VALUE = GpusValue
