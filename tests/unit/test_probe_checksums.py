"""checksums: md5 as md5sum prints it, sha256, globs, and files that cannot be read."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.lib.need import need
from tests.lib.probe_workspace import as_nobody, world_readable_dir
from tools.probes import checksums
from tools.probes._common import Context, ProbeFailure


def test_digests_match_hashlib_and_md5sum(tmp_path: Path) -> None:
    """The md5 is the one `md5sum` prints; sha256 comes from the same read."""
    p = tmp_path / "train.py"
    p.write_bytes(os.urandom(3 << 20) + b"tail")
    out = checksums.collect({"paths": [str(p)]}, Context())
    entry = out["files"][0]
    assert entry["md5"] == hashlib.md5(p.read_bytes()).hexdigest()
    assert entry["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()
    assert entry["size"] == p.stat().st_size
    md5sum = shutil.which("md5sum")
    need(md5sum is not None, "md5sum", "coreutils not installed")
    assert md5sum is not None
    printed = subprocess.run([md5sum, str(p)], capture_output=True, text=True, check=True)
    assert printed.stdout.split()[0] == entry["md5"]


def test_globs_and_unmatched_patterns(tmp_path: Path) -> None:
    """Globs expand on the target; one that matches nothing is reported, not an error."""
    (tmp_path / "a.py").write_text("a")
    (tmp_path / "b.py").write_text("b")
    out = checksums.collect({"paths": [f"{tmp_path}/*.py", f"{tmp_path}/*.yaml"]}, Context())
    assert [Path(f["path"]).name for f in out["files"]] == ["a.py", "b.py"]
    assert out["files"][0]["pattern"] == f"{tmp_path}/*.py"
    assert out["unmatched"] == [f"{tmp_path}/*.yaml"]


def test_missing_directory_and_fifo_are_entries(tmp_path: Path) -> None:
    """Unreadable inputs are facts in the list; the probe itself succeeds."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = checksums.collect(
        {"paths": [str(tmp_path / "gone.py"), str(tmp_path), str(fifo)]}, Context()
    )
    kinds = [(f.get("error_kind"), f.get("kind")) for f in out["files"]]
    assert kinds[0] == ("not_found", None)
    assert kinds[1] == ("is_a_directory", "dir")
    assert kinds[2] == ("not_a_file", "fifo")


def test_permission_denied_as_another_user() -> None:
    """Run as nobody (root drops privileges in a forked child): a 0600 root file is
    "permission denied", not a crash and not a silent skip."""
    d = world_readable_dir()
    try:
        secret = d / "train.py"
        secret.write_text("secret")
        secret.chmod(0o600)
        out = as_nobody(lambda: checksums.collect({"paths": [str(secret)]}, Context()))
        assert out["files"][0]["error_kind"] == "permission_denied"
    finally:
        shutil.rmtree(d)


@pytest.mark.parametrize("params", [{}, {"paths": "x"}, {"paths": ["x"], "algorithms": ["nope"]}])
def test_bad_params(params: dict[str, object]) -> None:
    """No paths, paths that are not a list, or an unknown algorithm fail the probe as bad_params."""
    with pytest.raises(ProbeFailure) as err:
        checksums.collect(params, Context())
    assert err.value.kind == "bad_params"
