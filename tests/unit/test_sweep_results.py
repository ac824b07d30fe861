"""tools.sweep.results: a sweep's typed results. One ``ProbeResult`` per planned probe,
found by name; a sweep is ok when every probe either answered or was skipped."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tools.sweep.results import ProbeError, ProbeResult, SweepResult


def _result(probe: str, ok: bool = True, kind: str | None = None) -> ProbeResult:
    error = None if kind is None else ProbeError(kind=kind, message=f"{probe} said no")
    return ProbeResult(
        probe=probe, target="gpu-box", argv=("python3", "-B", "-"), rc=0, ok=ok, error=error
    )


def _sweep(*results: ProbeResult) -> SweepResult:
    return SweepResult(
        target="gpu-box", argv=("python3", "-B", "-"), rc=0, duration=1.5, results=results
    )


def test_a_probe_error_reads_as_its_kind_and_message() -> None:
    """An error renders as ``kind: message``; the path it may name is not repeated."""
    error = ProbeError(kind="not_found", message="/ws/x: No such file", path="/ws/x")
    assert str(error) == "not_found: /ws/x: No such file"


def test_error_text_is_the_rendered_error_or_none() -> None:
    """A result's error text is its error rendered, and None when it has no error."""
    assert _result("gpus", ok=False, kind="timeout").error_text == "timeout: gpus said no"
    assert _result("gpus").error_text is None


def test_results_are_found_by_probe_name() -> None:
    """Indexing by a probe's name gives its result; an absent name is a KeyError naming it,
    and ``get`` gives None for it instead."""
    host, gpus = _result("host"), _result("gpus")
    sweep = _sweep(host, gpus)
    assert sweep["gpus"] is gpus and sweep.get("host") is host
    assert sweep.get("layout") is None
    with pytest.raises(KeyError, match="layout"):
        sweep["layout"]


def test_names_are_in_result_order() -> None:
    """``names`` lists the probes in the order of the results."""
    assert _sweep(_result("host"), _result("pyenv"), _result("gpus")).names == [
        "host",
        "pyenv",
        "gpus",
    ]


@pytest.mark.parametrize(
    ("results", "ok"),
    [
        ((), True),
        ((("host", True, None), ("gpus", True, None)), True),
        ((("host", True, None), ("trainlog", False, "skipped")), True),
        ((("host", True, None), ("gpus", False, "timeout")), False),
        ((("host", False, None),), False),
        ((("trainlog", False, "skipped"), ("layout", False, "not_found")), False),
    ],
    ids=[
        "no-probes",
        "all-answered",
        "a-skip-is-not-a-failure",
        "one-timed-out",
        "failed-without-an-error",
        "skip-and-failure",
    ],
)
def test_a_sweep_is_ok_when_every_probe_answered_or_was_skipped(
    results: tuple[tuple[str, bool, str | None], ...], ok: bool
) -> None:
    """A probe that was skipped (nothing to look at) does not make a sweep fail; any other
    probe that did not answer does."""
    assert _sweep(*(_result(p, o, k) for p, o, k in results)).ok is ok


def test_failed_lists_every_result_not_ok_skipped_ones_too() -> None:
    """``failed`` is every result that is not ok, in order, including skipped ones (which
    the sweep's ``ok`` forgives)."""
    skipped, timed_out = _result("trainlog", False, "skipped"), _result("gpus", False, "timeout")
    sweep = _sweep(_result("host"), skipped, timed_out)
    assert sweep.failed() == [skipped, timed_out]
    assert sweep.ok is False


def test_results_are_frozen_and_closed() -> None:
    """A result cannot be changed after the fact nor carry a field the ledger does not
    know."""
    result = _result("host")
    with pytest.raises(ValidationError, match="frozen"):
        result.ok = False  # type: ignore[misc]
    with pytest.raises(ValidationError, match="extra"):
        ProbeError(kind="error", message="m", hint="x")  # type: ignore[call-arg]
