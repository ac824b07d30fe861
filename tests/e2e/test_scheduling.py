"""The scheduling examples (examples/scheduling/): each file parses as what it claims to
be, and the command it runs parses against the real CLI (the command exists and takes
every option given); systemd's own verifier accepts the units."""

from __future__ import annotations

import configparser
import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command

from agent.cli import app
from tests.lib.need import need

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scheduling"
SERVICE = EXAMPLES / "dflash-doctor-health.service"
TIMER = EXAMPLES / "dflash-doctor-health.timer"
CRON = EXAMPLES / "dflash-doctor-health.cron"
CRONJOB = EXAMPLES / "kubernetes-cronjob.yaml"
INSTALLED = "/opt/dflash-doctor/.venv/bin/dflash-doctor"


def parse_cli(argv: list[str]) -> tuple[str, dict[str, Any]]:
    """Parse ``argv`` (without the program) against the real CLI, running nothing:
    the subcommand's name and its parsed parameters; raises on an unknown command or
    option, or a value of the wrong type."""
    group = get_command(app)
    # Root options are flags only, so the first word that is not an option names the command.
    split = next(i for i, word in enumerate(argv) if not word.startswith("-"))
    # With the command's name included, as click sees it (an empty line shows the help).
    root = group.make_context("dflash-doctor", argv[: split + 1])
    name = argv[split]
    command = group.get_command(root, name)  # type: ignore[attr-defined]
    assert command is not None, f"no command {name!r} in the CLI"
    context = command.make_context(name, argv[split + 1 :], parent=root)
    return name, context.params


def after_program(words: list[str]) -> list[str]:
    """The arguments after the dflash-doctor program in a command line."""
    index = next(i for i, w in enumerate(words) if Path(w).name == "dflash-doctor")
    return words[index + 1 :]


def assert_nightly_health(argv: list[str]) -> dict[str, Any]:
    name, params = parse_cli(argv)
    assert name == "health"
    # click holds a repeated option's values as a tuple (typer < 0.29) or a list.
    assert params["all_targets"] and list(params["baseline"]) == ["good"]
    assert str(params["out"]) == "/var/lib/dflash-doctor/report"
    assert "-q" in argv[: argv.index("health")]  # quiet when healthy
    return params


def unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
    parser.read_string(path.read_text())
    return parser


def test_every_example_is_tested() -> None:
    """Every file in examples/scheduling/ is one this module checks, so none goes
    untested."""
    assert sorted(p.name for p in EXAMPLES.iterdir()) == sorted(
        p.name for p in (SERVICE, TIMER, CRON, CRONJOB)
    )


def test_systemd_service_runs_the_health_command() -> None:
    """The systemd service runs the installed health command as a oneshot, with its state
    and report in the StateDirectory, the only place ProtectSystem=strict leaves
    writable."""
    service = unit(SERVICE)
    assert service["Service"]["Type"] == "oneshot"
    # configparser keeps systemd's backslash continuations: join them back.
    exec_start = service["Service"]["ExecStart"].replace("\\\n", " ")
    words = shlex.split(exec_start)
    assert words[0] == INSTALLED
    params = assert_nightly_health(words[1:])
    assert params["target_timeout"] == 600 and params["jobs"] == 4
    # ProtectSystem=strict leaves only the StateDirectory writable: history and report there.
    state = service["Service"]["StateDirectory"]
    assert service["Service"]["Environment"] == "XDG_STATE_HOME=%S"
    assert str(params["out"]).startswith(f"/var/lib/{state}/")
    assert service["Service"]["ProtectSystem"] == "strict"


def test_systemd_timer_starts_the_service_nightly() -> None:
    """The systemd timer starts the service nightly at 02:30 and is installed under
    timers.target."""
    timer = unit(TIMER)
    assert timer["Timer"]["Unit"] == SERVICE.name
    assert timer["Timer"]["OnCalendar"] == "*-*-* 02:30:00"
    assert timer["Install"]["WantedBy"] == "timers.target"


def test_systemd_verifies_the_units(tmp_path: Path) -> None:
    """systemd-analyze verify, with ExecStart pointed at this checkout's console script
    (it checks that the program exists)."""
    analyze = shutil.which("systemd-analyze")
    need(analyze is not None, "systemd-analyze", "install systemd")
    assert analyze is not None
    script = str(Path(sys.executable).parent / "dflash-doctor")
    (tmp_path / SERVICE.name).write_text(SERVICE.read_text().replace(INSTALLED, script))
    (tmp_path / TIMER.name).write_text(TIMER.read_text())
    done = subprocess.run(
        [analyze, "verify", "--man=no", SERVICE.name, TIMER.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr


_RANGES = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]
_FIELD = re.compile(r"(\*|\d+(-\d+)?)(/\d+)?\Z")


def cron_schedule_ok(fields: list[str]) -> bool:
    """Five cron time fields: numbers, ranges, steps and lists, within their ranges."""
    if len(fields) != 5:
        return False
    for text, (low, high) in zip(fields, _RANGES, strict=True):
        for part in text.split(","):
            match = _FIELD.match(part)
            if match is None:
                return False
            numbers = [int(n) for n in re.findall(r"\d+", match.group(1))]
            if any(not low <= n <= high for n in numbers):
                return False
    return True


@pytest.mark.parametrize(
    ("schedule", "ok"),
    [
        ("30 2 * * *", True),
        ("*/15 0-6 1,15 * 1-5", True),
        ("60 2 * * *", False),
        ("30 2 * *", False),
        ("30 two * * *", False),
    ],
)
def test_cron_schedule_checker(schedule: str, ok: bool) -> None:
    """The cron schedule checker accepts valid five-field schedules and rejects an
    out-of-range value, a missing field and a word."""
    assert cron_schedule_ok(schedule.split()) is ok


def test_cron_line_is_a_cron_d_entry_running_the_health_command() -> None:
    """The cron example is one /etc/cron.d entry naming its user, running the health command
    under ``flock`` so nights do not overlap, with the state directory and MAILTO set."""
    jobs = []
    env = {}
    for line in CRON.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if re.match(r"[A-Z_]+=", line):
            key, _, value = line.partition("=")
            env[key] = value
            continue
        jobs.append(line)
    assert len(jobs) == 1
    words = jobs[0].split(None, 6)
    assert cron_schedule_ok(words[:5]), words[:5]
    assert words[5] == "dflash-doctor"  # /etc/cron.d lines name the user
    command = shlex.split(words[6])
    assert command[:3] == ["flock", "-n", "/var/lib/dflash-doctor/health.lock"]
    assert command[3] == INSTALLED
    assert_nightly_health(after_program(command))
    assert env["XDG_STATE_HOME"] == "/var/lib" and "MAILTO" in env


def test_kubernetes_cronjob_runs_the_health_command() -> None:
    """The Kubernetes CronJob runs the health command without overlap or retries, with its
    history and report on the persistent volume and its config and keys on mounted
    volumes."""
    need(importlib.util.find_spec("yaml") is not None, "PyYAML", "pip install pyyaml")
    import yaml  # type: ignore[import-untyped, unused-ignore]

    doc = yaml.safe_load(CRONJOB.read_text())
    assert (doc["apiVersion"], doc["kind"]) == ("batch/v1", "CronJob")
    spec = doc["spec"]
    assert cron_schedule_ok(spec["schedule"].split())
    assert spec["concurrencyPolicy"] == "Forbid"
    job = spec["jobTemplate"]["spec"]
    assert job["backoffLimit"] == 0
    pod = job["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    assert container["command"] == ["dflash-doctor"]
    assert all(isinstance(a, str) for a in container["args"])
    params = assert_nightly_health(container["args"])
    assert {"name": "XDG_STATE_HOME", "value": "/var/lib"} in container["env"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert set(mounts) == {v["name"] for v in pod["volumes"]}
    # The history and the report live on the persistent volume, not in the pod.
    state = next(v for v in pod["volumes"] if "persistentVolumeClaim" in v)["name"]
    assert str(params["out"]).startswith(mounts[state] + "/")
    for option in ("config", "identity", "known_hosts"):
        assert any(str(params[option]).startswith(m) for m in mounts.values()), option


def test_parse_cli_rejects_what_the_cli_would() -> None:
    """The helper is not a rubber stamp."""
    with pytest.raises(Exception, match="No such option"):
        parse_cli(["health", "--bogus"])
    with pytest.raises(AssertionError, match="no command 'healthz'"):
        parse_cli(["healthz"])
    with pytest.raises(Exception, match="not a valid int"):
        parse_cli(["health", "--jobs", "four"])
