"""File and process operations on a target, each one command through its transport.

A playbook changes a target only through these, so every change crosses the same
transport (local, SSH, container hops) and lands in the session's transcript like any
other command. Each operation is a small stdlib-only Python program sent on stdin to the
target's interpreter; it answers one JSON line. A failed operation raises ``ApplyError``
with what failed and where.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Sequence
from typing import Any

from tools.errors import ApplyError, ApplyRefused
from tools.transport.base import Transport

_PROGRAM = r"""
import base64, errno, hashlib, json, os, signal, stat, subprocess, sys, time
op = json.loads(sys.argv[1])
kind = op["op"]
CAP = 256 << 20
NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
class Refused(Exception):
    pass
def sha(path):
    h = hashlib.sha256()
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
def open_regular(path, dir_fd=None):
    # Never blocks on a FIFO, never reads a device: only a regular file is read.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK, dir_fd=dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Refused("%s is not a regular file" % path)
    return fd
def read_regular(path, offset=0, limit=CAP):
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if offset == 0 and limit == CAP and size > CAP:
            raise Refused("%s is %d bytes, over the %d the doctor reads" % (path, size, CAP))
        fh.seek(offset)
        return fh.read(limit), size
def open_dir(name, dir_fd, create):
    try:
        return os.open(name, DIR, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise
    try:
        os.mkdir(name, 0o755, dir_fd=dir_fd)
        os.fsync(dir_fd)
    except FileExistsError:
        pass  # a concurrent apply made it between our open and our mkdir: use theirs
    return os.open(name, DIR, dir_fd=dir_fd)
def under(path, follow_last=False, create=False, depth=0, allow_dir=False):
    # (directory fd, name): where PATH is, reached from the workspace ROOT one component
    # at a time with no symlink followed below it (the workspace itself may be a link the
    # user named). A launch file that is a link is followed when FOLLOW_LAST, if what it
    # names is in the workspace too: the link stays a link.
    root = op["root"]
    real_root = os.path.realpath(root)
    path = os.path.normpath(path)
    rel = None
    for base in (os.path.normpath(root), real_root):
        if path.startswith(base.rstrip("/") + "/"):
            rel = os.path.relpath(path, base)
            break
    if rel is None or rel.startswith(".."):
        raise Refused(
            "%s is outside the workspace %s: the doctor writes only under it" % (path, root))
    parts = rel.split("/")
    fd = os.open(real_root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i, part in enumerate(parts[:-1]):
            try:
                nxt = open_dir(part, fd, create)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    where = os.path.join(real_root, *parts[: i + 1])
                    raise Refused("%s is a symlink or not a directory: the doctor does "
                                  "not write through it" % where)
                raise
            os.close(fd)
            fd = nxt
        name = parts[-1]
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return fd, name
        if stat.S_ISLNK(st.st_mode):
            if not follow_last or depth:
                raise Refused("%s is a symlink: the doctor does not write through it" % path)
            target = os.path.realpath(path)
            os.close(fd)
            fd = -1
            return under(target, follow_last=False, create=create, depth=1)
        if not stat.S_ISREG(st.st_mode) and not (allow_dir and stat.S_ISDIR(st.st_mode)):
            raise Refused("%s is not a regular file" % path)
        return fd, name
    except BaseException:
        if fd >= 0:
            os.close(fd)
        raise
def write_under(path, data, follow_last=False):
    fd, name = under(path, follow_last=follow_last, create=True)
    try:
        try:
            old = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        tmp = ".%s.dflash-doctor-%s.tmp" % (name[:100], os.urandom(6).hex())
        out = os.open(tmp, NEW, 0o600, dir_fd=fd)
        try:
            with os.fdopen(out, "wb") as fh:
                fh.write(data)
                fh.flush()
                if old is not None:
                    # The file keeps its mode and its owner (an apply runs as root).
                    os.fchmod(fh.fileno(), old.st_mode & 0o7777)
                    try:
                        os.fchown(fh.fileno(), old.st_uid, old.st_gid)
                    except PermissionError:
                        pass
                else:
                    os.fchmod(fh.fileno(), 0o644)
                os.fsync(fh.fileno())
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=fd)
            except OSError:
                pass
            raise
        os.fsync(fd)
        h = hashlib.sha256()
        with os.fdopen(open_regular(name, dir_fd=fd), "rb") as fh:
            h.update(fh.read())
        return h.hexdigest()
    finally:
        os.close(fd)
def beat():
    # The lock's heartbeat: its mtime, touched while a long operation works for it.
    if op.get("beat"):
        fd, name = under(op["beat"], allow_dir=True)
        try:
            os.utime(name, dir_fd=fd, follow_symlinks=False)
        finally:
            os.close(fd)
def running(pid):
    # A process that has exited but is not reaped yet (a zombie) does not run.
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True  # no /proc to ask: kill(0) said it exists
def proc_start(pid):
    # What tells a process from a later one given the same pid: its start time.
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None
try:
    if kind == "read":
        data, _ = read_regular(op["path"])
        out = {"data": base64.b64encode(data).decode(), "sha256": hashlib.sha256(data).hexdigest()}
    elif kind == "write":
        data = base64.b64decode(op["data"])
        out = {"sha256": write_under(op["path"], data, follow_last=op.get("follow", False))}
    elif kind == "stat":
        out = {"exists": os.path.exists(op["path"])}
        if out["exists"]:
            out["size"] = os.path.getsize(op["path"])
            out["sha256"] = sha(op["path"]) if os.path.isfile(op["path"]) else None
    elif kind == "kinds":
        out = {"kinds": []}
        for path in op["paths"]:
            try:
                mode = os.lstat(path).st_mode
                out["kinds"].append("link" if stat.S_ISLNK(mode) else "file" if stat.S_ISREG(mode)
                                    else "directory" if stat.S_ISDIR(mode) else "special")
            except FileNotFoundError:
                out["kinds"].append("missing")
    elif kind == "lock":
        fd, name = under(op["path"], create=True, allow_dir=True)
        try:
            try:
                os.mkdir(name, 0o700, dir_fd=fd)
                os.fsync(fd)
                made = True
            except FileExistsError:
                made = False
            lock_fd = os.open(name, DIR, dir_fd=fd)
            try:
                if made:
                    w = os.open("owner", NEW, 0o600, dir_fd=lock_fd)
                    with os.fdopen(w, "w") as fh:
                        fh.write(op["owner"])
                        fh.flush()
                        os.fsync(fh.fileno())
                    os.fsync(lock_fd)
                    out = {"locked": True}
                else:
                    try:
                        with os.fdopen(open_regular("owner", dir_fd=lock_fd), "rb") as fh:
                            owner = fh.read(1 << 16).decode(errors="replace")
                    except OSError:
                        owner = "unknown"
                    age = time.time() - os.stat(name, dir_fd=fd, follow_symlinks=False).st_mtime
                    out = {"locked": False, "owner": owner, "age": age}
            finally:
                os.close(lock_fd)
        finally:
            os.close(fd)
    elif kind == "unlock":
        fd, name = under(op["path"], allow_dir=True)
        try:
            lock_fd = os.open(name, DIR, dir_fd=fd)
            try:
                os.unlink("owner", dir_fd=lock_fd)
            except OSError:
                pass
            finally:
                os.close(lock_fd)
            os.rmdir(name, dir_fd=fd)
            os.fsync(fd)
        finally:
            os.close(fd)
        out = {}
    elif kind == "break":
        # A stale lock is renamed away, never removed in place: of two runs breaking it at
        # once, one rename wins and the other finds the fresh lock of the winner.
        fd, name = under(op["path"], allow_dir=True)
        try:
            gone = "%s.stale-%s" % (name, os.urandom(4).hex())
            os.rename(name, gone, src_dir_fd=fd, dst_dir_fd=fd)
            os.fsync(fd)
        finally:
            os.close(fd)
        out = {}
    elif kind == "remove":
        fd, name = under(op["path"])
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                raise Refused("%s is not a regular file" % op["path"])
            os.unlink(name, dir_fd=fd)
            os.fsync(fd)
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)
        out = {}
    elif kind == "proc":
        out = {"start": proc_start(op["pid"])}
    elif kind == "pid":
        try:
            data, _ = read_regular(op["path"], 0, 4096)
            pid = int(data.split()[0])
            alive = running(pid)
            out = {"pid": pid if alive else None, "alive": alive}
        except (OSError, ValueError, IndexError, Refused):
            out = {"pid": None, "alive": False}
    elif kind == "alive":
        out = {"alive": running(op["pid"])}
    elif kind == "stdio":
        # Where a running process's stdout and stderr go: a regular file, or None (a
        # pipe, a terminal, /dev/null: nothing to keep writing to).
        out = {}
        for fd in ("1", "2"):
            try:
                path = os.readlink("/proc/%d/fd/%s" % (op["pid"], fd))
            except OSError:
                path = None
            if path is not None and (not path.startswith("/") or not os.path.isfile(path)):
                path = None
            out[fd] = path
    elif kind == "knob":
        # Is FLAG (and VALUE) a string literal in the trainer's script or in the modules
        # it imports from its own tree (its directory, the directories it puts on
        # sys.path)? That is where an argparse/click option is declared. Nothing is run.
        # With PATTERN instead of FLAG: the first literal the pattern matches whole
        # (the option's name is the trainer's own), sorted for a stable answer.
        import ast, re
        like = re.compile(op["pattern"]) if op.get("pattern") else None
        roots = [os.path.dirname(os.path.abspath(op["script"]))]
        todo, seen, found, literal = [os.path.abspath(op["script"])], [], None, None
        while todo and len(seen) < 300:
            path = todo.pop(0)
            if path in seen:
                continue
            seen.append(path)
            try:
                with open(path, "rb") as fh:
                    tree = ast.parse(fh.read())
            except (OSError, SyntaxError, ValueError):
                continue
            strings = set()
            for n in ast.walk(tree):
                if isinstance(n, ast.Constant) and isinstance(n.value, str):
                    strings.add(n.value)
                if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                        and n.func.attr in ("insert", "append") and n.args
                        and isinstance(n.args[-1], ast.Constant)
                        and isinstance(n.args[-1].value, str)):
                    roots.append(n.args[-1].value)
            if like is not None:
                named = sorted(t for t in strings if like.fullmatch(t))
                if named:
                    found, literal = path, named[0]
                    break
            elif op["flag"] in strings and (op.get("value") is None or op["value"] in strings):
                found, literal = path, op["flag"]
                break
            here = os.path.dirname(path)
            for n in ast.walk(tree):
                names, bases = [], roots
                if isinstance(n, ast.Import):
                    names = [a.name for a in n.names]
                elif isinstance(n, ast.ImportFrom):
                    stem = n.module or ""
                    names = [stem + "." + a.name if stem else a.name for a in n.names]
                    names = names + ([stem] if stem else [])
                    if n.level:
                        up = here
                        for _ in range(n.level - 1):
                            up = os.path.dirname(up)
                        bases = [up]
                for name in names:
                    for base in bases:
                        cand = os.path.join(base, *name.split("."))
                        for f in (cand + ".py", os.path.join(cand, "__init__.py")):
                            if os.path.isfile(f) and f not in seen:
                                todo.append(f)
        out = {"found": found, "literal": literal, "searched": len(seen)}
    elif kind == "stop":
        pid = op["pid"]
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.time() + op["timeout"]
        alive = True
        while time.time() < deadline:
            # Gone, or a zombie its parent has not reaped yet: it has stopped either way.
            try:
                with open("/proc/%d/stat" % pid) as fh:
                    state = fh.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                state = "gone"
            if state in ("Z", "X", "gone"):
                alive = False
                break
            beat()
            time.sleep(0.2)
        if alive:
            os.kill(pid, signal.SIGKILL)
        out = {"stopped": True, "killed": alive}
    elif kind == "start":
        fd, name = under(op["log"], create=True)
        try:
            log = os.fdopen(os.open(name, APPEND, 0o644, dir_fd=fd), "ab")
        finally:
            os.close(fd)
        env = dict(os.environ)
        env.update(op.get("env") or {})
        proc = subprocess.Popen(op["argv"], cwd=op["cwd"], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        out = {"pid": proc.pid, "start": proc_start(proc.pid)}
    elif kind == "wait":
        # Not our child (the starter has exited): poll, and count a zombie as gone.
        deadline = time.time() + op["timeout"]
        exited = False
        while time.time() < deadline:
            try:
                with open("/proc/%d/stat" % op["pid"]) as fh:
                    state = fh.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                state = "gone"
            if state in ("Z", "X", "gone"):
                exited = True
                break
            beat()
            time.sleep(0.5)
        out = {"exited": exited}
    elif kind == "read_from":
        data, size = read_regular(op["path"], op["offset"], op["limit"])
        out = {"data": base64.b64encode(data).decode(), "size": size}
    else:
        raise ValueError("unknown op " + kind)
    print(json.dumps({"ok": True, **out}))
except Refused as exc:
    print(json.dumps({"ok": False, "error": str(exc), "refused": True}))
except Exception as exc:
    print(json.dumps({"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}))
"""


# The operations that write: each is confined under the workspace (``Remote.confined``).
_WRITES = frozenset({"write", "lock", "unlock", "start", "break", "remove"})


class Remote:
    """The operations, on one target. ``root``: the workspace every write is confined to
    (``confined``); a Remote without one reads and never writes."""

    def __init__(
        self, transport: Transport, interpreter: str = "python3", root: str | None = None
    ) -> None:
        self.transport = transport
        self.interpreter = interpreter
        self.root = root

    def confined(self, root: str) -> Remote:
        """This target's operations, every write confined under ``root``: reached from it
        one directory at a time with no symlink followed, created with ``O_EXCL``."""
        bound = copy.copy(self)  # a subclass (a test's) stays itself
        bound.root = root
        return bound

    def _op(self, *, limit_s: float = 60.0, **op: Any) -> dict[str, Any]:
        if op["op"] in _WRITES and self.root is None:
            where = op.get("path") or op.get("log")
            raise ApplyError(f"{op['op']} {where}: no workspace to confine it to")
        if self.root is not None:
            op["root"] = self.root  # a heartbeat (``beat``) is confined the same way
        # -B: the operations write no bytecode on the target.
        argv = [self.interpreter, "-B", "-c", _PROGRAM, json.dumps(op)]
        result = self.transport.run(argv, timeout=limit_s)
        try:
            answer = json.loads(result.stdout.decode().strip().splitlines()[-1])
        except (ValueError, IndexError):
            stderr = result.stderr.decode(errors="replace").strip()[-300:]
            raise ApplyError(
                f"{op['op']} on {self.transport.name}: no answer (rc {result.rc}): {stderr}"
            ) from None
        if not answer.get("ok"):
            # A refusal (a symlink, a FIFO, a path outside the workspace) changed nothing:
            # the target's state is what must change, hence exit 2.
            error = ApplyRefused if answer.get("refused") else ApplyError
            raise error(
                f"{op['op']} {op.get('path', '')} on {self.transport.name}: {answer.get('error')}"
            )
        return dict(answer)

    def kinds(self, *paths: str) -> list[str]:
        """What each of ``paths`` is, its link not followed: missing, file, link,
        directory or special (one round trip for all of them)."""
        return [str(k) for k in self._op(op="kinds", paths=list(paths))["kinds"]]

    def read(self, path: str) -> bytes:
        return base64.b64decode(self._op(op="read", path=path)["data"])

    def write(self, path: str, data: bytes, *, follow_link: bool = False) -> str:
        """Write ``path`` whole (a temporary file in its directory, fsynced, renamed over
        it, the directory fsynced), keeping its mode and owner; its sha256 after.
        ``follow_link``: a ``path`` that is a symlink is written where it points (inside
        the workspace too), so the link stays a link."""
        return str(
            self._op(
                op="write", path=path, data=base64.b64encode(data).decode(), follow=follow_link
            )["sha256"]
        )

    def remove(self, path: str) -> None:
        """Remove the regular file ``path`` (a file a fix created), if it is there."""
        self._op(op="remove", path=path)

    def sha256(self, path: str) -> str | None:
        answer = self._op(op="stat", path=path)
        return answer.get("sha256") if answer["exists"] else None

    def lock(self, path: str, owner: str) -> tuple[bool, str]:
        locked, holder, _ = self.try_lock(path, owner)
        return locked, holder

    def try_lock(self, path: str, owner: str) -> tuple[bool, str, float | None]:
        """Take the lock ``path`` for ``owner``; else who holds it and how long ago its
        heartbeat (the lock's mtime, target clock) was last touched."""
        answer = self._op(op="lock", path=path, owner=owner)
        age = answer.get("age")
        return (
            bool(answer["locked"]),
            str(answer.get("owner", "")),
            float(age) if isinstance(age, int | float) else None,
        )

    def break_lock(self, path: str) -> None:
        """Move a stale lock out of the way (renamed beside it, kept for the record)."""
        self._op(op="break", path=path)

    def started_at(self, pid: int) -> str | None:
        """The process's start time (clock ticks since boot), to tell it from a later
        process given the same pid; None when there is no such process."""
        start = self._op(op="proc", pid=pid).get("start")
        return None if start is None else str(start)

    def unlock(self, path: str) -> None:
        self._op(op="unlock", path=path)

    def running_pid(self, pid_file: str) -> int | None:
        answer = self._op(op="pid", path=pid_file)
        return int(answer["pid"]) if answer["alive"] else None

    def alive(self, pid: int) -> bool:
        return bool(self._op(op="alive", pid=pid)["alive"])

    def stdio(self, pid: int) -> dict[str, str | None]:
        """The files ``pid``'s stdout ("1") and stderr ("2") are written to, if files."""
        answer = self._op(op="stdio", pid=pid)
        return {fd: answer.get(fd) for fd in ("1", "2")}

    def knob(self, script: str, flag: str, value: str | None = None) -> str | None:
        """The file of the trainer's own code (``script`` and the modules it imports from
        its tree) that declares ``flag`` (with ``value`` among its literals), or None."""
        found = self._op(op="knob", script=script, flag=flag, value=value)["found"]
        return None if found is None else str(found)

    def knob_like(self, script: str, pattern: str) -> tuple[str, str] | None:
        """The file of the trainer's own code (as ``knob`` searches) holding a literal
        ``pattern`` matches whole, and that literal (the option's name as the trainer
        spells it), or None."""
        answer = self._op(op="knob", script=script, flag=None, pattern=pattern)
        if answer["found"] is None:
            return None
        return str(answer["found"]), str(answer["literal"])

    def stop(self, pid: int, timeout: float = 60.0, beat: str | None = None) -> bool:
        """SIGTERM (the trainer checkpoints and exits), SIGKILL after ``timeout``;
        ``beat``: a lock whose heartbeat is kept while it waits."""
        return bool(
            self._op(limit_s=timeout + 30, op="stop", pid=pid, timeout=timeout, beat=beat)["killed"]
        )

    def start(
        self, argv: Sequence[str], cwd: str, log: str, env: dict[str, str] | None = None
    ) -> int:
        return self.start_process(argv, cwd, log, env)[0]

    def start_process(
        self, argv: Sequence[str], cwd: str, log: str, env: dict[str, str] | None = None
    ) -> tuple[int, str | None]:
        """Start ``argv`` detached, its output appended to ``log``: its pid and start time."""
        answer = self._op(op="start", argv=list(argv), cwd=cwd, log=log, env=env or {})
        start = answer.get("start")
        return int(answer["pid"]), None if start is None else str(start)

    def wait(self, pid: int, timeout: float, beat: str | None = None) -> bool:
        """Whether ``pid`` ended within ``timeout`` seconds; ``beat`` as for ``stop``."""
        return bool(
            self._op(limit_s=timeout + 30, op="wait", pid=pid, timeout=timeout, beat=beat)["exited"]
        )

    def size(self, path: str) -> int:
        answer = self._op(op="stat", path=path)
        return int(answer["size"]) if answer["exists"] else 0

    def read_from(self, path: str, offset: int, limit: int = 64 << 20) -> bytes:
        """Bytes of ``path`` from ``offset`` (what a run appended since)."""
        return base64.b64decode(
            self._op(op="read_from", path=path, offset=offset, limit=limit)["data"]
        )
