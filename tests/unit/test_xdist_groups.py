"""``make test`` runs two workers with ``--dist loadgroup`` so that a file, and the files
sharing a costly trainer run, stay on one worker and build that run once. A pytest or
pytest-xdist release can silently stop honouring the groups (pytest 9.2 did: every test
was then sent out alone); this runs the real scheduler and checks that it still groups."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Three small, fast files: a worker that took any test of a file must have taken all.
FILES = ("tests/unit/test_claims.py", "tests/unit/test_shown.py", "tests/unit/test_windows.py")
PYTEST = (sys.executable, "-m", "pytest", "-p", "no:cacheprovider")
RAN = re.compile(r"^\[(gw\d+)\] \[\s*\d+%\] PASSED (tests/[^:]+)::", re.M)


def test_each_file_runs_whole_on_one_worker() -> None:
    """With two workers, every test of each file is reported by the same worker."""
    run = subprocess.run(
        [*PYTEST, "-n", "2", "--dist", "loadgroup", "-v", *FILES],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, path in RAN.findall(run.stdout):
        workers[path].add(worker)
    assert set(workers) == set(FILES), run.stdout[-3000:]
    split = {path: sorted(w) for path, w in workers.items() if len(w) > 1}
    assert split == {}, f"files whose tests ran on more than one worker: {split}"
