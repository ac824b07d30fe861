"""``dflash-doctor init`` (``agent.cli.init``): the commented doctor.toml template written
where asked (``doctor.toml`` here by default), never over an existing file unless
``--force``."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from agent.cli import application
from agent.cli.application import app
from tools.errors import UsageError
from tools.profile import TEMPLATE


@pytest.fixture(autouse=True)
def quiet_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    """The root's logging configuration is not applied to the test process."""
    monkeypatch.setattr(application, "configure", lambda *, json, level: None)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, ["init", *args])


def test_without_a_path_the_template_is_doctor_toml_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no path, ``doctor.toml`` in the current directory gets the template, and the
    command says what it wrote."""
    monkeypatch.chdir(tmp_path)
    result = invoke()
    assert (result.exit_code, result.stdout) == (0, "wrote doctor.toml\n")
    assert (tmp_path / "doctor.toml").read_text() == TEMPLATE


def test_a_path_in_a_new_directory_is_written(tmp_path: Path) -> None:
    """A path whose directories do not exist yet is written, the directories made."""
    path = tmp_path / "etc" / "dflash" / "gpu.toml"
    result = invoke(str(path))
    assert (result.exit_code, result.stdout) == (0, f"wrote {path}\n")
    assert path.read_text() == TEMPLATE


def test_an_existing_file_is_kept_without_force(tmp_path: Path) -> None:
    """An existing profile is refused with its path and how to overwrite it, and left as
    it was."""
    path = tmp_path / "doctor.toml"
    path.write_text("[targets.gpu]\n")
    result = invoke(str(path))
    assert isinstance(result.exception, UsageError)
    assert str(result.exception) == f"{path} exists; not overwriting it (use --force)"
    assert path.read_text() == "[targets.gpu]\n"


def test_force_overwrites_an_existing_file(tmp_path: Path) -> None:
    """With ``--force`` the existing file is replaced by the template."""
    path = tmp_path / "doctor.toml"
    path.write_text("[targets.gpu]\n")
    result = invoke("--force", str(path))
    assert (result.exit_code, result.stdout) == (0, f"wrote {path}\n")
    assert path.read_text() == TEMPLATE
