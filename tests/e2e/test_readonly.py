"""Read-only mode: only a registered command (here a probe bundle, rendered by the test as
a health check renders its own) reaches the target; a mutating command is refused before
it runs, on this machine and through a real sshd and pct hop."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lib.sshd import SSHServer, options
from tools.errors import ReadOnlyViolation, TransportError
from tools.sweep import SweepSpec, build_plan, render, sweep
from tools.transport import Target, open_target
from tools.transport.base import KeyedStdin
from tools.transport.readonly import ReadOnlyCommand, ReadOnlyTransport

SPEC = SweepSpec(interpreter=sys.executable)
ONLY = ["host"]  # the cheapest probe: these tests are about the guard, not the probes
REPO = Path(__file__).resolve().parents[2]


def probe_bundle(spec: SweepSpec, only: list[str] | None = None) -> ReadOnlyCommand:
    """The command ``sweep(…, spec, only)`` sends, registered by its content."""
    plan = build_plan(spec, only)
    names = ",".join(p.name for p in plan.runnable())
    return ReadOnlyCommand.of(plan.argv, render(plan), f"probe bundle ({names})")


def fingerprint(path: Path) -> tuple[bytes, int, int]:
    stat = path.stat()
    return path.read_bytes(), stat.st_mtime_ns, stat.st_ino


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(b"weights that must survive a health check\n")
    return path


def guard_for(target: Target, refused: list[tuple[tuple[str, ...], str]]) -> ReadOnlyTransport:
    return ReadOnlyTransport(
        target,
        [probe_bundle(SPEC, ONLY)],
        on_refused=lambda argv, digest: refused.append((argv, digest)),
    )


def assert_refuses_mutations(guard: ReadOnlyTransport, victim: Path) -> None:
    before = fingerprint(victim)
    created = victim.with_name("created-by-health")
    attempts: list[tuple[list[str], bytes | None]] = [
        (["rm", "-f", str(victim)], None),
        (["touch", str(created)], None),
        (["sh", "-c", f"echo x > {victim}"], None),
        # The registered argv itself, with other code on stdin: refused by its digest.
        ([sys.executable, "-B", "-"], f"import os; os.remove({str(victim)!r})".encode()),
    ]
    for argv, stdin in attempts:
        with pytest.raises(ReadOnlyViolation) as info:
            guard.run(argv, stdin=stdin, timeout=30)
        assert "nothing was run" in str(info.value)
    assert fingerprint(victim) == before
    assert not created.exists()


def test_a_mutating_command_cannot_run_locally(victim: Path) -> None:
    """rm, touch, a shell redirect and `python -` with deleting code are all refused;
    the file is byte-for-byte, mtime and inode the same, and nothing was created."""
    refused: list[tuple[tuple[str, ...], str]] = []
    guard = guard_for(open_target("local"), refused)
    assert_refuses_mutations(guard, victim)
    assert [argv[0] for argv, _ in refused] == ["rm", "touch", "sh", sys.executable]


def test_the_registered_bundle_runs(victim: Path) -> None:
    """The probe bundle it was built for goes through and answers."""
    guard = guard_for(open_target("local"), [])
    result = sweep(guard, SPEC, only=ONLY)
    assert result["host"].ok, result["host"].error
    value = result["host"].value
    assert isinstance(value, dict) and isinstance(value["cpu_count"], int)
    assert value["cpu_count"] >= 1


def test_a_replay_key_is_not_a_pass(victim: Path) -> None:
    """Stdin that carries the bundle's replay key but other content is refused: the guard
    checks what would run, never the name a caller gave it."""
    plan = build_plan(SPEC, ONLY)
    bundle = render(plan)
    guard = guard_for(open_target("local"), [])
    forged = KeyedStdin(f"import os; os.remove({str(victim)!r})".encode(), "plan-key")
    with pytest.raises(ReadOnlyViolation, match="is not the registered probe bundle"):
        guard.run(list(plan.argv), stdin=forged)
    assert victim.exists()
    # The genuine bundle, keyed the same way, is let through.
    assert guard.run(list(plan.argv), stdin=KeyedStdin(bundle, "plan-key"), timeout=60).ok


def test_refusal_names_what_is_allowed() -> None:
    """A refused command is an error naming the target and the command, and listing what is
    allowed there, with exit code 2."""
    guard = ReadOnlyTransport(open_target("local"), [probe_bundle(SPEC, ONLY)])
    with pytest.raises(ReadOnlyViolation) as info:
        guard.run(["rm", "-rf", "/nonexistent-dflash-doctor-test"])
    text = str(info.value)
    assert text.startswith("local: read-only mode refused 'rm -rf /nonexistent-dflash-doctor-test'")
    assert f"{sys.executable} -B - with the probe bundle (host)" in text
    assert isinstance(info.value, TransportError) and info.value.exit_code == 2


def test_nothing_registered_refuses_everything() -> None:
    """A guard with nothing registered refuses every command, even ``true``, and says
    nothing is allowed."""
    guard = ReadOnlyTransport(open_target("local"))
    with pytest.raises(ReadOnlyViolation, match=r"allowed: nothing"):
        guard.run(["true"])


def test_a_command_is_registered_by_its_content() -> None:
    """The digest is the sha256 of what would be sent: a replay key on the stdin changes
    nothing, other content is another command, and no stdin is its own case."""
    plan = build_plan(SPEC, ONLY)
    bundle = render(plan)
    command = ReadOnlyCommand.of(plan.argv, KeyedStdin(bundle, "plan-key"), "probe bundle")
    assert command.argv == (sys.executable, "-B", "-")
    assert command.stdin_digest == hashlib.sha256(bundle).hexdigest()
    other = ReadOnlyCommand.of(plan.argv, render(build_plan(SPEC)), "probe bundle")
    assert other.stdin_digest != command.stdin_digest  # another plan, another program
    assert ReadOnlyCommand.of(["true"], None, "no stdin").stdin_digest == ""


def test_the_guard_knows_nothing_of_sweeps() -> None:
    """Read-only mode is a transport wrapper: importing it loads no plan, spec or bundle
    code (a fresh interpreter, so nothing this test session imported counts)."""
    probe = (
        "import sys, tools.transport.readonly; "
        "print(sorted(m for m in sys.modules if m.startswith(('tools.sweep', 'tools.probes'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout


@pytest.fixture
def pct_target(sshd_server: SSHServer) -> Iterator[Target]:
    target = open_target(f"{sshd_server.uri}/pct:200", ssh=options(sshd_server))
    yield target
    target.close()


@pytest.mark.ssh
def test_a_mutating_command_cannot_run_through_ssh_and_pct(
    pct_target: Target, victim: Path, tmp_path: Path
) -> None:
    """Through the real sshd and the stand-in pct: the same command, unguarded, deletes a
    copy of the file (so the path is reachable and the command really mutates); guarded,
    it is refused and the file is untouched; the bundle still runs."""
    control = tmp_path / "control.pt"
    control.write_bytes(victim.read_bytes())
    assert pct_target.run(["rm", "-f", str(control)], timeout=30).rc == 0
    assert not control.exists()

    guard = guard_for(pct_target, [])
    assert_refuses_mutations(guard, victim)
    result = sweep(guard, SPEC, only=ONLY)
    assert result["host"].ok, result["host"].error
    value = result["host"].value
    assert isinstance(value, dict) and value["hostname"] == os.uname().nodename
