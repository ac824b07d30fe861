"""agent.model.versions: how two recorded versions of one package differ (not at all, in
build, or in release), reading each as PEP 440's public version and local label.

The symmetric ``difference`` table of common cases is in tests/e2e/test_environment_drift.py;
here are how a version splits and the normalisations the comparison rests on."""

from __future__ import annotations

import pytest

from agent.model.versions import Difference, difference, split


@pytest.mark.parametrize(
    ("version", "parts"),
    [
        ("2.11.0+cu130", ((2, 11), "", "cu130")),
        ("3.12", ((3, 12), "", "")),
        ("10", ((10,), "", "")),
        ("0.0.0", ((0,), "", "")),
        ("v1.2", ((1, 2), "", "")),
        ("2.011", ((2, 11), "", "")),
        ("2.6.0a0+git1234", ((2, 6), "a0", "git1234")),
        ("2.11.0RC1", ((2, 11), "rc1", "")),
        ("2.1.0.post1", ((2, 1), ".post1", "")),
        ("1.0.0+CU130", ((1,), "", "cu130")),
        ("  2.1.0\n", ((2, 1), "", "")),
        ("unknown", None),
        ("", None),
        ("+cu130", None),
    ],
    ids=[
        "release-and-label",
        "two-parts",
        "one-part",
        "all-zeros",
        "v-prefix",
        "leading-zero",
        "pre-release",
        "upper-case-suffix",
        "post-release",
        "upper-case-label",
        "whitespace",
        "not-a-version",
        "empty",
        "label-only",
    ],
)
def test_a_version_splits_into_release_suffix_and_label(
    version: str, parts: tuple[tuple[int, ...], str, str] | None
) -> None:
    """The release numbers without trailing zeros (at least one number kept), the
    pre/post/dev suffix and the local label, both lower-cased; surrounding whitespace and
    a leading "v" are ignored, and text that does not start with a number is no version."""
    assert split(version) == parts


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("2.11.0+CU130", "2.11.0+cu130", "same"),
        ("2.11.0rc1", "2.11.0RC1", "same"),
        ("2.011", "2.11.0", "same"),
        ("2.1.0.post1", "2.1.0", "release"),
        ("2.11.0rc1+cu130", "2.11.0+cu130", "release"),
        ("2.11.0rc1+cu130", "2.11.0rc1+cpu", "build"),
        ("", "2.0", None),
    ],
    ids=[
        "label-case",
        "suffix-case",
        "leading-zero",
        "post-release",
        "pre-release-same-label",
        "pre-release-other-label",
        "empty",
    ],
)
def test_differences_follow_the_normalised_parts(
    a: str, b: str, expected: Difference | None
) -> None:
    """Case and leading zeros make no difference; a suffix is part of the release (a
    post- or pre-release is another release); two labels differ only as a build of the
    same release; an empty text is no version."""
    assert difference(a, b) == expected
    assert difference(b, a) == expected
