"""md5 of a large file: the checksums probe's streamed hashing vs coreutils ``md5sum``.

Run: .venv/bin/python benchmarks/md5_bench.py [--size-gb 2] [--runs 5] [--file PATH]

Both run as their own process on the same file, warm in the page cache (read once
first), alternating, ``runs`` times; medians are compared. ``ratio`` is
md5sum's time over the probe's (>= 0.95 means the probe is at most 5 % slower). The
probe's default (md5 and sha256 in one read, sha256 in a second thread) is timed too.
Prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = (
    "import sys; from tools.probes.checksums import digest_file; "
    "print(digest_file(sys.argv[1], sys.argv[2].split(','))[sys.argv[2].split(',')[0]])"
)


def timed(argv: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return time.perf_counter() - started, out.split()[0]


def make_file(path: Path, size: int) -> None:
    chunk = os.urandom(1 << 20)
    with path.open("wb") as f:
        for i in range(size >> 20):
            # Vary the chunks cheaply so the file is not one repeated block.
            f.write(i.to_bytes(8, "little") + chunk[8:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-gb", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--file", type=Path)
    args = ap.parse_args()
    tmp = None
    path = args.file
    if path is None:
        tmp = tempfile.TemporaryDirectory(prefix="md5-bench-")
        path = Path(tmp.name) / "blob.bin"
        make_file(path, int(args.size_gb * (1 << 30)))
    try:
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)  # warm
        runners = {
            "md5sum": ["md5sum", str(path)],
            "probe_md5": [sys.executable, "-c", PROBE, str(path), "md5"],
            "probe_md5_sha256": [sys.executable, "-c", PROBE, str(path), "md5,sha256"],
        }
        times: dict[str, list[float]] = {k: [] for k in runners}
        digests: dict[str, set[str]] = {k: set() for k in runners}
        for _ in range(args.runs):
            for name, argv in runners.items():
                t, digest = timed(argv)
                times[name].append(t)
                digests[name].add(digest)
        assert len(set().union(*digests.values())) == 1, digests  # all agree on the md5
        med = {k: statistics.median(v) for k, v in times.items()}
        size = path.stat().st_size
        print(
            json.dumps(
                {
                    "file_bytes": size,
                    "runs": args.runs,
                    "median_s": {k: round(v, 3) for k, v in med.items()},
                    "all_s": {k: [round(x, 3) for x in v] for k, v in times.items()},
                    "mb_per_s": {k: round(size / v / 1e6) for k, v in med.items()},
                    "ratio_md5sum_over_probe_md5": round(med["md5sum"] / med["probe_md5"], 3),
                    "ratio_md5sum_over_probe_md5_sha256": round(
                        med["md5sum"] / med["probe_md5_sha256"], 3
                    ),
                    "cpus": os.cpu_count(),
                    "loadavg_at_end": os.getloadavg()[0],
                },
                indent=2,
            )
        )
    finally:
        if tmp is not None:
            tmp.cleanup()


if __name__ == "__main__":
    main()
