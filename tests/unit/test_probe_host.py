"""host: uptime, memory, disk free on the workspace paths."""

from __future__ import annotations

import shutil
from pathlib import Path

from tools.probes import host
from tools.probes._common import Context


def test_host_facts(tmp_path: Path) -> None:
    """Uptime, memory, CPU count and each path's disk free space match the machine; a missing path
    is reported as not found beside the others."""
    out = host.collect({"paths": [str(tmp_path), str(tmp_path / "missing")]}, Context())
    assert out["uptime_s"] is not None and out["uptime_s"] > 0
    assert out["mem_total_bytes"] and out["cpu_count"]
    ok, missing = out["disks"]
    # Others write to the same disk meanwhile: equal to within 1 GiB, not to the byte.
    assert abs(ok["free_bytes"] - shutil.disk_usage(tmp_path).free) < 1 << 30
    assert 0.0 <= ok["used_fraction"] <= 1.0
    assert missing["error_kind"] == "not_found"
