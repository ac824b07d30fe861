"""The one exception tree of dflash-doctor.

It lives in the lowest layer (``tools/``) because facts travel one way
(probe -> ledger -> claim -> hypothesis -> report) and ``tools/`` never imports
``agent/``; ``agent`` re-exports these names.

    DoctorError
    ├── UsageError                 bad input from the user: say what and where, exit 2
    │   ├── TargetURIError         a target URI that does not parse
    │   └── ConfigError            a profile / option that does not hold
    ├── TransportError             the command could not be carried (never a non-zero exit)
    │   ├── ConnectError           could not reach the host (refused, timed out, banner) - retried
    │   ├── AuthenticationError    the host refused our credentials - never retried
    │   ├── HostKeyError           unknown or changed host key - never retried
    │   ├── CommandTimeout         the command outlived its time limit and was killed
    │   ├── ConnectionLost         the connection dropped while a command ran
    │   ├── NotRecorded            replay: the command is not in the transcript
    │   └── ReadOnlyViolation      read-only mode: the command is not registered as read-only
    ├── ApplyError                 a change on the target could not be made (or undone) as planned
    │   └── ApplyRefused           refused before anything changed (a symlink, a FIFO): exit 2
    ├── LedgerError                the fact ledger cannot be read or written
    │   └── LedgerUnreadable       a ledger on disk that does not hold: exit 2
    └── TranscriptError            a transcript is unreadable, truncated or tampered with

Foreign exceptions (paramiko, socket, OSError) are mapped to these at the
transport boundary, in ``tools/transport/ssh.py`` and ``tools/transport/local.py``.
"""

from __future__ import annotations


class DoctorError(Exception):
    """Root of every error this app raises on purpose."""

    exit_code = 1


class UsageError(DoctorError):
    exit_code = 2


class TargetURIError(UsageError):
    """A target URI that does not parse; the message names the bad part."""


class ConfigError(UsageError):
    pass


class WorkspaceMissing(UsageError):
    """The workspace the command was given is not a directory on the target: nothing of
    the trainer's could be looked at, so nothing is judged."""


class TransportError(DoctorError):
    """A command could not be carried to or back from the target."""

    # What ssh(1) exits with when it, rather than the remote command, failed.
    exit_code = 255

    def __init__(self, message: str, *, target: str = "") -> None:
        self.target = target
        super().__init__(f"{target}: {message}" if target else message)


class ConnectError(TransportError):
    """The host could not be reached; the only transport failure that is retried."""


class AuthenticationError(TransportError):
    pass


class HostKeyError(TransportError):
    pass


class CommandTimeout(TransportError):
    pass


class ConnectionLost(TransportError):
    pass


class NotRecorded(TransportError):
    """Replay was asked for a command the transcript does not hold."""

    exit_code = 2


class ReadOnlyViolation(TransportError):
    """Read-only mode (``health``) refused a command that is not registered as read-only;
    it never reached the target. A bug in the doctor, never a fault of the target."""

    # Like a replay's refusal: the check could not be carried out as asked.
    exit_code = 2


class ApplyError(DoctorError):
    """A change on the target could not be made (or undone) as planned: a fix's apply,
    rollback or recovery stopped, and the message says at which step and why."""


class ApplyRefused(ApplyError):
    """An apply refused before it changed anything: state on the target it will not
    write through (a symlinked lock, journal or pid file, a FIFO where a file belongs).
    The target's layout is what must change, as with bad input: exit 2."""

    exit_code = 2


class LedgerError(DoctorError):
    pass


class LedgerUnreadable(LedgerError):
    """A ledger on disk that is no ledger (garbage, a FIFO, a fact that does not match
    its content): bad state handed to the command, like a broken transcript."""

    exit_code = 2


class TranscriptError(DoctorError):
    # Replay's contract: 2 means "could not be replayed" (broken, tampered, unrecorded).
    exit_code = 2
