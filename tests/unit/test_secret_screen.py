"""The secret formats' screen kept between runs (tools.secrets_detect.Screen): it is the
installed detect-secrets' own patterns and key words, it is used only when it was read
from this installation and nobody else could have written it, and it passes every
planted secret, so keeping it changes nothing that redaction finds."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest

from tests.lib.planted_secrets import PLANTED
from tools import secrets_detect
from tools.secrets_detect import Screen

FILLER = "step 12 loss 2.31 lr 3e-4 tokens/s 12800 grad_norm 0.9 drafter cuda:1\n"


def _fresh() -> None:
    secrets_detect._screen.cache_clear()
    secrets_detect._joined.cache_clear()


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    _fresh()
    yield tmp_path / "dflash-doctor" / "cache" / "secret-screen.json"
    _fresh()


def test_the_kept_screen_is_the_installed_detectors(state: Path) -> None:
    """The first use keeps the screen in a file only its owner can read or write, and what is kept
    is exactly the installed detect-secrets' patterns and key words."""
    assert not state.exists()
    live = secrets_detect.live_screen()
    assert secrets_detect.key_words() == live.key_words  # the first use keeps it
    assert state.is_file() and state.stat().st_mode & 0o077 == 0
    key = secrets_detect.screen_key()
    assert key is not None
    kept = secrets_detect._read_kept(str(state), key)
    assert kept == live
    every = [
        (type(plugin).__name__, p.pattern, p.flags)
        for plugin in secrets_detect._regex_plugins()
        for p in plugin.denylist
    ]
    assert [(n, p, f) for n, p, f, _ in kept.patterns] == every


def _doctored(state: Path, key: str) -> Screen:
    """A screen that no detect-secrets has: used, it would let every secret through."""
    doctored = Screen((("AWSKeyDetector", "never-matches", 0, "never-matches"),), ("zzz",))
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps(doctored.document(key)))
    state.chmod(0o600)
    return doctored


def test_a_kept_screen_of_this_installation_is_read(state: Path) -> None:
    """A screen kept with this installation's key is read back as kept, so the refusals of spoiled
    screens are real checks."""
    key = secrets_detect.screen_key()
    assert key is not None
    doctored = _doctored(state, key)
    # Read back as kept: so the refusals below are the checks, not a file never read.
    assert secrets_detect._screen() == doctored


@pytest.mark.parametrize(
    "spoil",
    ["another key", "group-writable", "a symlink", "not JSON", "no patterns", "bad flags"],
)
def test_a_kept_screen_is_refused_unless_it_is_this_installations(state: Path, spoil: str) -> None:
    """A kept screen under another key, writable by others, behind a symlink, unreadable, empty or
    with bad flags is not used: the live screen is built instead."""
    key = secrets_detect.screen_key()
    assert key is not None
    _doctored(state, "0" * 64 if spoil == "another key" else key)
    if spoil == "group-writable":
        state.chmod(0o664)
    elif spoil == "a symlink":
        target = state.with_name("elsewhere.json")
        state.rename(target)
        state.symlink_to(target)
    elif spoil == "not JSON":
        state.write_text('{"key": "' + key + '", "patterns": [')
    elif spoil == "no patterns":
        state.write_text(json.dumps({"key": key, "patterns": [], "key_words": ["password"]}))
    elif spoil == "bad flags":
        state.write_text(
            json.dumps({"key": key, "patterns": [["P", "x", "I", "x"]], "key_words": ["password"]})
        )
    assert secrets_detect._screen() == secrets_detect.live_screen()


def test_the_key_follows_the_plugins_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An upgrade or an edit of detect-secrets rewrites its plugin files: a new key, so
    a screen kept from the old files is not used."""
    package = tmp_path / "detect_secrets"
    (package / "plugins").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    names = [f"{m}.py" for m, _ in secrets_detect.REGEX_PLUGINS] + ["keyword.py", "base.py"]
    for name in names:
        (package / "plugins" / name).write_text("# a plugin\n")
    spec = ModuleSpec("detect_secrets", None, origin=str(package / "__init__.py"))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec)
    before = secrets_detect.screen_key()
    assert before is not None and before == secrets_detect.screen_key()
    edited = package / "plugins" / "stripe.py"
    edited.write_text("# a plugin, edited\n")
    assert secrets_detect.screen_key() not in (None, before)
    edited.unlink()
    assert secrets_detect.screen_key() is None  # a plugin file gone: nothing kept is used


def test_a_long_text_with_a_planted_secret_passes_the_screen(state: Path) -> None:
    """Texts over the joined pattern's length are screened pattern by pattern: every
    planted secret of a plugin's, in a long log, is matched by that plugin's patterns,
    and is found as in a short text; the log alone matches none."""
    screen = secrets_detect._screen()
    long_filler = FILLER * 80
    assert len(long_filler) > secrets_detect._JOINED_UP_TO
    assert not screen.plugins_matching(long_filler, long_filler.lower())
    regex_plugins = {name for _, name in secrets_detect.REGEX_PLUGINS}
    for planted in PLANTED:
        short = secrets_detect.find(planted.form)
        text = long_filler + planted.form + "\n" + long_filler
        if planted.claimed_by in regex_plugins:
            assert planted.claimed_by in screen.plugins_matching(text, text.lower()), planted.kind
        at = len(long_filler)
        assert secrets_detect.find(text) == [(s + at, e + at) for s, e in short], planted.kind


def test_redaction_finds_the_same_with_a_kept_and_a_fresh_screen(state: Path) -> None:
    """The kept screen finds exactly what a freshly built one finds, on every planted secret and on
    long filler text."""
    texts = [p.form for p in PLANTED] + [FILLER, FILLER * 80]
    fresh = [secrets_detect.find(t) for t in texts]  # keeps the screen
    assert state.is_file()
    _fresh()
    assert [secrets_detect.find(t) for t in texts] == fresh
