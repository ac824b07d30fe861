"""Read-only mode: only the registered probe bundle reaches the target; a mutating
command is refused before it runs, on this machine and through a real sshd and pct hop."""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.sshd import SSHServer
from tests.test_ssh import options
from tools.errors import ReadOnlyViolation, TransportError
from tools.sweep import Plan, SweepSpec, build_plan, render, sweep
from tools.transport import Target, open_target, readonly
from tools.transport.base import KeyedStdin
from tools.transport.readonly import ReadOnlyTransport, probe_bundle, render_bundle

SPEC = SweepSpec(interpreter=sys.executable)
ONLY = ["host"]  # the cheapest probe: these tests are about the guard, not the probes


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
    guard = ReadOnlyTransport(open_target("local"), [probe_bundle(SPEC, ONLY)])
    with pytest.raises(ReadOnlyViolation) as info:
        guard.run(["rm", "-rf", "/nonexistent-dflash-doctor-test"])
    text = str(info.value)
    assert text.startswith("local: read-only mode refused 'rm -rf /nonexistent-dflash-doctor-test'")
    assert f"{sys.executable} -B - with the probe bundle (host)" in text
    assert isinstance(info.value, TransportError) and info.value.exit_code == 2


def test_nothing_registered_refuses_everything() -> None:
    guard = ReadOnlyTransport(open_target("local"))
    with pytest.raises(ReadOnlyViolation, match=r"allowed: nothing"):
        guard.run(["true"])


def test_the_bundle_digest_is_of_its_content() -> None:
    command = probe_bundle(SPEC, ONLY)
    assert command.argv == (sys.executable, "-B", "-")
    expected = hashlib.sha256(render(build_plan(SPEC, ONLY))).hexdigest()
    assert command.stdin_digest == expected
    assert probe_bundle(SPEC).stdin_digest != expected  # another plan, another program


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


def test_bundles_render_one_thread_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """CPython 3.11's ast.parse can fail when two threads parse at once (gh-106905), and
    rendering a bundle parses the probes' sources: health renders one thread at a time."""
    lock = threading.Lock()
    inside, peak = 0, 0
    real = render  # what readonly calls: tools.sweep.bundle.render

    def counting(plan: Plan) -> bytes:
        nonlocal inside, peak
        with lock:
            inside += 1
            peak = max(peak, inside)
        time.sleep(0.02)
        try:
            return real(plan)
        finally:
            with lock:
                inside -= 1

    monkeypatch.setattr(readonly, "render", counting)
    plan = build_plan(SPEC, ONLY)
    with ThreadPoolExecutor(4) as pool:
        bundles = list(pool.map(lambda _: render_bundle(plan), range(8)))
    assert peak == 1
    assert len(set(bundles)) == 1
