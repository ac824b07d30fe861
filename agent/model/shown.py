"""How a sentence shows what it read: a value (one rule for every claim's sentence and
every one-line summary, so a figure reads the same wherever it is cited), and the fact
ids it rests on."""

from __future__ import annotations

from collections.abc import Sequence

from tools.figures import finite_number


def shown_value(value: object) -> str:
    """A value as a sentence shows it: numbers grouped by thousands (a float to four
    significant digits, or whole past 10,000), text quoted, anything long cut at 120
    characters."""
    if isinstance(value, float):
        # Four significant digits reach 10,000 from 9,999.5 up: grouped whole from there,
        # or the format would write "1e+04".
        return f"{value:,.4g}" if abs(value) < 9999.5 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        if finite_number(value) is None or abs(value) >= 10**24:
            return _huge(value)
        return f"{value:,}"
    if isinstance(value, str):
        return repr(value if len(value) <= 120 else value[:117] + "...")
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _huge(value: int) -> str:
    """An integer too long to show, by its size (``str`` itself refuses past 4300 digits)."""
    try:
        digits = len(str(abs(value)))
    except ValueError:
        return f"an integer of {value.bit_length()} bits"
    return f"{str(value)[:6]}… (an integer of {digits} digits)"


def unshown(text: str, cites: Sequence[str]) -> list[str]:
    """The fact ids of ``cites`` that ``text`` does not name yet. A claim's sentence names
    its facts inline (``= 2 [F-fc80]``); a cited line adds only the others, once. The one
    rule every output (terminal, Markdown, HTML, the menu, health) renders cites by."""
    return [c for c in dict.fromkeys(cites) if c not in text]


def with_cites(text: str, cites: Sequence[str]) -> str:
    """``text`` with the cites it does not name yet appended: ``… [F-1, F-2]``."""
    missing = unshown(text, cites)
    return f"{text} [{', '.join(missing)}]" if missing else text
