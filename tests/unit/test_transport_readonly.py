"""tools.transport.readonly: a transport wrapper that carries only commands registered as
read-only, each known by its exact argv and the sha256 of its stdin content. Anything else
is refused before it reaches the inner transport: the caller's ``on_refused`` hears of it,
an error event is logged, and ``ReadOnlyViolation`` says what was refused and why.

The guard in front of real targets (local, SSH, a container hop) is specified in
tests/e2e/test_readonly.py; here the inner transport is an in-memory stand-in, so each
refusal's sentence and each pass-through is exact."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import pytest
from structlog.testing import capture_logs

from tools.errors import ReadOnlyViolation
from tools.transport.base import CommandResult, KeyedStdin
from tools.transport.readonly import ReadOnlyCommand, ReadOnlyTransport

BUNDLE = b"print('probe')\n"
BUNDLE_SHA = hashlib.sha256(BUNDLE).hexdigest()
EMPTY_SHA = hashlib.sha256(b"").hexdigest()
OTHER = b"import os; os.remove('/ws/ckpt.pt')\n"
OTHER_SHA = hashlib.sha256(OTHER).hexdigest()
PYTHON = ("/venv/bin/python", "-B", "-")


class Recording:
    """An inner transport that records what reached it and answers rc 0."""

    name = "ssh://gpu1"

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[str, ...], bytes | None, float | None]] = []
        self.closed = False

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
    ) -> CommandResult:
        self.calls.append((tuple(argv), stdin, timeout))
        return CommandResult(tuple(argv), 0, b"answer", b"", 0.5, self.name)

    def close(self) -> None:
        self.closed = True


def _guard(
    inner: Recording, *allowed: ReadOnlyCommand
) -> tuple[ReadOnlyTransport, list[tuple[tuple[str, ...], str]]]:
    refused: list[tuple[tuple[str, ...], str]] = []
    guard = ReadOnlyTransport(
        inner, allowed, on_refused=lambda argv, sha: refused.append((argv, sha))
    )
    return guard, refused


def test_a_command_is_its_argv_and_its_stdins_digest() -> None:
    """``of`` keeps the argv as a tuple, the sha256 of the stdin's content (a replay key
    on it changes nothing) and the reason it is read-only; no stdin is the empty
    digest, unlike empty stdin."""
    command = ReadOnlyCommand.of(list(PYTHON), KeyedStdin(BUNDLE, "key"), "probe bundle")
    assert command == ReadOnlyCommand(PYTHON, BUNDLE_SHA, "probe bundle")
    assert command.key == (PYTHON, BUNDLE_SHA)
    assert ReadOnlyCommand.of(["true"], None, "t").stdin_digest == ""
    assert ReadOnlyCommand.of(["true"], b"", "t").stdin_digest == EMPTY_SHA


def test_a_registered_command_is_carried_as_given() -> None:
    """A registered command reaches the inner transport with its argv, stdin and
    timeout unchanged, and its answer comes back as the inner transport gave it."""
    inner = Recording()
    guard, refused = _guard(inner, ReadOnlyCommand.of(PYTHON, BUNDLE, "probe bundle"))
    result = guard.run(list(PYTHON), stdin=BUNDLE, timeout=30.0)
    assert inner.calls == [(PYTHON, BUNDLE, 30.0)]
    assert result == CommandResult(PYTHON, 0, b"answer", b"", 0.5, "ssh://gpu1")
    assert refused == []


def test_other_stdin_for_a_registered_argv_is_refused_naming_both_digests() -> None:
    """The registered argv with other content on stdin never runs: the error names the
    target, the command, both digests (first 12 hex digits) and the reason the
    registered one was allowed; ``on_refused`` got the full digest first."""
    inner = Recording()
    guard, refused = _guard(inner, ReadOnlyCommand.of(PYTHON, BUNDLE, "probe bundle (host)"))
    with pytest.raises(ReadOnlyViolation) as caught:
        guard.run(PYTHON, stdin=OTHER)
    assert str(caught.value) == (
        "ssh://gpu1: read-only mode refused '/venv/bin/python -B -': its stdin (sha256 "
        f"{OTHER_SHA[:12]}) is not the registered probe bundle (host) (sha256 "
        f"{BUNDLE_SHA[:12]}); nothing was run"
    )
    assert caught.value.target == "ssh://gpu1"
    assert refused == [(PYTHON, OTHER_SHA)]
    assert inner.calls == []


def test_no_stdin_for_a_registered_argv_says_none() -> None:
    """A registered argv sent without stdin is refused; its digest is shown as
    ``none``."""
    guard, refused = _guard(Recording(), ReadOnlyCommand.of(PYTHON, BUNDLE, "probe bundle"))
    with pytest.raises(ReadOnlyViolation) as caught:
        guard.run(PYTHON)
    assert str(caught.value) == (
        "ssh://gpu1: read-only mode refused '/venv/bin/python -B -': its stdin (sha256 "
        f"none) is not the registered probe bundle (sha256 {BUNDLE_SHA[:12]}); nothing was run"
    )
    assert refused == [(PYTHON, "")]


def test_empty_stdin_is_not_no_stdin() -> None:
    """A command registered without stdin is refused with an empty stdin: zero bytes
    are content, with a digest of their own."""
    inner = Recording()
    guard, refused = _guard(inner, ReadOnlyCommand.of(["uptime"], None, "uptime"))
    with pytest.raises(ReadOnlyViolation, match=rf"its stdin \(sha256 {EMPTY_SHA[:12]}\)"):
        guard.run(["uptime"], stdin=b"")
    assert refused == [(("uptime",), EMPTY_SHA)]
    assert guard.run(["uptime"]).rc == 0
    assert inner.calls == [(("uptime",), None, None)]


def test_an_unregistered_argv_is_refused_listing_what_is_allowed() -> None:
    """A command whose argv is not registered at all is refused; the error lists every
    registered command, quoted as a shell would read it, with its reason."""
    inner = Recording()
    guard, refused = _guard(
        inner,
        ReadOnlyCommand.of(PYTHON, BUNDLE, "probe bundle"),
        ReadOnlyCommand.of(["cat", "/ws/my log.txt"], None, "log read"),
    )
    with pytest.raises(ReadOnlyViolation) as caught:
        guard.run(["rm", "-f", "/ws/ckpt 1.pt"])
    assert str(caught.value) == (
        "ssh://gpu1: read-only mode refused \"rm -f '/ws/ckpt 1.pt'\": not registered as "
        "read-only (allowed: /venv/bin/python -B - with the probe bundle; "
        "cat '/ws/my log.txt' with the log read); nothing was run"
    )
    assert refused == [(("rm", "-f", "/ws/ckpt 1.pt"), "")]
    assert inner.calls == []


def test_a_refusal_is_logged_as_an_error_event() -> None:
    """Each refusal is an error event naming the target, the argv and the first 12 hex
    digits of the stdin digest."""
    guard = ReadOnlyTransport(Recording())
    with capture_logs() as logs, pytest.raises(ReadOnlyViolation, match=r"allowed: nothing"):
        guard.run(["touch", "/ws/x"], stdin=OTHER)
    assert logs == [
        {
            "event": "read_only_refused",
            "target": "ssh://gpu1",
            "argv": ["touch", "/ws/x"],
            "stdin": OTHER_SHA[:12],
            "log_level": "error",
        }
    ]


def test_a_refusal_raises_without_a_listener() -> None:
    """With no ``on_refused`` the refusal is the same exception."""
    guard = ReadOnlyTransport(Recording(), [ReadOnlyCommand.of(["true"], None, "true")])
    with pytest.raises(ReadOnlyViolation, match=r"refused 'false': not registered"):
        guard.run(["false"])


def test_the_guard_takes_its_inners_name_and_closes_it() -> None:
    """The guard is named as the transport it wraps, and closing it closes that one."""
    inner = Recording()
    guard = ReadOnlyTransport(inner)
    assert guard.name == "ssh://gpu1"
    guard.close()
    assert inner.closed is True


def test_registering_a_command_twice_keeps_it_once() -> None:
    """The same argv and stdin registered twice is one allowed command, with the reason
    given last."""
    first = ReadOnlyCommand.of(PYTHON, BUNDLE, "first")
    second = ReadOnlyCommand.of(PYTHON, BUNDLE, "second")
    other = ReadOnlyCommand.of(PYTHON, OTHER, "other")
    guard = ReadOnlyTransport(Recording(), [first, other, second])
    assert guard.allowed == [second, other]
