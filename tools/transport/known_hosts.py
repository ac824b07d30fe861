"""known_hosts read the way OpenSSH reads it, for paramiko.

paramiko's ``HostKeys.load`` raises on the first line it cannot parse, and it cannot parse
OpenSSH's marker lines (``@cert-authority``, ``@revoked``): one such line made every SSH
connection fail with a traceback. Here each line is read on its own: a marker line is
kept apart (a ``@revoked`` key is refused even if listed as known; ``@cert-authority``
is not supported and its line is skipped), and a line that does not parse is skipped
and counted, as ``ssh`` skips it with a warning.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import paramiko
from paramiko.hostkeys import HostKeyEntry, InvalidHostKey

from tools.errors import UsageError
from tools.localfile import read_regular


@dataclass
class KnownHosts:
    path: Path
    keys: paramiko.HostKeys = field(default_factory=paramiko.HostKeys)
    revoked: set[str] = field(default_factory=set)  # base64 of each @revoked key
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (line, why)


def load(path: Path) -> KnownHosts:
    """The known hosts in ``path`` (absent: none). UsageError when it cannot be read."""
    found = KnownHosts(path)
    # A link that leads nowhere (a loop, a dangling link) is not "no file": it is read,
    # and its error is the one line.
    if (not path.exists() and not path.is_symlink()) or str(path) == os.devnull:
        return found  # none known; /dev/null is ssh's idiom for "remember nothing"
    try:
        text = read_regular(path, 64 << 20).decode("utf-8", "replace")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read known_hosts: {exc.strerror}") from None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        marker = line.split(None, 1)[0] if line.startswith("@") else None
        if marker is not None:
            rest = line.split(None, 1)[1] if " " in line or "\t" in line else ""
            if marker == "@revoked":
                parts = rest.split()
                if len(parts) >= 3:
                    found.revoked.add(parts[2])
                    continue
            found.skipped.append((number, f"{marker} lines are not supported"))
            continue
        try:
            entry = HostKeyEntry.from_line(line, number)
        except (InvalidHostKey, ValueError, paramiko.SSHException) as exc:
            found.skipped.append((number, f"not a host key line ({exc.__class__.__name__})"))
            continue
        if entry is None:
            found.skipped.append((number, "not a host key line"))
            continue
        for name in entry.hostnames:
            found.keys.add(name, entry.key.get_name(), entry.key)
    return found
