"""A health check writes nothing on the target: no bytecode in the trainer's virtualenv,
no compile cache directory, nothing in HOME, the temporary directory or the working
directory, whatever the environment of cron or systemd leaves unset.

The target is a copy of the reference trainer's good workspace (a real run,
tests/lib/workspaces.py) with its own virtualenv, ``WS/.venv``, made by ``python -m venv``. It
imports torch from the project's environment (a ``.pth`` line, the way one environment is
layered on another), and holds a start-up hook of the kind an editable install leaves (a
``.pth`` import line and its module) with no bytecode yet, as in an image built with
``PYTHONDONTWRITEBYTECODE=1``: every Python started there imports it. The profile turns
``torch_import`` on, so the bundle imports torch and ``torch._dynamo`` on the target.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import stat
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lib import oracle
from tests.lib.need import need
from tests.lib.workspaces import clone
from tools.probes import _runner
from tools.probes._common import Context
from tools.transcript import read_transcript

CLI = str(Path(sys.executable).parent / "dflash-doctor")

# What would send the target's writes elsewhere than the trees compared here, or stop
# them: a scheduler's environment has none of them.
UNSET = (
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONPYCACHEPREFIX",
    "PYTHONUSERBASE",
    "PYTHONSTARTUP",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "TORCHINDUCTOR_CACHE_DIR",
    "TRITON_CACHE_DIR",
    "TRITON_HOME",
    "MPLCONFIGDIR",
)

HOOK = "__editable___trainer_finder"

Entry = tuple[Any, ...]


def entry(path: Path, with_dir_mtime: bool) -> Entry:
    st = path.lstat()
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(path))
    if stat.S_ISDIR(st.st_mode):
        # A directory's mtime changes when an entry is made in it, even one deleted since.
        return ("dir", mode, st.st_mtime_ns if with_dir_mtime else None)
    if stat.S_ISREG(st.st_mode):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        return ("file", mode, st.st_size, st.st_mtime_ns, digest)
    return ("other", stat.S_IFMT(st.st_mode), mode)


def tree(root: Path, *, root_mtime: bool = True) -> dict[str, Entry]:
    """Every entry under ``root`` (``root`` itself as "."), symlinks not followed."""
    found = {".": entry(root, root_mtime)}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            found[str(path.relative_to(root))] = entry(path, True)
    return found


def pycaches(root: Path) -> dict[str, Entry]:
    """The ``__pycache__`` directories under ``root`` and their files. Python writes a
    .pyc by renaming a new file over the old one, so size and mtime show a rewrite; no
    digest: these are the shared environments' tens of thousands of files."""
    found: dict[str, Entry] = {}
    for dirpath, _dirnames, filenames in os.walk(root):
        if os.path.basename(dirpath) != "__pycache__":
            continue
        found[dirpath] = ("dir",)
        for name in filenames:
            st = os.lstat(os.path.join(dirpath, name))
            found[os.path.join(dirpath, name)] = ("file", st.st_size, st.st_mtime_ns)
    return found


def diff(before: dict[str, Entry], after: dict[str, Entry]) -> list[str]:
    lines = [f"new      {k}: {after[k]}" for k in sorted(after.keys() - before.keys())]
    lines += [f"gone     {k}: {before[k]}" for k in sorted(before.keys() - after.keys())]
    lines += [
        f"changed  {k}: {before[k]} -> {after[k]}"
        for k in sorted(before.keys() & after.keys())
        if before[k] != after[k]
    ]
    return lines


class Target:
    """The trees a health run on this machine could write in, and how to take them."""

    def __init__(self, ws: Path, home: Path, tmp: Path, shared: list[Path]) -> None:
        self.ws, self.home, self.tmp, self.shared = ws, home, tmp, shared

    def snapshot(self) -> dict[str, Entry]:
        # The temporary directory's own mtime is left out: the caches probe asks
        # tempfile.gettempdir() for torch's default cache directory, the same way torch
        # finds it, and that creates and deletes a test file there (nothing is left).
        trees = {
            "workspace": tree(self.ws),
            "home": tree(self.home),
            "tmp": tree(self.tmp, root_mtime=False),
        }
        out = {f"{where}/{k}": v for where, t in trees.items() for k, v in t.items()}
        for root in self.shared:
            out.update(pycaches(root))
        return out

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in UNSET}
        return {**env, "HOME": str(self.home), "TMPDIR": str(self.tmp)}


def make_venv(ws: Path) -> Path:
    """``WS/.venv`` importing torch from the project's environment, with a start-up hook
    that has no bytecode yet."""
    spec = importlib.util.find_spec("torch")
    assert spec is not None and spec.origin is not None
    packages = Path(spec.origin).parents[1]
    venv = ws / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-B", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "layered_env.pth").write_text(f"{packages}\n")
    (Path(site) / "__editable__.trainer.pth").write_text(f"import {HOOK}; {HOOK}.install()\n")
    (Path(site) / f"{HOOK}.py").write_text("def install():\n    pass\n")
    return python


def sys_path(python: Path, ws: Path) -> list[Path]:
    """The target interpreter's import directories outside the workspace."""
    out = subprocess.run(
        [python, "-B", "-c", "import json, sys; print(json.dumps(sys.path))"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    ).stdout
    dirs = sorted({Path(p).resolve() for p in json.loads(out) if p and Path(p).is_dir()})
    dirs = [d for d in dirs if not d.is_relative_to(ws.resolve())]
    return [d for d in dirs if not any(d != o and d.is_relative_to(o) for o in dirs)]


def profile(path: Path, ws: Path, python: Path | None) -> Path:
    line = f'interpreter = "{python}"\n' if python else ""
    common = f'uri = "local"\nworkspace = "{ws}"\n{line}'
    path.write_text(
        f"[targets.here]\n{common}torch_import = true\n\n[targets.base]\n{common}"
        "torch_import = false\n"
    )
    return path


@pytest.mark.slow
@pytest.mark.torch
@pytest.mark.parametrize("chosen", ["discovered", "configured"])
def test_a_health_run_leaves_the_target_as_it_was(
    chosen: str, good_workspace: Path, tmp_path: Path
) -> None:
    """`dflash-doctor health` with PYTHONDONTWRITEBYTECODE unset changes nothing in the
    workspace and its virtualenv, the environments it imports from, HOME, TMPDIR or the
    working directory; whether the preamble chose the workspace's virtualenv or the
    profile named it."""
    ws = clone(good_workspace, tmp_path / "ws")
    python = make_venv(ws)
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    config = profile(tmp_path / "doctor.toml", ws, python if chosen == "configured" else None)
    target = Target(ws, home, tmp, sys_path(python, ws))
    # The baseline, taken without importing torch and with bytecode off, writes nothing
    # either; it comes first anyway, so that the health run alone is compared.
    baseline = subprocess.run(
        [CLI, "-q", "snapshot", "--name", "good", "--target", "base", "--config", str(config)],
        capture_output=True,
        timeout=300,
        cwd=home,
        env={**target.env(), "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert baseline.returncode == 0, baseline.stderr.decode()

    health = [CLI, "-q", "health", "--format", "json", "--target", "here", "--baseline", "good"]
    before = target.snapshot()
    done = subprocess.run(
        [*health, "--config", str(config)],
        capture_output=True,
        timeout=300,
        cwd=home,
        env=target.env(),
    )
    after = target.snapshot()

    changes = diff(before, after)
    assert not changes, "the health run wrote on the target:\n" + "\n".join(changes[:60])
    # It did run the bundle, and torch was imported by the target's own Python.
    assert oracle.check_health(json.loads(done.stdout)) == []
    (checked,) = json.loads(done.stdout)["targets"]
    _header, events = read_transcript(Path(checked["transcript"]))
    facts = {
        e["fact"]["probe"]: e["fact"]
        for e in events
        if e["type"] == "fact" and not e.get("baseline")
    }
    assert facts["torch_runtime"]["error"] is None, facts["torch_runtime"]
    assert "dynamo_config" in facts["torch_runtime"]["value"]
    assert facts["interpreter"]["value"]["executable"] == str(python)
    assert facts["interpreter"]["value"]["discovered"] is (chosen == "discovered")


@pytest.fixture
def probe_package() -> Iterator[str]:
    """One probe module installed the way the bundle's bootstrap installs them."""
    package = "_test_no_core_pkg"

    def limit(params: dict[str, Any], ctx: Context) -> Any:
        import resource

        return resource.getrlimit(resource.RLIMIT_CORE)[0]

    root = types.ModuleType(package)
    root.__path__ = []
    sys.modules[package] = root
    mod = types.ModuleType(f"{package}.probes.limit")
    mod.collect = limit  # type: ignore[attr-defined]
    sys.modules[mod.__name__] = mod
    try:
        yield package
    finally:
        for key in [k for k in sys.modules if k.startswith(package)]:
            del sys.modules[key]


def test_a_probe_that_crashes_leaves_no_core_file(
    probe_package: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """A probe's forked child has a soft core-file limit of 0, whatever the bundle's
    process was given, so a crash is a result and no core file in the working directory."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    raised = 1 << 20 if hard == resource.RLIM_INFINITY else hard
    need(raised > 0, "a core-file limit above 0", "the hard limit is 0 here")
    resource.setrlimit(resource.RLIMIT_CORE, (raised, hard))
    try:
        plan = {
            "probes": [{"name": "limit", "module": "probes.limit", "params": {}, "timeout": 10}],
            "parallel": 1,
        }
        _runner.main(plan, probe_package)
    finally:
        resource.setrlimit(resource.RLIMIT_CORE, (soft, hard))
    out = capfd.readouterr().out
    (line,) = [ln for ln in out.splitlines() if ln.startswith(_runner.SENTINEL)]
    (result,) = json.loads(line[len(_runner.SENTINEL) :])["results"]
    assert result["ok"] and result["value"] == 0, result
