"""The console's progress bars (tools/parsers/_bars.py), read from what the real tqdm
writes, and held equal to the independent oracle (tests/lib/oracle_bars.py)."""

from __future__ import annotations

import importlib
import io
import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.lib import oracle_bars
from tests.lib.need import need
from tools.parsers import stdoutlog


def _tqdm() -> Any:
    """The real tqdm (it comes with transformers, the foreign extra `make` installs)."""
    try:
        return importlib.import_module("tqdm").tqdm
    except ImportError:
        need(False, "tqdm", "install the foreign extra: pip install -e '.[foreign]'")
        raise


tqdm = _tqdm()


def scan(path: Path) -> dict[str, Any]:
    with open(path, "rb", buffering=0) as f:
        progress: dict[str, Any] = stdoutlog.scan(f)["progress"]
    return progress


def chosen(progress: dict[str, Any]) -> dict[str, Any]:
    family: dict[str, Any] = progress["families"][progress["chosen"]]
    return family


def meter(n: int, total: int | None, elapsed: float, rate: float | None, **kw: Any) -> str:
    """One update as tqdm itself formats it."""
    return str(tqdm.format_meter(n, total, elapsed, ncols=None, rate=rate, **kw))


def test_a_bar_tqdm_wrote_is_read_with_its_own_rates(tmp_path: Path) -> None:
    """Epochs of a bar reset the count and the clock (Lightning redraws one bar per
    epoch, its description naming it); log lines between updates; a last epoch slower.
    The rates read are tqdm's digits, the epochs are bars, and the oracle agrees."""
    out = io.StringIO()
    for epoch, rate in enumerate((40.0, 40.0, 10.0)):
        for n in range(0, 101, 4):
            out.write("\r" + meter(n, 100, n / rate, rate if n else None, prefix=f"Epoch {epoch}"))
            if n % 20 == 0:
                out.write(f"\n{{'loss': {n}}}\n")
        out.write("\n")
    log = tmp_path / "train.log"
    log.write_text(out.getvalue())
    progress = scan(log)
    family = chosen(progress)
    assert (family["desc"], family["total"], family["unit"]) == ("Epoch #", "100", "it/s")
    assert family["bars"] == 3 and family["with_rate"] == 3 * 25
    speeds = [w["speed"] for w in family["windows"]]
    assert set(speeds) == {40.0, 10.0} and speeds[-1] == 10.0
    assert [w["bar_start"] for w in family["windows"]].count(True) == 3
    assert oracle_bars.check(log, progress) == []


def test_an_inverse_rate_and_a_scaled_one_are_per_second(tmp_path: Path) -> None:
    """``2.50s/it`` is 0.4 per second; ``1.50kit/s`` is 1,500."""
    log = tmp_path / "train.log"
    slow = [meter(n, 50, 2.5 * n, 0.4 if n else None) for n in range(0, 50, 5)]
    log.write_text("\r".join(slow) + "\n")
    assert [w["speed"] for w in chosen(scan(log))["windows"]] == [0.4, 0.4]
    fast = [
        meter(n, None, n / 1500, 1500.0 if n else None, unit_scale=True)
        for n in range(0, 9000, 500)
    ]
    log.write_text("\r".join(fast) + "\n")
    progress = scan(log)
    assert {w["speed"] for w in chosen(progress)["windows"]} == {1500.0}
    assert chosen(progress)["total"] is None
    assert oracle_bars.check(log, progress) == []


def test_the_training_bar_is_the_one_with_the_most_updates(tmp_path: Path) -> None:
    """An evaluation or save bar between the training bar's updates is a family of its
    own; a console with no bar has none chosen."""
    parts = []
    for n in range(1, 60):
        parts.append("\r" + meter(n, 200, n / 5, 5.0))
        if n % 20 == 0:
            parts += ["\n", *("\r" + meter(k, 3, k, 1.0, prefix="Evaluating") for k in range(1, 4))]
            parts.append("\n")
    log = tmp_path / "train.log"
    log.write_text("".join(parts))
    progress = scan(log)
    assert chosen(progress)["desc"] == "" and chosen(progress)["with_rate"] == 59
    assert [f["desc"] for f in progress["families"]] == ["", "Evaluating"]
    log.write_text("step 1 loss 4.2\nstep 2 loss 4.1\n")
    assert scan(log)["chosen"] is None


@st.composite
def consoles(draw: st.DrawFn) -> str:
    """Bars as tqdm formats them: restarts, redraws after a message, "?" first updates,
    inverse rates, descriptions, other text between updates."""
    parts: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        desc = draw(st.sampled_from(["", "Epoch 3", "Training"]))
        total = draw(st.sampled_from([None, 500]))
        n, clock = draw(st.integers(0, 5)), draw(st.integers(0, 3))
        for _ in range(draw(st.integers(1, 40))):
            rate = draw(st.one_of(st.none(), st.floats(0.05, 5000, allow_nan=False)))
            text = meter(n, total, clock, rate, prefix=desc)
            parts.append("\r" + text)
            if draw(st.booleans()):
                parts.append(
                    draw(st.sampled_from(["\n{'loss': 1.0}\n", "\nsaving\n", "\r" + text]))
                )
            n += draw(st.integers(0, 7))
            clock += draw(st.integers(0, 2))
        parts.append("\n")
    return "".join(parts)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=consoles())
def test_the_parser_and_the_oracle_read_every_bar_alike(text: str) -> None:
    """For any console generated with progress bars, the parser and the independent oracle read the
    same bars."""
    fd, name = tempfile.mkstemp(suffix=".log")
    try:
        os.write(fd, text.encode())
        os.close(fd)
        path = Path(name)
        assert oracle_bars.check(path, scan(path)) == []
    finally:
        os.unlink(name)
