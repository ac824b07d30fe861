"""An apply writes only under the workspace (issue 14, item 3).

The planted links are the attacks the issue names: a symlink at the launch file's
temporary name, at ``WS/.dflash-doctor`` or inside it, a launch file outside the
workspace, a FIFO where a file is read. Each runs the operations for real (the target
program on the real filesystem, locally and once through the real sshd) and checks that
nothing outside the workspace changed and that the refusal says where and why."""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

import pytest

from playbooks.remote import Remote
from tests.lib.sshd import SSHServer, options
from tools.errors import ApplyError
from tools.transport import LocalTransport, SSHTransport


def remote(ws: Path) -> Remote:
    return Remote(LocalTransport(), interpreter=sys.executable).confined(str(ws))


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "launch.sh").write_text("#!/bin/sh\nexec python t.py\n")
    return ws


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file outside the workspace that an attacker wants overwritten."""
    path = tmp_path / "outside" / "victim"
    path.parent.mkdir()
    path.write_text("precious\n")
    return path


def test_a_symlink_at_the_old_temporary_name_is_not_followed(ws: Path, victim: Path) -> None:
    """A symlink planted at the launch file's old temporary name is not written through: the
    victim it points at keeps its bytes and the launch file still gets the new ones."""
    (ws / "launch.sh.dflash-doctor.tmp").symlink_to(victim)
    remote(ws).write(str(ws / "launch.sh"), b"#!/bin/sh\nexec python t.py --x\n")
    assert victim.read_text() == "precious\n"
    assert (ws / "launch.sh").read_text().endswith("--x\n")
    # The temporary file is made with O_EXCL under a random name and is gone after.
    assert sorted(p.name for p in ws.iterdir()) == ["launch.sh", "launch.sh.dflash-doctor.tmp"]


def test_a_symlinked_state_directory_is_refused(ws: Path, victim: Path) -> None:
    """``WS/.dflash-doctor`` as a symlink is refused in one line naming it, and nothing is
    written where it points."""
    (ws / ".dflash-doctor").symlink_to(victim.parent)
    with pytest.raises(ApplyError) as caught:
        remote(ws).write(str(ws / ".dflash-doctor" / "victim"), b"owned\n")
    message = str(caught.value)
    assert "is a symlink or not a directory" in message and ".dflash-doctor" in message
    assert "\n" not in message
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim"]


def test_a_symlink_inside_the_state_directory_is_refused(ws: Path, victim: Path) -> None:
    """A symlink inside ``.dflash-doctor`` (the backups folder, the pid file) is refused for
    a write and for a start's log alike; the files it points at are untouched."""
    state = ws / ".dflash-doctor"
    state.mkdir()
    (state / "backups").symlink_to(victim.parent)
    (state / "started.pid").symlink_to(victim)
    r = remote(ws)
    with pytest.raises(ApplyError, match="is a symlink"):
        r.write(str(state / "backups" / "x" / "launch.sh"), b"data")
    with pytest.raises(ApplyError, match="is a symlink"):
        r.write(str(state / "started.pid"), b"1\n")
    with pytest.raises(ApplyError, match="is a symlink"):
        r.start(["true"], cwd=str(ws), log=str(state / "started.pid"))
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim"]


def test_a_symlinked_lock_is_refused_and_nothing_is_made_where_it_points(
    ws: Path, victim: Path
) -> None:
    """An apply lock planted as a symlink is refused, and no lock is made in the directory
    it points at."""
    state = ws / ".dflash-doctor"
    state.mkdir()
    (state / "apply.lock").symlink_to(victim.parent)
    with pytest.raises(ApplyError, match="is a symlink"):
        remote(ws).lock(str(state / "apply.lock"), "me")
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim"]


def test_a_path_outside_the_workspace_is_refused(ws: Path, victim: Path) -> None:
    """Writes to a path outside the workspace — absolute, climbing out with ``..``, or a
    system file — are refused and the file there keeps its bytes."""
    r = remote(ws)
    for path in (str(victim), f"{ws}/../outside/victim", "/etc/passwd"):
        with pytest.raises(ApplyError, match="is outside the workspace"):
            r.write(path, b"owned\n")
    assert victim.read_text() == "precious\n"


def test_a_remote_without_a_workspace_writes_nothing(ws: Path) -> None:
    """A remote with no workspace to confine it refuses to write at all rather than writing
    anywhere."""
    with pytest.raises(ApplyError, match="no workspace to confine it to"):
        Remote(LocalTransport(), interpreter=sys.executable).write(str(ws / "launch.sh"), b"")


def test_a_symlinked_launch_file_is_written_through_and_stays_a_link(ws: Path) -> None:
    """A launch file that is a link into the workspace is written through when asked: the
    link stays a link, its target keeps its mode, and a rollback restores the old bytes the
    same way."""
    real = ws / "scripts" / "launch-v2.sh"
    real.parent.mkdir()
    (ws / "launch.sh").unlink()
    real.write_text("#!/bin/sh\nexec python t.py\n")
    real.chmod(0o750)
    (ws / "launch.sh").symlink_to("scripts/launch-v2.sh")
    r = remote(ws)
    r.write(str(ws / "launch.sh"), b"#!/bin/sh\nexec python t.py --x\n", follow_link=True)
    assert (ws / "launch.sh").is_symlink()
    assert real.read_text().endswith("--x\n")
    assert real.stat().st_mode & 0o777 == 0o750  # the file keeps its mode
    # Rolled back the same way: the link is still a link, the bytes are the old ones.
    r.write(str(ws / "launch.sh"), b"#!/bin/sh\nexec python t.py\n", follow_link=True)
    assert (ws / "launch.sh").is_symlink()
    assert real.read_text() == "#!/bin/sh\nexec python t.py\n"


def test_a_launch_link_pointing_outside_the_workspace_is_refused(ws: Path, victim: Path) -> None:
    """A launch file linking out of the workspace is not written through, even with
    ``follow_link``: the file it points at keeps its bytes."""
    (ws / "launch.sh").unlink()
    (ws / "launch.sh").symlink_to(victim)
    with pytest.raises(ApplyError, match="is outside the workspace"):
        remote(ws).write(str(ws / "launch.sh"), b"owned\n", follow_link=True)
    assert victim.read_text() == "precious\n"


def test_a_workspace_named_through_a_link_is_still_the_workspace(tmp_path: Path) -> None:
    """A workspace reached through a symlinked path is confined to its real directory, so
    writes inside it are not mistaken for escapes."""
    real = tmp_path / "data" / "ws"
    real.mkdir(parents=True)
    (tmp_path / "ws-link").symlink_to(real)
    r = remote(tmp_path / "ws-link")
    r.write(str(tmp_path / "ws-link" / ".dflash-doctor" / "started.pid"), b"1\n")
    assert (real / ".dflash-doctor" / "started.pid").read_text() == "1\n"


def test_a_fifo_is_refused_at_once_not_read(ws: Path) -> None:
    """A FIFO in place of a file is refused for read, write and pid lookup at once, without
    blocking on it."""
    os.mkfifo(ws / "pipe")
    r = remote(ws)
    started = time.monotonic()
    with pytest.raises(ApplyError, match="is not a regular file"):
        r.read(str(ws / "pipe"))
    with pytest.raises(ApplyError, match="is not a regular file"):
        r.write(str(ws / "pipe"), b"x")
    assert r.running_pid(str(ws / "pipe")) is None
    assert time.monotonic() - started < 20


def test_the_apply_lock_has_one_holder_at_a_time(ws: Path) -> None:
    """The apply lock is held by one owner at a time: a second taker is told who holds it
    and for how long, and unlocking removes it."""
    r = remote(ws)
    lock = str(ws / ".dflash-doctor" / "apply.lock")
    assert r.lock(lock, "first") == (True, "")
    assert (ws / ".dflash-doctor").stat().st_mode & 0o777 == 0o755
    locked, holder, age = r.try_lock(lock, "second")
    assert (locked, holder) == (False, "first") and age is not None and 0 <= age < 60
    r.unlock(lock)
    assert not Path(lock).exists()


@pytest.mark.ssh
def test_over_ssh_the_same_refusals_hold(sshd_server: SSHServer, ws: Path, victim: Path) -> None:
    """Through the real sshd the same confinement holds: a symlinked state directory and a
    path outside the workspace are refused, a write inside it goes through."""
    (ws / ".dflash-doctor").symlink_to(victim.parent)
    transport = SSHTransport(
        "127.0.0.1", user=sshd_server.user, port=sshd_server.port, options=options(sshd_server)
    )
    try:
        r = Remote(transport, interpreter=sys.executable).confined(str(ws))
        with pytest.raises(ApplyError, match="is a symlink or not a directory"):
            r.write(str(ws / ".dflash-doctor" / "victim"), b"owned\n")
        with pytest.raises(ApplyError, match="is outside the workspace"):
            r.write(str(victim), b"owned\n")
        r.write(str(ws / "launch.sh"), b"#!/bin/sh\nexec python t.py --ssh\n")
    finally:
        transport.close()
    assert victim.read_text() == "precious\n"
    assert (ws / "launch.sh").read_text().endswith("--ssh\n")


_LOSES_THE_RACE = """
import os
_open = os.open
_lost = []
def _open_after_a_rival(path, flags, *args, **kwargs):
    # The rival apply makes the directory between this one's open and its mkdir.
    if path == ".dflash-doctor" and not _lost:
        _lost.append(path)
        try:
            return _open(path, flags, *args, **kwargs)
        except FileNotFoundError:
            os.mkdir(path, 0o755, dir_fd=kwargs.get("dir_fd"))
            raise
    return _open(path, flags, *args, **kwargs)
os.open = _open_after_a_rival
"""


def test_an_apply_that_loses_the_race_to_make_the_state_directory_uses_it(
    tmp_path: Path,
) -> None:
    """Two applies find ``.dflash-doctor`` missing and both make it; the one whose mkdir
    comes second uses the other's instead of failing with FileExistsError (the clean-clone
    CI run found this in the concurrent-approval test). The rival is a ``sitecustomize``
    in the target interpreter that makes the directory right after the first open."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_LOSES_THE_RACE)
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    ws = tmp_path / "ws"
    ws.mkdir()
    ops = Remote(LocalTransport(), interpreter=str(wrapper)).confined(str(ws))
    locked, _, _ = ops.try_lock(str(ws / ".dflash-doctor" / "apply.lock"), "me")
    assert locked
    assert (ws / ".dflash-doctor" / "apply.lock").exists()
