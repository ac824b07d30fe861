"""Profiles and environment variables built to break the reader (issue 24, item 4): TOML
arrays nested 100,000 deep or inline tables 5,000 deep (a ``RecursionError`` traceback),
``interpreter = "py\\u0000thon"`` (a ``ValueError`` traceback), and a table or list
setting in the environment that is not JSON (a ``SettingsError`` traceback). Each is
now exit 2 with one line that says what was wrong and where."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lib.cli import one_line_refusal

PLAIN = '[targets.trainer]\nuri = "local"\n'


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (PLAIN + "x = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested deeper"),
        (PLAIN + "x = " + "{a = " * 5_000 + "1" + "}" * 5_000 + "\n", "nested deeper"),
        (PLAIN + 'interpreter = "py\\u0000thon"\n', "targets.trainer.interpreter holds a NUL"),
        (PLAIN + 'process_match = ["ok", "tr\\u0000ain"]\n', "process_match[1] holds a NUL"),
    ],
    ids=["arrays-100k-deep", "inline-tables-5k-deep", "nul-in-interpreter", "nul-in-a-list"],
)
def test_a_hostile_profile_is_one_line_naming_the_file(
    tmp_path: Path, body: str, said: str
) -> None:
    """A profile nested absurdly deep, or holding a NUL in a setting, is refused in one line
    naming the file and what is wrong, not a traceback."""
    profile = tmp_path / "doctor.toml"
    profile.write_text(body)
    line = one_line_refusal(["facts", "--config", str(profile)], tmp_path / "s")
    assert str(profile) in line and said in line


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DFLASH_DOCTOR_TARGETS__TRAINER__TIMEOUTS", "{{{"),
        ("DFLASH_DOCTOR_TARGETS__TRAINER__TIMEOUTS", "abc"),
        ("DFLASH_DOCTOR_TARGETS__TRAINER__LOG_FIELDS", "{{{"),
        ("DFLASH_DOCTOR_TARGETS__TRAINER__SIGNATURES", "[{"),
        ("DFLASH_DOCTOR_TARGETS", "{{{"),
    ],
)
def test_a_table_setting_in_the_environment_that_is_not_json_is_named(
    tmp_path: Path, variable: str, value: str
) -> None:
    """A table setting given in an environment variable that is not JSON is refused in one
    line naming the variable and its value."""
    profile = tmp_path / "doctor.toml"
    profile.write_text(PLAIN)
    line = one_line_refusal(
        ["facts", "--config", str(profile)], tmp_path / "s", env={variable: value}
    )
    assert f"{variable}={value!r}" in line and "not JSON" in line
