# dflash-doctor's file and process operations on a target (playbooks/remote.py sends this
# file as it is, to the target's Python, with the operation's JSON as its one argument; it
# answers one JSON line). Standard library only, Python 3.8 and later; nothing runs on
# import.
from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

# The operation this run performs (its JSON, the one argument): read by under() and beat().
op: dict[str, Any] = {}
CAP = 256 << 20
NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
# What the "kinds" operation calls a path, by its file type (lstat's: a link is a link).
KINDS = {stat.S_IFLNK: "link", stat.S_IFREG: "file", stat.S_IFDIR: "directory"}


class Refused(Exception):
    pass


def sha(path: str) -> str:
    h = hashlib.sha256()
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def open_regular(path: str, dir_fd: int | None = None) -> int:
    # Never blocks on a FIFO, never reads a device: only a regular file is read.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK, dir_fd=dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Refused(f"{path} is not a regular file")
    return fd


def read_regular(path: str, offset: int = 0, limit: int = CAP) -> tuple[bytes, int]:
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if offset == 0 and limit == CAP and size > CAP:
            raise Refused(f"{path} is {size} bytes, over the {CAP} the doctor reads")
        fh.seek(offset)
        return fh.read(limit), size


def open_dir(name: str, dir_fd: int, create: bool) -> int:
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


def under(
    path: str,
    follow_last: bool = False,
    create: bool = False,
    depth: int = 0,
    allow_dir: bool = False,
) -> tuple[int, str]:
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
        raise Refused(f"{path} is outside the workspace {root}: the doctor writes only under it")
    parts = rel.split("/")
    fd = os.open(real_root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i, part in enumerate(parts[:-1]):
            try:
                nxt = open_dir(part, fd, create)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    where = os.path.join(real_root, *parts[: i + 1])
                    raise Refused(
                        f"{where} is a symlink or not a directory: the doctor does "
                        "not write through it"
                    ) from None
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
                raise Refused(f"{path} is a symlink: the doctor does not write through it")
            target = os.path.realpath(path)
            os.close(fd)
            fd = -1
            return under(target, follow_last=False, create=create, depth=1)
        if not stat.S_ISREG(st.st_mode) and not (allow_dir and stat.S_ISDIR(st.st_mode)):
            raise Refused(f"{path} is not a regular file")
        return fd, name
    except BaseException:
        if fd >= 0:
            os.close(fd)
        raise


def write_under(path: str, data: bytes, follow_last: bool = False) -> str:
    fd, name = under(path, follow_last=follow_last, create=True)
    try:
        try:
            old = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        tmp = f".{name[:100]}.dflash-doctor-{os.urandom(6).hex()}.tmp"
        out = os.open(tmp, NEW, 0o600, dir_fd=fd)
        try:
            with os.fdopen(out, "wb") as fh:
                fh.write(data)
                fh.flush()
                if old is not None:
                    # The file keeps its mode and its owner (an apply runs as root).
                    os.fchmod(fh.fileno(), old.st_mode & 0o7777)
                    with contextlib.suppress(PermissionError):
                        os.fchown(fh.fileno(), old.st_uid, old.st_gid)
                else:
                    os.fchmod(fh.fileno(), 0o644)
                os.fsync(fh.fileno())
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
            raise
        os.fsync(fd)
        h = hashlib.sha256()
        with os.fdopen(open_regular(name, dir_fd=fd), "rb") as fh:
            h.update(fh.read())
        return h.hexdigest()
    finally:
        os.close(fd)


def beat() -> None:
    # The lock's heartbeat: its mtime, touched while a long operation works for it.
    if op.get("beat"):
        fd, name = under(op["beat"], allow_dir=True)
        try:
            os.utime(name, dir_fd=fd, follow_symlinks=False)
        finally:
            os.close(fd)


def running(pid: int) -> bool:
    # A process that has exited but is not reaped yet (a zombie) does not run.
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True  # no /proc to ask: kill(0) said it exists


def exited(pid: int) -> bool:
    """Gone, or a zombie its parent has not reaped yet: stopped either way (what a stop
    and a wait poll for)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def proc_start(pid: int) -> str | None:
    # What tells a process from a later one given the same pid: its start time.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def op_read() -> dict[str, Any]:
    data, _ = read_regular(op["path"])
    return {"data": base64.b64encode(data).decode(), "sha256": hashlib.sha256(data).hexdigest()}


def op_write() -> dict[str, Any]:
    data = base64.b64decode(op["data"])
    return {"sha256": write_under(op["path"], data, follow_last=op.get("follow", False))}


def op_stat() -> dict[str, Any]:
    out: dict[str, Any] = {"exists": os.path.exists(op["path"])}
    if out["exists"]:
        out["size"] = os.path.getsize(op["path"])
        out["sha256"] = sha(op["path"]) if os.path.isfile(op["path"]) else None
    return out


def op_kinds() -> dict[str, Any]:
    kinds = []
    for path in op["paths"]:
        try:
            kinds.append(KINDS.get(stat.S_IFMT(os.lstat(path).st_mode), "special"))
        except FileNotFoundError:
            kinds.append("missing")
    return {"kinds": kinds}


def op_lock() -> dict[str, Any]:
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
                return {"locked": True}
            try:
                with os.fdopen(open_regular("owner", dir_fd=lock_fd), "rb") as fh:
                    owner = fh.read(1 << 16).decode(errors="replace")
            except OSError:
                owner = "unknown"
            age = time.time() - os.stat(name, dir_fd=fd, follow_symlinks=False).st_mtime
            return {"locked": False, "owner": owner, "age": age}
        finally:
            os.close(lock_fd)
    finally:
        os.close(fd)


def op_unlock() -> dict[str, Any]:
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
    return {}


def op_break() -> dict[str, Any]:
    # A stale lock is renamed away, never removed in place: of two runs breaking it at
    # once, one rename wins and the other finds the fresh lock of the winner.
    fd, name = under(op["path"], allow_dir=True)
    try:
        gone = f"{name}.stale-{os.urandom(4).hex()}"
        os.rename(name, gone, src_dir_fd=fd, dst_dir_fd=fd)
        os.fsync(fd)
    finally:
        os.close(fd)
    return {}


def op_remove() -> dict[str, Any]:
    fd, name = under(op["path"])
    try:
        if not stat.S_ISREG(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            raise Refused("{} is not a regular file".format(op["path"]))
        os.unlink(name, dir_fd=fd)
        os.fsync(fd)
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)
    return {}


def op_pid() -> dict[str, Any]:
    try:
        data, _ = read_regular(op["path"], 0, 4096)
        pid = int(data.split()[0])
        alive = running(pid)
        return {"pid": pid if alive else None, "alive": alive}
    except (OSError, ValueError, IndexError, Refused):
        return {"pid": None, "alive": False}


def op_stdio() -> dict[str, Any]:
    # Where a running process's stdout and stderr go: a regular file, or None (a pipe, a
    # terminal, /dev/null: nothing to keep writing to).
    out: dict[str, Any] = {}
    for stream in ("1", "2"):
        try:
            link = os.readlink("/proc/{}/fd/{}".format(op["pid"], stream))
        except OSError:
            link = ""
        out[stream] = link if link.startswith("/") and os.path.isfile(link) else None
    return out


def op_knob() -> dict[str, Any]:
    # Is FLAG (and VALUE) a string literal in the trainer's script or in the modules it
    # imports from its own tree (its directory, the directories it puts on sys.path)?
    # That is where an argparse/click option is declared. Nothing is run. With PATTERN
    # instead of FLAG: the first literal the pattern matches whole (the option's name is
    # the trainer's own), sorted for a stable answer.
    import ast
    import re

    like = re.compile(op["pattern"]) if op.get("pattern") else None
    roots = [os.path.dirname(os.path.abspath(op["script"]))]
    todo: list[str] = [os.path.abspath(op["script"])]
    seen: list[str] = []
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
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr in ("insert", "append")
                and n.args
                and isinstance(n.args[-1], ast.Constant)
                and isinstance(n.args[-1].value, str)
            ):
                roots.append(n.args[-1].value)  # a directory it puts on sys.path
        if like is not None:
            named = sorted(t for t in strings if like.fullmatch(t))
            if named:
                return {"found": path, "literal": named[0], "searched": len(seen)}
        elif op["flag"] in strings and (op.get("value") is None or op["value"] in strings):
            return {"found": path, "literal": op["flag"], "searched": len(seen)}
        todo += [f for f in imported_files(tree, os.path.dirname(path), roots) if f not in seen]
    return {"found": None, "literal": None, "searched": len(seen)}


def imported_files(tree: Any, here: str, roots: list[str]) -> Iterator[str]:
    """The files of the modules TREE imports, under ROOTS (a relative import: above HERE)."""
    import ast

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
                    if os.path.isfile(f):
                        yield f


def exits_within(pid: int, timeout: float, interval: float) -> bool:
    """Whether PID stops within TIMEOUT seconds, polled every INTERVAL: not our child
    (its starter has exited), so a zombie counts as gone."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if exited(pid):
            return True
        beat()
        time.sleep(interval)
    return False


def op_stop() -> dict[str, Any]:
    pid = op["pid"]
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    alive = not exits_within(pid, op["timeout"], 0.2)
    if alive:
        os.kill(pid, signal.SIGKILL)
    return {"stopped": True, "killed": alive}


def op_start() -> dict[str, Any]:
    fd, name = under(op["log"], create=True)
    try:
        log = os.fdopen(os.open(name, APPEND, 0o644, dir_fd=fd), "ab")
    finally:
        os.close(fd)
    env = {**os.environ, **(op.get("env") or {})}
    proc = subprocess.Popen(
        op["argv"],
        cwd=op["cwd"],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    return {"pid": proc.pid, "start": proc_start(proc.pid)}


def op_read_from() -> dict[str, Any]:
    data, size = read_regular(op["path"], op["offset"], op["limit"])
    return {"data": base64.b64encode(data).decode(), "size": size}


# Each operation by the name its JSON gives (its "op"): what it answers.
OPERATIONS: dict[str, Callable[[], dict[str, Any]]] = {
    "read": op_read,
    "write": op_write,
    "stat": op_stat,
    "kinds": op_kinds,
    "lock": op_lock,
    "unlock": op_unlock,
    "break": op_break,
    "remove": op_remove,
    "proc": lambda: {"start": proc_start(op["pid"])},
    "pid": op_pid,
    "alive": lambda: {"alive": running(op["pid"])},
    "stdio": op_stdio,
    "knob": op_knob,
    "stop": op_stop,
    "start": op_start,
    "wait": lambda: {"exited": exits_within(op["pid"], op["timeout"], 0.5)},
    "read_from": op_read_from,
}


def perform(kind: str) -> dict[str, Any]:
    """The operation ``kind`` on ``op``'s arguments: what it answers."""
    operation = OPERATIONS.get(kind)
    if operation is None:
        raise ValueError("unknown op " + kind)
    return operation()


def main() -> None:
    op.update(json.loads(sys.argv[1]))
    try:
        out = perform(op["op"])
        print(json.dumps({"ok": True, **out}))
    except Refused as exc:
        print(json.dumps({"ok": False, "error": str(exc), "refused": True}))
    except Exception as exc:
        print(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}))


if __name__ == "__main__":
    main()
