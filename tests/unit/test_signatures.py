"""``tools.parsers.signatures``: the one source of the console signatures' ids and of
torch's texts that readers quote (issue 25: the FX-trace id was spelled in 7 product
files and torch's message in 3)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools.parsers.signatures import (
    CAUSES,
    COMPILER,
    FX_ERROR_TEXT,
    FX_NESTED_TRACE,
    MIDRUN,
    SIGNATURES,
    console_path,
)

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ("agent", "tools", "playbooks")


def _product_files_holding(text: str) -> list[str]:
    return sorted(
        str(path.relative_to(REPO))
        for room in PRODUCT
        for path in (REPO / room).rglob("*.py")
        if text in path.read_text(encoding="utf-8")
    )


@pytest.mark.parametrize("text", [f'"{FX_NESTED_TRACE}"', "symbolically trace a dynamo"])
def test_the_fx_trace_id_and_torch_s_text_are_spelled_in_one_module(text: str) -> None:
    """Everything else imports them, so a new torch wording is one edit."""
    assert _product_files_holding(text) == ["tools/parsers/signatures.py"]


def test_every_cited_id_is_a_row() -> None:
    """The causes, the mid-run signatures and the compiler's own are rows of the table,
    and no id is two rows."""
    ids = [s.id for s in SIGNATURES]
    assert len(ids) == len(set(ids))
    assert set(CAUSES) | set(MIDRUN) | set(COMPILER) <= set(ids)


def test_the_fx_row_matches_torch_s_text_and_ids_are_names() -> None:
    """The FX row's pattern finds the text it is named for; every id is a plain name."""
    (fx,) = [s for s in SIGNATURES if s.id == FX_NESTED_TRACE]
    assert re.search(fx.pattern, f"RuntimeError: {FX_ERROR_TEXT}. This is not supported")
    assert all(re.fullmatch(r"[a-z][a-z_]*", s.id) for s in SIGNATURES)


def test_console_path_is_where_the_scan_puts_a_signature() -> None:
    """The path a reader cites is the scan's own layout: signatures → id → field."""
    assert console_path(FX_NESTED_TRACE, "count") == ("signatures", "fx_nested_trace", "count")
