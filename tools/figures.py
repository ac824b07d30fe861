"""The one test of "a number a figure can be made of", for the controller and the probes.

A fact's value comes from a file the trainer wrote: a JSON number may be a bool (JSON's
``true`` reads as ``True``, an ``int``), an int of 400 digits that no float holds (``float``
raises ``OverflowError``), or a NaN or an infinity (Python's JSON reader takes both).
Standard library only, Python 3.8 and later: the probe bundle carries it.
"""

from __future__ import annotations

import math


def finite_number(value: object) -> float | None:
    """``value`` as a float where it is an int or a float (not a bool) that a float holds
    finite; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None
