"""Record the transcripts shipped in ``transcripts/`` — real sessions, never hand-written.

Each scenario runs the reference trainer for real in ``ROOT/<name>`` (default
``/workspace``, the incident's path, so no path of the recording machine ends up in the
files), takes a snapshot of the good state, breaks the workspace the way the incident's
was broken, and records ``dflash-doctor diagnose`` on it. The recording machine's own
directories (this checkout, the home directory, the temporary directory) are redacted
from what the probes saw.

    PATH=.venv/bin:$PATH python examples/record_transcripts.py [--root /workspace] [--only NAME]

The target interpreter is ``python3`` from PATH (hence ``.venv/bin`` first). The
``incident-ssh`` scenario goes through a real sshd on 127.0.0.1 and the stand-in ``pct``
of the test suite, as the incident's engineers went through ``ssh`` and ``pct exec``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "transcripts"
FX_ERROR = "Detected that you are using FX to symbolically trace a dynamo-optimized function"
SMALL = ["--batch-size", "8", "--log-every", "5", "--intra-op-threads", "2"]


def run(*argv: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in argv], cwd=REPO, capture_output=True, text=True, env=env, timeout=900
    )


def trainer(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return run(sys.executable, "-m", "examples.dflash_trainer", *args)


def doctor(*args: str | Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # The console script installed beside this interpreter (agent.cli is a package).
    return run(Path(sys.executable).with_name("dflash-doctor"), "-q", *args, env=env)


def race_seed(ws: Path) -> str:
    sys.path.insert(0, str(REPO))
    from tests.lib.workspaces import race_seed as seed

    return seed(ws)


class Recorder:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = Path(tempfile.mkdtemp(prefix="record-state-"))
        self.env = {**os.environ, "XDG_STATE_HOME": str(self.state)}
        # The temporary directory too: torch's default inductor cache lives there, and the
        # processes probe may see other runs started from it.
        self.redact = [
            *("--redact-path", str(REPO)),
            *("--redact-path", str(Path.home())),
            *("--redact-path", tempfile.gettempdir()),
        ]

    def good(self, name: str) -> Path:
        ws = self.root / name
        shutil.rmtree(ws, ignore_errors=True)
        for args in (
            ("dataset", "--workspace", ws, "--size", "128", "--lengths", "64"),
            ("init", "--workspace", ws),
        ):
            assert trainer(*args).returncode == 0, args
        run_ = trainer("train", "--workspace", ws, *SMALL, "--steps", "40", "--save-every", "20")
        assert run_.returncode == 0, run_.stderr[-2000:]
        return ws

    def snapshot(self, ws: Path, name: str, target: str = "local", *extra: str) -> None:
        result = doctor(
            "snapshot",
            "--name",
            name,
            "--target",
            target,
            "--workspace",
            ws,
            "--interpreter",
            "python3",
            *extra,
            env=self.env,
        )
        assert result.returncode == 0, result.stderr

    def diagnose(
        self,
        ws: Path,
        name: str,
        baseline: str | None,
        target: str = "local",
        *extra: str,
        interpreter: str = "python3",
    ) -> None:
        args = [
            "diagnose",
            "--target",
            target,
            "--workspace",
            str(ws),
            "--interpreter",
            interpreter,
            "--format",
            "json",
            # Nobody is there to answer the menu after the verdict.
            "--non-interactive",
            *self.redact,
            *extra,
        ]
        if baseline:
            args += ["--baseline", baseline]
        result = doctor(*args, env=self.env)
        assert result.returncode == 0, result.stderr[-3000:]
        session = json.loads(result.stdout)["session"]
        source = self.state / "dflash-doctor" / "sessions" / session / "transcript.jsonl"
        OUT.mkdir(exist_ok=True)
        shutil.copyfile(source, OUT / f"{name}.jsonl")
        verdict = json.loads(result.stdout)["verdict"]
        print(f"recorded {name}: {verdict} -> transcripts/{name}.jsonl", flush=True)


def scenarios(rec: Recorder, only: set[str] | None) -> None:
    def want(name: str) -> bool:
        return only is None or name in only

    base = rec.good("base")
    for name, breaker in (
        ("healthy", None),
        ("script-changed", ("break", "script")),
        ("cache-wiped", ("break", "compile-cache")),
        ("checkpoint-truncated", ("break", "truncate-checkpoint")),
    ):
        if not want(name):
            continue
        ws = rec.root / name
        shutil.rmtree(ws, ignore_errors=True)
        shutil.copytree(base, ws)
        assert trainer("init", "--workspace", ws).returncode == 0
        extra: tuple[str, ...] = ()
        if name == "cache-wiped":
            # The trainer sets its cache directory in code, out of a sweep's sight: the
            # profile names it (a cache nothing names is no evidence when it is missing).
            profile = rec.root / f"{name}.toml"
            profile.write_text(
                f'[targets.trainer]\nuri = "local"\nworkspace = "{ws}"\n'
                f'extra_caches = ["{ws}/compile_cache"]\n'
            )
            extra = ("--config", str(profile))
        rec.snapshot(ws, name, "local", *extra)
        if breaker:
            assert trainer(*breaker, "--workspace", ws).returncode == 0
        rec.diagnose(ws, name, name, "local", *extra)
    if want("fx-race") or want("incident-ssh"):
        ws = rec.root / "fx-race"
        # The race is real: on some runs it ends a worker with torch's other symptom of
        # the shared tracing state (NameError: module is not installed as a submodule)
        # before any FX error is printed. The transcript is the FX error's, so a run that
        # did not print it is discarded and the scenario run again from the start.
        for attempt in range(1, 6):
            shutil.rmtree(ws, ignore_errors=True)
            shutil.copytree(base, ws)
            assert trainer("init", "--workspace", ws).returncode == 0
            rec.snapshot(ws, "fx-race")
            assert (
                trainer(
                    "dataset", "--workspace", ws, "--expand", "--add", "16", "--new-lengths", "80"
                ).returncode
                == 0
            )
            crashed = trainer(
                "train",
                "--workspace",
                ws,
                *SMALL,
                "--steps",
                "60",
                "--seed",
                race_seed(ws),
                "--emulate-torch211-race",
            )
            assert crashed.returncode != 0, "the emulated race did not fire"
            console = (ws / "checkpoints" / "train_stdout.log").read_text(errors="replace")
            if FX_ERROR in console:
                break
            print(f"fx-race attempt {attempt}: no FX-trace error in the console log; again")
        else:
            raise SystemExit("the race never printed torch's FX-trace error in 5 runs")
        if want("fx-race"):
            rec.diagnose(ws, "fx-race", "fx-race")
        if want("incident-ssh"):
            incident_ssh(rec, ws)
    if want("version-drift"):
        ws = rec.root / "version-drift"
        shutil.rmtree(ws, ignore_errors=True)
        shutil.copytree(base, ws)
        assert trainer("init", "--workspace", ws).returncode == 0
        # No snapshot: the baseline is derived from what the checkpoint recorded, and this
        # run records another torch version (an emulation: see the trainer's README).
        assert (
            trainer(
                "train",
                "--workspace",
                ws,
                *SMALL,
                "--steps",
                "45",
                "--resume",
                "--record-torch-version",
                "2.11.0+cu130",
            ).returncode
            == 0
        )
        rec.diagnose(ws, "version-drift", None)
    families(rec, base, want)


def families(rec: Recorder, base: Path, want: Callable[[str], bool]) -> None:
    """Shape churn, silent eager fallback, the ineffective monkeypatch: the same changes
    and runs as tests/lib/workspaces.py's scenarios for them (see its docstrings)."""
    sys.path.insert(0, str(REPO))
    from tests.lib.workspaces import CHURN_ADD, CHURN_LENGTHS

    def fresh(name: str) -> Path:
        ws = rec.root / name
        shutil.rmtree(ws, ignore_errors=True)
        shutil.copytree(base, ws)
        assert trainer("init", "--workspace", ws).returncode == 0
        rec.snapshot(ws, name)
        return ws

    def expand(ws: Path, add: int, lengths: str) -> None:
        args = ("--expand", "--add", str(add), "--new-lengths", lengths)
        assert trainer("dataset", "--workspace", ws, *args).returncode == 0

    if want("shape-churn"):
        ws = fresh("shape-churn")
        expand(ws, CHURN_ADD, CHURN_LENGTHS)
        rec.diagnose(ws, "shape-churn", "shape-churn")
    if want("eager-fallback"):
        ws = fresh("eager-fallback")
        expand(ws, CHURN_ADD, CHURN_LENGTHS)
        flags = ("--steps", "100", "--resume", "--recompile-limit", "1")
        done = trainer("train", "--workspace", ws, *SMALL, *flags)
        assert done.returncode == 0, done.stderr[-2000:]
        rec.diagnose(ws, "eager-fallback", "eager-fallback")
    if want("monkeypatch"):
        ws = fresh("monkeypatch")
        expand(ws, 16, "80")
        flags = ("--steps", "60", "--seed", race_seed(ws), "--emulate-torch211-race")
        crashed = trainer("train", "--workspace", ws, *SMALL, *flags, "--monkeypatch-fx-check")
        assert crashed.returncode != 0, "the emulated race did not fire"
        rec.diagnose(ws, "monkeypatch", "monkeypatch")


def incident_ssh(rec: Recorder, ws: Path) -> None:
    """The incident's path: ssh, then `pct exec 200 --`, through a real sshd."""
    sys.path.insert(0, str(REPO))
    from tests.lib.sshd import SSHServer, find_sshd

    binary = find_sshd()
    assert binary, "sshd is needed for the incident-ssh transcript"
    server = SSHServer(Path(tempfile.mkdtemp(prefix="record-sshd-")), binary)
    server.prepare()
    server.start()
    try:
        extra = ["--identity", str(server.identity), "--known-hosts", str(server.known_hosts)]
        target = f"{server.uri}/pct:200"
        # An SSH login has its own PATH: name the trainer's interpreter by a neutral path
        # (a link to this checkout's venv), as a profile would name /workspace/.venv.
        venv = rec.root / "venv"
        if not venv.is_symlink():
            venv.symlink_to(REPO / ".venv")
        rec.diagnose(
            ws, "incident-ssh", "fx-race", target, *extra, interpreter=f"{venv}/bin/python"
        )
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("/workspace"))
    parser.add_argument("--only", action="append")
    args = parser.parse_args()
    if (
        shutil.which("python3") is None
        or "torch" not in run("python3", "-c", "import torch; print('torch')").stdout
    ):
        sys.exit("python3 on PATH must have torch: run with PATH=.venv/bin:$PATH")
    args.root.mkdir(parents=True, exist_ok=True)
    scenarios(Recorder(args.root), set(args.only) if args.only else None)


if __name__ == "__main__":
    main()
