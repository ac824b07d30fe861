"""Where this installation keeps its state: ``$XDG_STATE_HOME/dflash-doctor``
(``~/.local/state/dflash-doctor`` when the variable is unset or empty). A relative value
is refused in one line: the XDG spec makes it invalid, and ignoring it would put the
state where the user did not say.

The one definition of it: ``app_state_dir()`` names it without creating anything (the
transcript key, ``tools.signing``, is looked up there by a replay, which must not create
it); ``ensure_app_state_dir()`` creates it, private to its user, for the sessions,
snapshots and health history.
"""

from __future__ import annotations

import os
from pathlib import Path

from tools.errors import UsageError

APP = "dflash-doctor"


def xdg_home(variable: str, default: str) -> Path:
    """The directory ``$variable`` names, else ``~/default``; UsageError for a relative
    one (the spec says a relative path is invalid: refusing it beats writing to a
    directory the user did not name, silently)."""
    configured = os.environ.get(variable)
    if not configured:
        return Path.home() / default
    if not os.path.isabs(configured):
        raise UsageError(
            f"{variable}={configured!r} is a relative path, which the XDG Base Directory"
            f" spec makes invalid: set an absolute one (or unset it for ~/{default})"
        )
    return Path(configured)


def state_home() -> Path:
    return xdg_home("XDG_STATE_HOME", ".local/state")


def app_state_dir() -> Path:
    """The state directory, named, not created."""
    return state_home() / APP


def ensure_app_state_dir() -> Path:
    """The app's state directory, private to its user (0700): transcripts, ledgers and
    snapshots describe the training hosts, and a redacted transcript still names paths."""
    path = app_state_dir()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if path.stat().st_mode & 0o077:
            path.chmod(0o700)  # made by an older version, or under a looser umask
    except OSError as exc:
        raise UsageError(
            f"{path}: cannot use it as the state directory ($XDG_STATE_HOME): {exc.strerror}"
        ) from None
    return path
