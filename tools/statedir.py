"""Where this installation keeps its state: ``$XDG_STATE_HOME/dflash-doctor``
(``~/.local/state/dflash-doctor`` when the variable is unset or empty). A relative value
is refused in one line: the XDG spec makes it invalid, and ignoring it would put the
state where the user did not say.

The one definition of it: ``agent.session.app_state()`` creates that directory (0700) for
the sessions, snapshots and health history from ``state_home`` here; this module only
names it, without creating anything, for what ``tools/`` keeps there (``tools/`` never
imports ``agent/``): the transcript key (``tools.signing``), which a replay looks up and
must not create.
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
