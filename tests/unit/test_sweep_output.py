"""tools.sweep.output: the bundle's answer read back. The last stdout line that starts with
the sentinel is the bundle's JSON document; each planned probe becomes one typed result:
skipped (nothing to look at), failed with the whole bundle (no document, another format,
a bundle that could not start), or the probe's own result, its value checked against the
type the probe declares. The command's digests and the target travel on every result."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from tools.interpreter import PREAMBLE
from tools.sweep.output import parse_output
from tools.sweep.plan import Plan, build_plan
from tools.sweep.results import ProbeError, SweepResult
from tools.sweep.spec import SweepSpec
from tools.transport.base import CommandResult

SENTINEL = b"@@dflash-doctor-bundle@@ "
TRAINLOG_SKIPPED = ProbeError(kind="skipped", message="no train log or workspace configured")


def _plan(*, discover: bool = False) -> Plan:
    """``host`` runs (it needs nothing configured); ``trainlog`` is skipped (no log, no
    workspace)."""
    return build_plan(SweepSpec(discover_interpreter=discover), only=["host", "trainlog"])


def _answer(stdout: bytes, *, rc: int = 0, stderr: bytes = b"") -> CommandResult:
    return CommandResult(("python3", "-B", "-"), rc, stdout, stderr, 1.5, "ssh://gpu1", "ab" * 32)


def _doc(results: list[Any], **extra: Any) -> bytes:
    return SENTINEL + json.dumps({"format": 1, "results": results, **extra}).encode() + b"\n"


def _raw(**fields: Any) -> dict[str, Any]:
    """One probe's entry in the document: the host probe, ok, with an empty value."""
    return {"probe": "host", "ok": True, "value": {}, "duration": 0.25, **fields}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    ("stdout", "rc", "stderr", "discover", "message"),
    [
        (
            b"",
            127,
            b"sh: python3: not found\n",
            False,
            "interpreter 'python3' not found on the target (exit 127)",
        ),
        (
            b"",
            127,
            b"",
            True,
            "no Python found on the target: no trainer process, workspace environment, "
            "launch file or PATH entry offered one, and 'python3' is not there (exit 127)",
        ),
        (
            b"",
            1,
            b"Traceback (most recent call last):\nSyntaxError: bad\n\n",
            False,
            "the bundle printed no result (exit 1): "
            "Traceback (most recent call last):\nSyntaxError: bad",
        ),
        (b"  Welcome!\n", 0, b"", False, "the bundle printed no result (exit 0): Welcome!"),
        (b"", 2, b"", False, "the bundle printed no result (exit 2): no output"),
        (
            SENTINEL + b"{not json\n",
            0,
            b"",
            False,
            "the bundle printed no result (exit 0): @@dflash-doctor-bundle@@ {not json",
        ),
        (
            SENTINEL + b"[1, 2]\n",
            0,
            b"",
            False,
            "the bundle printed no result (exit 0): @@dflash-doctor-bundle@@ [1, 2]",
        ),
        (
            SENTINEL + b'{"format": 2, "results": []}\n',
            0,
            b"",
            False,
            "bundle answered in format 2, expected 1",
        ),
        (
            SENTINEL + b'{"results": []}\n',
            0,
            b"",
            False,
            "bundle answered in format None, expected 1",
        ),
        (
            SENTINEL + b'{"format": 1, "fatal": "python 3.6 is older than 3.8"}\n',
            1,
            b"",
            False,
            "the bundle could not start: python 3.6 is older than 3.8",
        ),
    ],
    ids=[
        "interpreter-missing",
        "discovery-found-nothing",
        "no-document-stderr-says-why",
        "no-document-stdout-says-why",
        "no-output-at-all",
        "document-not-json",
        "document-not-an-object",
        "another-format",
        "no-format",
        "bundle-could-not-start",
    ],
)
def test_a_bundle_failure_is_every_runnable_probes_error(
    stdout: bytes, rc: int, stderr: bytes, discover: bool, message: str
) -> None:
    """When the bundle gives no usable document, every probe that was sent fails as
    ``bundle_failed`` with one sentence saying why (the exit status, or the tail of what
    it printed); a skipped probe stays skipped, never sent (rc None)."""
    out = parse_output(_answer(stdout, rc=rc, stderr=stderr), _plan(discover=discover))
    host, trainlog = out["host"], out["trainlog"]
    assert (host.ok, host.rc, host.error) == (
        False,
        rc,
        ProbeError(kind="bundle_failed", message=message),
    )
    assert (trainlog.ok, trainlog.rc, trainlog.error) == (False, None, TRAINLOG_SKIPPED)


def test_the_last_sentinel_line_is_the_document() -> None:
    """A banner, an earlier document and a line that only contains the sentinel further
    in are passed over: the last line that starts with it is read."""
    stale = _doc([_raw(ok=False, error={"kind": "error", "message": "stale"})])
    last = _doc([_raw(value={"hostname": "gpu1"})])
    stdout = b"Welcome!\n" + stale + last + b"echo " + SENTINEL + b'{"format": 9}\n'
    host = parse_output(_answer(stdout), _plan())["host"]
    assert (host.ok, host.value, host.error) == (True, {"hostname": "gpu1"}, None)


def test_a_probes_result_carries_its_value_duration_and_commands() -> None:
    """An ok result keeps its value and duration; the commands it ran become tuples of
    strings (an entry that is no object is dropped, a number becomes its text)."""
    raw = _raw(
        value={"hostname": "gpu1", "uid": 1000},
        duration=0.5,
        commands=[{"argv": ["nvidia-smi", "-L"]}, "junk", {"argv": ["df", 1]}, {}],
    )
    host = parse_output(_answer(_doc([raw])), _plan())["host"]
    assert host.ok is True
    assert host.value == {"hostname": "gpu1", "uid": 1000}
    assert host.duration == 0.5
    assert host.commands == (("nvidia-smi", "-L"), ("df", "1"), ())
    assert host.params == {"paths": []}


def test_a_probes_error_makes_it_failed_whatever_its_ok_says() -> None:
    """An ``error`` object becomes the result's error (kind, message, path) and the
    result is not ok, even where the probe also said ``ok``."""
    raw = _raw(error={"kind": "permission", "message": "denied", "path": "/ws/x"})
    host = parse_output(_answer(_doc([raw])), _plan())["host"]
    assert host.ok is False
    assert host.error == ProbeError(kind="permission", message="denied", path="/ws/x")


def test_an_error_without_kind_or_message_is_a_plain_error() -> None:
    """An error object naming neither kind nor message is kind ``error`` with an empty
    message, never dropped."""
    host = parse_output(_answer(_doc([_raw(ok=False, error={})])), _plan())["host"]
    assert (host.ok, host.error) == (False, ProbeError(kind="error", message=""))


def test_a_missing_or_odd_entry_is_a_malformed_result() -> None:
    """A probe the document has no entry for (an entry that is no object, or names no
    probe, does not count) is malformed: no result in the answer."""
    stdout = _doc(["host", {"ok": True}, _raw(probe="gpus")])
    host = parse_output(_answer(stdout), _plan())["host"]
    assert (host.ok, host.error) == (
        False,
        ProbeError(kind="malformed", message="no result in the bundle's answer"),
    )


def test_a_value_not_of_the_declared_type_is_malformed_naming_the_fields() -> None:
    """An ok value is checked against the probe's declared type; each field that does
    not fit is named with what was wrong, and the value is kept for the record."""
    value = {"hostname": 5, "uid": "root"}
    host = parse_output(_answer(_doc([_raw(value=value)])), _plan())["host"]
    assert host.ok is False
    assert host.value == value
    assert host.error == ProbeError(
        kind="malformed",
        message="value not as declared: hostname: Input should be a valid string; "
        "uid: Input should be a valid integer, unable to parse string as an integer",
    )


def test_a_failed_probes_value_is_not_checked() -> None:
    """A probe that failed is reported with its own error, not as malformed, whatever
    value it left."""
    raw = _raw(ok=False, value="partial", error={"kind": "timeout", "message": "15s"})
    host = parse_output(_answer(_doc([raw])), _plan())["host"]
    assert host.error == ProbeError(kind="timeout", message="15s")


def test_every_result_carries_the_command_and_the_sweep_its_round_trip() -> None:
    """Each result and the sweep carry the target, the argv as facts show it, the exit
    status and the digests of stdin, stdout and stderr; the sweep adds the round trip's
    duration, the bundle's own duration, its Python and the tail of stderr."""
    stdout = _doc([_raw()], duration=0.75, python={"version": "3.11.7"})
    stderr = b"x" * 10 + b"y" * 2000
    answer = _answer(stdout, stderr=stderr)
    out = parse_output(answer, _plan())
    assert isinstance(out, SweepResult)
    common = ("ssh://gpu1", ("python3", "-B", "-"), 0, "ab" * 32, _sha(stdout), _sha(stderr))
    for result in (out, out["host"]):
        seen = (
            result.target,
            result.argv,
            result.rc,
            result.stdin_digest,
            result.stdout_digest,
            result.stderr_digest,
        )
        assert seen == common
    assert (out.duration, out.bundle_duration, out.python) == (1.5, 0.75, {"version": "3.11.7"})
    assert out.stderr_tail == "y" * 2000
    assert [r.probe for r in out.results] == ["host", "trainlog"]


def test_a_discovery_command_is_recorded_by_the_preambles_digest() -> None:
    """The argv on the results is the one facts show: the discovery preamble's text is
    named by its digest, not copied into every result."""
    plan = _plan(discover=True)
    assert plan.discovery is not None
    answer = CommandResult(plan.discovery, 0, _doc([_raw()]), b"", 0.1, "local")
    host = parse_output(answer, plan)["host"]
    digest = _sha(PREAMBLE.encode())[:12]
    assert host.argv == (
        "sh",
        "-c",
        f"<dflash-doctor-find-python preamble, sha256 {digest}>",
        *plan.discovery[3:],
    )


def test_undecodable_stderr_is_kept_with_replacement_characters() -> None:
    """The stderr tail is text: bytes that are not UTF-8 become U+FFFD, never an error."""
    out = parse_output(_answer(_doc([_raw()]), stderr=b"bad \xff byte"), _plan())
    assert out.stderr_tail == "bad \ufffd byte"
