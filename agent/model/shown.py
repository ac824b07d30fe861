"""How a sentence shows a value it read from a fact: one rule for every claim's
sentence and every one-line summary, so a figure reads the same wherever it is cited."""

from __future__ import annotations

from tools.figures import finite_number


def shown_value(value: object) -> str:
    """A value as a sentence shows it: numbers grouped by thousands (a float to four
    significant digits, or whole past 10,000), text quoted, anything long cut at 120
    characters."""
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
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
