"""A file a probe reads that is not a regular file: a symlink to /dev/zero, a FIFO nobody
writes to, a symlink loop, a directory. Each is a problem of its entry, named by kind, and
the probe returns at once with its other facts, its memory small (issue 14, item 2).

Every probe runs in a child process under an address-space limit, so a probe that reads
/dev/zero to its end fails with MemoryError instead of taking the machine; the child
reports its own peak RSS (VmHWM) and a FIFO that blocks it is a timeout here, not a hung suite.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.lib.probe_workspace import make_workspace

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("devzero", "fifo", "loop", "dir")
# What the problem says, per kind (lowercase substrings of it).
SAYS = {
    "devzero": "character device",
    "fifo": "fifo",
    "loop": "symlink loop",
    "dir": "directory",
}
CHILD_LIMIT_S = 20.0  # a probe that blocks on a FIFO is killed here
FAST_S = 10.0  # what "returns quickly" means, with room for a loaded machine
MAX_RSS_KB = 200 * 1024

# Run in the child: the address-space limit first, then ``SNIPPET`` sets ``result``.
PRELUDE = """
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
sys.path.insert(0, {root!r})
from tools.probes import _runner
from tools.probes._common import Context
args = json.loads(sys.argv[1])
started = time.monotonic()
"""
# The child's own peak: VmHWM belongs to the address space exec() made. ru_maxrss does
# not do here: Linux carries it across exec, so a child of a test worker that imported
# torch would report the worker's 600 MB as its own.
EPILOGUE = """
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"result": result, "elapsed": time.monotonic() - started,
                  "maxrss_kb": hwm}, default=str))
"""


def make_special(p: Path, kind: str) -> None:
    """Replace whatever is at ``p`` with a file of ``kind``."""
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    elif p.exists() or p.is_symlink():
        p.unlink()
    if kind == "devzero":
        p.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "loop":
        p.symlink_to(p.name)  # a link to itself: ELOOP
    else:
        p.mkdir()
        (p / "inside.txt").write_text("x\n")


def in_child(snippet: str, **args: Any) -> dict[str, Any]:
    """Run ``snippet`` (which sets ``result``) in a fresh interpreter; its output."""
    code = PRELUDE.format(root=str(ROOT)) + snippet + EPILOGUE
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=CHILD_LIMIT_S,
        stdin=subprocess.DEVNULL,
    )
    wall = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert wall < FAST_S, f"took {wall:.1f}s"
    assert out["maxrss_kb"] < MAX_RSS_KB, f"peak RSS {out['maxrss_kb']} kB"
    return out


def run_probe(module: str, params: dict[str, Any]) -> dict[str, Any]:
    """The probe as the bundle runs it (``run_one``): ok, value, error."""
    snippet = (
        "import importlib\n"
        "m = importlib.import_module('tools.probes.' + args['module'])\n"
        "result = _runner.run_one(args['module'], m.collect, args['params'])\n"
    )
    fact: dict[str, Any] = in_child(snippet, module=module, params=params)["result"]
    assert fact["ok"], fact["error"]
    return fact


def says(text: str, kind: str) -> bool:
    return SAYS[kind] in text.lower()


# -- checkpoints: the metadata record, a record file, a .ckpt inside, an env file beside --


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "name", ["step_690/metadata.json", "step_690/hparams.yaml", "step_690/last.ckpt"]
)
def test_checkpoint_record_that_is_not_a_file(tmp_path: Path, name: str, kind: str) -> None:
    """A checkpoint record that is a special file is a problem of its step, named by kind;
    the other step and its versions are still read."""
    ws = make_workspace(tmp_path)
    make_special(ws / "checkpoints" / name, kind)
    value = run_probe("checkpoints", {"path": str(ws / "checkpoints")})["value"]
    assert value["step_numbers"] == [600, 690]
    old, new = value["steps"]
    assert old["canonical"]["torch"] == "2.11.0+cu130" and not old["problems"]
    assert new["name"] == "step_690"
    where = new["problems"] + new["canonical_notes"]
    hits = [p for p in where if name.split("/")[1] in p and says(p, kind)]
    assert hits, where
    if name.endswith("metadata.json"):
        assert "metadata" not in new and says(new["metadata_error"], kind)
        assert any(says(p, kind) for p in new["problems"]), new["problems"]
        assert "torch" not in new["canonical"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", KINDS)
def test_environment_file_beside_the_checkpoints(tmp_path: Path, kind: str) -> None:
    """A saved environment file that is a special file is a note naming it by kind; the
    versions the checkpoints record are still read."""
    ws = make_workspace(tmp_path)
    make_special(ws / "checkpoints" / "pip-freeze.txt", kind)
    value = run_probe("checkpoints", {"path": str(ws / "checkpoints")})["value"]
    assert value["step_numbers"] == [600, 690]
    notes = value["environment"]["canonical_notes"]
    assert any("pip-freeze.txt" in n and says(n, kind) for n in notes), notes
    assert value["recorded"]["torch"] == "2.11.0+cu130"


# -- the script probes --


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", KINDS)
def test_checksums_of_a_script_that_is_not_a_file(tmp_path: Path, kind: str) -> None:
    """A script to checksum that is a special file is refused with its kind and no hash; the
    regular file beside it is hashed."""
    ws = make_workspace(tmp_path)
    bad = ws / "launch.sh"
    make_special(bad, kind)
    good = ws / "train_dflash.py"
    value = run_probe("checksums", {"paths": [str(good), str(bad)]})["value"]
    ok, refused = value["files"]
    assert ok["path"] == str(good) and len(ok["sha256"]) == 64
    assert refused["path"] == str(bad) and says(refused["error"], kind), refused
    assert "md5" not in refused


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", KINDS)
def test_script_patches_of_a_script_that_is_not_a_file(tmp_path: Path, kind: str) -> None:
    """A script named for patch reading that is a special file is an error of its entry, the
    others still read; a directory is read for its ``*.py`` files instead."""
    ws = make_workspace(tmp_path)
    bad = ws / "patch_torch.py"
    make_special(bad, kind)
    good = ws / "train_dflash.py"
    # Named one by one: a directory named is read for its *.py files, not refused.
    value = run_probe("script_patches", {"paths": [str(good), str(bad)]})["value"]
    by_path = {r["path"]: r for r in value["files"]}
    assert by_path[str(good)]["patches"], by_path
    if kind == "dir":
        assert str(bad) not in by_path  # its (no) *.py files were read instead
        return
    assert says(by_path[str(bad)]["error"], kind), by_path[str(bad)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", KINDS)
def test_script_patches_glob_matching_a_special_file(tmp_path: Path, kind: str) -> None:
    """A glob that matches a special file reports it by kind and still reads the real
    scripts it matches."""
    ws = make_workspace(tmp_path)
    bad = ws / "patch_torch.py"
    make_special(bad, kind)
    value = run_probe("script_patches", {"paths": [str(ws / "*.py")]})["value"]
    by_path = {r["path"]: r for r in value["files"]}
    assert by_path[str(ws / "train_dflash.py")]["patches"]
    assert says(by_path[str(bad)]["error"], kind), by_path[str(bad)]


# -- the dataset --


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["devzero", "fifo", "loop"])
def test_dataset_file_that_is_not_a_file(tmp_path: Path, kind: str) -> None:
    """(A directory named as the dataset is listed, by design: a sharded dataset.)"""
    ws = make_workspace(tmp_path)
    bad = ws / "data" / "more.jsonl"
    make_special(bad, kind)
    good = ws / "data" / "prompts.jsonl"
    value = run_probe("dataset", {"paths": [str(good), str(bad)]})["value"]
    ok, refused = value["files"]
    assert ok["lines"] == 4
    assert says(refused["error"], kind), refused


# -- the installed packages: a dist-info's METADATA and RECORD --


def _site(root: Path) -> Path:
    site = root / "site"
    dist = site / "torch-2.11.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0\n\n")
    (dist / "RECORD").write_text("torch/__init__.py,,\n")
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text("")
    return site


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", KINDS)
def test_integrity_record_that_is_not_a_file(tmp_path: Path, kind: str) -> None:
    """A package's RECORD that is a special file makes the integrity check fail with the
    kind named, not hang."""
    site = _site(tmp_path)
    make_special(site / "torch-2.11.0.dist-info" / "RECORD", kind)
    snippet = (
        "from tools.probes import integrity\n"
        "result = integrity.check('torch', [args['site']], 'py', Context())\n"
    )
    out = in_child(snippet, site=str(site))["result"]
    assert out["installed"] and out["ok"] is False
    assert says(out["error"], kind), out


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", KINDS)
def test_pyenv_metadata_that_is_not_a_file(tmp_path: Path, kind: str) -> None:
    """A dist-info whose METADATA cannot be read names no package; the others are listed."""
    site = _site(tmp_path)
    other = site / "triton-3.6.0.dist-info"
    other.mkdir()
    (other / "METADATA").write_text("Name: triton\nVersion: 3.6.0\n\n")
    make_special(site / "torch-2.11.0.dist-info" / "METADATA", kind)
    snippet = "from tools.probes import pyenv\nresult = pyenv.distributions([args['site']])\n"
    out = in_child(snippet, site=str(site))["result"]
    assert [d["name"] for d in out] == ["triton"]


# -- the whole bundle, as a user runs it --


@pytest.mark.timeout(200)
def test_facts_on_a_workspace_full_of_special_files() -> None:
    """``facts`` on a workspace planted with special files everywhere succeeds in bounded
    time and memory: every probe returns its fact, and the problems are named."""
    root = Path(tempfile.mkdtemp(prefix="dflash-special-"))
    try:
        ws = make_workspace(root / "ws")
        ckpt = ws / "checkpoints"
        make_special(ckpt / "step_690" / "metadata.json", "devzero")
        make_special(ckpt / "step_690" / "config.json", "fifo")
        make_special(ckpt / "step_600" / "hparams.yaml", "loop")
        make_special(ckpt / "pip-freeze.txt", "fifo")
        make_special(ws / "launch.sh", "devzero")
        make_special(ws / "patch_torch.py", "fifo")
        make_special(ws / "data" / "more.jsonl", "devzero")
        (root / "state").mkdir()
        env = dict(os.environ, XDG_STATE_HOME=str(root / "state"))

        def cap() -> None:  # an old probe reading /dev/zero fails here, not the machine
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))

        started = time.monotonic()
        proc = subprocess.run(
            [
                str(Path(sys.executable).with_name("dflash-doctor")),
                "facts",
                "--target",
                "local",
                "--workspace",
                str(ws),
                "--interpreter",
                sys.executable,
                "--json",
            ],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
            preexec_fn=cap,
        )
        wall = time.monotonic() - started
        assert proc.returncode == 0, proc.stderr[-3000:]
        facts = {f["probe"]: f for f in json.loads(proc.stdout)["facts"]}
        for name in ("checkpoints", "checksums", "script_patches", "dataset", "layout"):
            assert facts[name]["error"] is None, facts[name]
        value = facts["checkpoints"]["value"]
        assert value["step_numbers"] == [600, 690]
        new = value["steps"][-1]
        assert any(says(p, "devzero") for p in new["problems"]), new["problems"]
        assert facts["trainlog"]["error"] is None
        assert wall < 120, f"facts took {wall:.0f}s"
    finally:
        shutil.rmtree(root, ignore_errors=True)
