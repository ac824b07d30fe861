"""Where this installation keeps its state (tools.statedir): an XDG base directory read from
its variable (the home default when it is unset or empty, a relative value refused in one
line), the app's directory in it named without creating anything, and made private to its
user when asked for."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest

from tools.errors import UsageError
from tools.statedir import app_state_dir, ensure_app_state_dir, state_home, xdg_home


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("HOME", str(path))
    return path


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, "home/.cache"), ("", "home/.cache"), ("/srv/cache", "/srv/cache")],
    ids=["unset", "empty", "absolute"],
)
def test_an_xdg_directory_is_its_variable_or_the_home_default(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, value: str | None, expected: str
) -> None:
    """An absolute value of the variable is the directory; unset or empty, it is the default
    under the home directory."""
    if value is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", value)
    # An absolute ``expected`` replaces tmp_path in the join.
    assert xdg_home("XDG_CACHE_HOME", ".cache") == tmp_path / expected


@pytest.mark.parametrize(
    "value", ["relative/xdg", ".", "~/state"], ids=["relative", "dot", "tilde"]
)
def test_a_relative_xdg_directory_is_refused_in_one_line(
    home: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """A relative value (a tilde is not expanded: it is relative too) is refused, naming the
    variable, its value and the default that unsetting it gives."""
    monkeypatch.setenv("XDG_CACHE_HOME", value)
    message = (
        f"XDG_CACHE_HOME={value!r} is a relative path, which the XDG Base Directory spec makes"
        " invalid: set an absolute one (or unset it for ~/.cache)"
    )
    with pytest.raises(UsageError, match=f"^{re.escape(message)}$"):
        xdg_home("XDG_CACHE_HOME", ".cache")


def test_the_state_home_defaults_to_local_state(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``XDG_STATE_HOME`` the state home is ``~/.local/state``, and the app's
    directory is ``dflash-doctor`` in it."""
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    assert state_home() == home / ".local" / "state"
    assert app_state_dir() == home / ".local" / "state" / "dflash-doctor"


def test_naming_the_state_directory_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state directory is named under ``$XDG_STATE_HOME`` without being made (a replay
    looks its key up there and must not create it)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert app_state_dir() == tmp_path / "xdg" / "dflash-doctor"
    assert not (tmp_path / "xdg").exists()


def test_the_state_directory_is_made_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asked for, the state directory is made with its missing parents, and is 0700."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "a" / "b"))
    made = ensure_app_state_dir()
    assert made == tmp_path / "a" / "b" / "dflash-doctor"
    assert made.is_dir() and stat.S_IMODE(made.stat().st_mode) == 0o700


@pytest.mark.parametrize("mode", [0o755, 0o750, 0o701], ids=["0755", "0750", "0701"])
def test_a_state_directory_open_to_others_is_made_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: int
) -> None:
    """A state directory made earlier with any permission for group or others (an older
    version, a looser umask) is made 0700; what is in it stays."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    existing = tmp_path / "dflash-doctor"
    existing.mkdir()
    (existing / "ledger.jsonl").write_text("{}\n")
    existing.chmod(mode)
    assert ensure_app_state_dir() == existing
    assert stat.S_IMODE(existing.stat().st_mode) == 0o700
    assert (existing / "ledger.jsonl").read_text() == "{}\n"


def test_a_state_directory_that_cannot_be_made_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a file stands in the state directory's place, the refusal names the path, the
    variable that chose it and the system's reason."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    (tmp_path / "dflash-doctor").write_text("a file")
    message = (
        f"{tmp_path / 'dflash-doctor'}: cannot use it as the state directory ($XDG_STATE_HOME):"
        " File exists"
    )
    with pytest.raises(UsageError, match=f"^{re.escape(message)}$"):
        ensure_app_state_dir()
