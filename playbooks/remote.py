"""File and process operations on a target, each one command through its transport.

A playbook changes a target only through these, so every change crosses the same
transport (local, SSH, container hops) and lands in the session's transcript like any
other command. Each operation is a small stdlib-only Python program sent on stdin to the
target's interpreter; it answers one JSON line. A failed operation raises ``ApplyError``
with what failed and where.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from tools.errors import DoctorError
from tools.transport.base import Transport


class ApplyError(DoctorError):
    """A change on the target could not be made (or undone) as planned."""


_PROGRAM = r"""
import base64, hashlib, json, os, signal, subprocess, sys, time
op = json.loads(sys.argv[1])
kind = op["op"]
def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
try:
    if kind == "read":
        with open(op["path"], "rb") as fh:
            data = fh.read()
        out = {"data": base64.b64encode(data).decode(), "sha256": hashlib.sha256(data).hexdigest()}
    elif kind == "write":
        data = base64.b64decode(op["data"])
        os.makedirs(os.path.dirname(op["path"]) or ".", exist_ok=True)
        tmp = op["path"] + ".dflash-doctor.tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if os.path.exists(op["path"]):
            os.chmod(tmp, os.stat(op["path"]).st_mode & 0o7777)
        os.replace(tmp, op["path"])
        out = {"sha256": sha(op["path"])}
    elif kind == "stat":
        out = {"exists": os.path.exists(op["path"])}
        if out["exists"]:
            out["size"] = os.path.getsize(op["path"])
            out["sha256"] = sha(op["path"]) if os.path.isfile(op["path"]) else None
    elif kind == "lock":
        os.makedirs(os.path.dirname(op["path"]), exist_ok=True)
        try:
            os.mkdir(op["path"])
            with open(os.path.join(op["path"], "owner"), "w") as fh:
                fh.write(op["owner"])
            out = {"locked": True}
        except FileExistsError:
            try:
                owner = open(os.path.join(op["path"], "owner")).read()
            except OSError:
                owner = "unknown"
            out = {"locked": False, "owner": owner}
    elif kind == "unlock":
        try:
            os.remove(os.path.join(op["path"], "owner"))
        except OSError:
            pass
        os.rmdir(op["path"])
        out = {}
    elif kind == "pid":
        try:
            pid = int(open(op["path"]).read().split()[0])
            os.kill(pid, 0)
            out = {"pid": pid, "alive": True}
        except (OSError, ValueError, IndexError):
            out = {"pid": None, "alive": False}
    elif kind == "alive":
        try:
            os.kill(op["pid"], 0)
            alive = True
        except ProcessLookupError:
            alive = False
        except PermissionError:
            alive = True
        out = {"alive": alive}
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
        import ast
        roots = [os.path.dirname(os.path.abspath(op["script"]))]
        todo, seen, found = [os.path.abspath(op["script"])], [], None
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
            if op["flag"] in strings and (op.get("value") is None or op["value"] in strings):
                found = path
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
        out = {"found": found, "searched": len(seen)}
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
            time.sleep(0.2)
        if alive:
            os.kill(pid, signal.SIGKILL)
        out = {"stopped": True, "killed": alive}
    elif kind == "start":
        log = open(op["log"], "ab")
        env = dict(os.environ)
        env.update(op.get("env") or {})
        proc = subprocess.Popen(op["argv"], cwd=op["cwd"], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        out = {"pid": proc.pid}
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
            time.sleep(0.5)
        out = {"exited": exited}
    elif kind == "read_from":
        with open(op["path"], "rb") as fh:
            fh.seek(op["offset"])
            data = fh.read(op["limit"])
        out = {"data": base64.b64encode(data).decode(), "size": os.path.getsize(op["path"])}
    else:
        raise ValueError("unknown op " + kind)
    print(json.dumps({"ok": True, **out}))
except Exception as exc:
    print(json.dumps({"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}))
"""


class Remote:
    def __init__(self, transport: Transport, interpreter: str = "python3") -> None:
        self.transport = transport
        self.interpreter = interpreter

    def _op(self, *, limit_s: float = 60.0, **op: Any) -> dict[str, Any]:
        argv = [self.interpreter, "-c", _PROGRAM, json.dumps(op)]
        result = self.transport.run(argv, timeout=limit_s)
        try:
            answer = json.loads(result.stdout.decode().strip().splitlines()[-1])
        except (ValueError, IndexError):
            stderr = result.stderr.decode(errors="replace").strip()[-300:]
            raise ApplyError(
                f"{op['op']} on {self.transport.name}: no answer (rc {result.rc}): {stderr}"
            ) from None
        if not answer.get("ok"):
            raise ApplyError(
                f"{op['op']} {op.get('path', '')} on {self.transport.name}: {answer.get('error')}"
            )
        return dict(answer)

    def read(self, path: str) -> bytes:
        return base64.b64decode(self._op(op="read", path=path)["data"])

    def write(self, path: str, data: bytes) -> str:
        return str(self._op(op="write", path=path, data=base64.b64encode(data).decode())["sha256"])

    def sha256(self, path: str) -> str | None:
        answer = self._op(op="stat", path=path)
        return answer.get("sha256") if answer["exists"] else None

    def lock(self, path: str, owner: str) -> tuple[bool, str]:
        answer = self._op(op="lock", path=path, owner=owner)
        return bool(answer["locked"]), str(answer.get("owner", ""))

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

    def stop(self, pid: int, timeout: float = 60.0) -> bool:
        """SIGTERM (the trainer checkpoints and exits), SIGKILL after ``timeout``."""
        return bool(self._op(limit_s=timeout + 30, op="stop", pid=pid, timeout=timeout)["killed"])

    def start(
        self, argv: Sequence[str], cwd: str, log: str, env: dict[str, str] | None = None
    ) -> int:
        return int(self._op(op="start", argv=list(argv), cwd=cwd, log=log, env=env or {})["pid"])

    def wait(self, pid: int, timeout: float) -> bool:
        """Whether ``pid`` ended within ``timeout`` seconds."""
        return bool(self._op(limit_s=timeout + 30, op="wait", pid=pid, timeout=timeout)["exited"])

    def size(self, path: str) -> int:
        answer = self._op(op="stat", path=path)
        return int(answer["size"]) if answer["exists"] else 0

    def read_from(self, path: str, offset: int, limit: int = 64 << 20) -> bytes:
        """Bytes of ``path`` from ``offset`` (what a run appended since)."""
        return base64.b64decode(
            self._op(op="read_from", path=path, offset=offset, limit=limit)["data"]
        )
