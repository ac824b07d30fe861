"""How two recorded versions of one package differ: not at all, in build, or in release.

A version is ``<public>[+<local>]`` (PEP 440): ``2.11.0+cu130`` is torch 2.11.0 built for
CUDA 13.0, ``2.11.0+cpu`` the same release built without CUDA. Both labels present and
different is a real difference ("build": same release, other binaries), worth a claim.
A label on one side only is not one: PEP 440 matches a version without a local label
against every build of its release (``==2.11.0`` accepts ``2.11.0+cu130``), and most
records without a label (a requirements pin, a conda version, a PyPI wheel's default)
simply do not say which build it was; a difference read into that silence would be a
claim from absence.
"""

from __future__ import annotations

import re
from typing import Literal

Difference = Literal["same", "build", "release"]

_RELEASE = re.compile(r"^v?(\d+(?:\.\d+)*)(.*)$")


def split(version: str) -> tuple[tuple[int, ...], str, str] | None:
    """``(release numbers without trailing zeros, pre/post/dev suffix, local label)``, or
    None when ``version`` does not start like a version."""
    public, _, local = version.strip().partition("+")
    match = _RELEASE.match(public)
    if match is None:
        return None
    numbers = [_release_number(n) for n in match.group(1).split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()  # 3.12 and 3.12.0 name the same release
    return tuple(numbers), match.group(2).lower(), local.lower()


def _release_number(digits: str) -> int:
    """A release part as a number. One past Python's digit limit for ``int()`` (4300)
    is no real version, but compares: equal parts are equal text without leading zeros,
    and the number stands for it (its digits' hash, negative: never a real part)."""
    try:
        return int(digits)
    except ValueError:
        return -1 - (hash(digits.lstrip("0")) & ((1 << 62) - 1))


def difference(a: str, b: str) -> Difference | None:
    """How ``a`` and ``b`` differ; None when either is not a version."""
    left, right = split(a), split(b)
    if left is None or right is None:
        return None
    if left[:2] != right[:2]:
        return "release"
    if left[2] and right[2] and left[2] != right[2]:
        return "build"
    return "same"
