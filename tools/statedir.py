"""Where this installation keeps its state: ``$XDG_STATE_HOME/dflash-doctor``
(``~/.local/state/dflash-doctor`` when the variable is unset or relative).

The one definition of it: ``agent.session.app_state()`` creates that directory (0700) for
the sessions, snapshots and health history from ``state_home`` here; this module only
names it, without creating anything, for what ``tools/`` keeps there (``tools/`` never
imports ``agent/``): the transcript key (``tools.signing``), which a replay looks up and
must not create.
"""

from __future__ import annotations

import os
from pathlib import Path

APP = "dflash-doctor"


def state_home() -> Path:
    configured = os.environ.get("XDG_STATE_HOME")
    # The XDG spec says a relative path is invalid and must be ignored.
    if configured and os.path.isabs(configured):
        return Path(configured)
    return Path.home() / ".local" / "state"


def app_state_dir() -> Path:
    """The state directory, named, not created."""
    return state_home() / APP
