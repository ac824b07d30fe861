"""The trainer's threads as py-spy's stack samples show them, for the live probe: one
nonblocking dump at a time, each thread's samples classified (``_activities``) and
counted, a representative stack kept per activity, and the dumps that caught one thread
FX tracing while another was inside a compiled function.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from . import _activities

MAX_FRAMES = 24  # per representative stack
# Samples that must fail, none read, before a process is given up on: a nonblocking dump
# can fail twice in a row on a busy process (py-spy panicked, its backtrace ending
# "10: main"), while a refusal (no permission, not Python) fails every time. A
# clean-clone run lost a live Trainer's whole window to one bad first sample when one
# failure was enough. A dump that timed out is not tried again: each costs DUMP_TIMEOUT.
GIVE_UP_AFTER = 4
DUMP_TIMEOUT = 10.0
NOT_RUN = "py-spy did not run"
LINE_MAX = 200


def dump(py_spy: str, pid: int) -> tuple[list[Any] | None, str | None]:
    """One nonblocking dump of ``pid``'s threads, or why there is none."""
    try:
        run = subprocess.run(
            [py_spy, "dump", "--pid", str(pid), "--json", "--nonblocking"],
            capture_output=True,
            timeout=DUMP_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{NOT_RUN}: {exc}"
    if run.returncode != 0:
        said = (run.stderr or run.stdout).decode("utf-8", "replace").strip().splitlines()
        # Its error line, or a panic's first line: not the last line of a backtrace.
        told = [t for t in said if t.startswith(("Error", "error")) or "panicked" in t]
        line = (told or said or [f"py-spy exited {run.returncode}"])[0]
        return None, line.strip()[:300]
    try:
        threads = json.loads(run.stdout)
    except ValueError:
        return None, "py-spy printed no JSON"
    return (threads if isinstance(threads, list) else None), None


_LINES: dict[tuple[str, int], str | None] = {}


def source_line(filename: str, line: int) -> str | None:
    """The line as the target's file has it (None: unreadable)."""
    key = (filename, line)
    if key not in _LINES:
        text = None
        try:
            with open(filename, "rb") as f:
                for i, raw in enumerate(f, 1):
                    if i == line:
                        text = raw[:LINE_MAX].decode("utf-8", "replace").strip()
                        break
                    if i > 100_000:
                        break
        except OSError:
            pass
        _LINES[key] = text
    return _LINES[key]


class Thread:
    """One thread's samples over the window: how many fell in each activity, and the
    stack and own frame that stand for them."""

    def __init__(self, tid: int, name: str) -> None:
        self.tid, self.name = tid, name
        self.samples = 0
        self.active = 0
        self.gil = 0
        self.activities: dict[str, int] = {}
        self.first: dict[str, list[Any]] = {}  # activity -> its first sample's frames
        self.own: dict[str, int] = {}  # "file:line function" of the innermost own frame
        self.own_innermost = 0  # samples whose innermost frame is the trainer's own code

    def add(self, thread: dict[str, Any]) -> str:
        """Count one sample of this thread; its activity."""
        frames = [f for f in thread.get("frames") or [] if isinstance(f, dict)]
        top = frames[0] if frames else {}
        text = source_line(str(top.get("filename") or ""), int(top.get("line") or 0))
        active = thread.get("active")
        activity = _activities.classify(frames, text, active if isinstance(active, bool) else None)
        self.samples += 1
        self.active += bool(active)
        self.gil += bool(thread.get("owns_gil"))
        self.activities[activity] = self.activities.get(activity, 0) + 1
        if activity not in self.first:
            self.first[activity] = [
                _frame(f, i == 0, text) for i, f in enumerate(frames[:MAX_FRAMES])
            ]
        own = next(
            (f for f in frames if not _activities.is_library(str(f.get("filename") or ""))), None
        )
        self.own_innermost += own is not None and own is top
        if own is not None:
            where = f"{own.get('filename')}:{own.get('line')} {own.get('name')}"
            self.own[where] = self.own.get(where, 0) + 1
        return activity

    def summary(self, cpu_s: float | None, seconds: float) -> dict[str, Any]:
        main = (
            max(self.activities, key=lambda a: (self.activities[a], a)) if self.activities else None
        )
        own = max(self.own, key=lambda k: (self.own[k], k)) if self.own else None
        return {
            "tid": self.tid,
            "name": self.name,
            "samples": self.samples,
            "active_samples": self.active,
            "gil_samples": self.gil,
            "activities": dict(sorted(self.activities.items())),
            "activity": main,
            "activity_share": round(self.activities[main] / self.samples, 3) if main else None,
            "own_frame": own,
            "own_frame_samples": self.own.get(own, 0) if own else 0,
            "own_innermost_samples": self.own_innermost,
            "stack": self.first.get(main, []) if main else [],
            "cpu_s": cpu_s,
            "cpu_share": round(cpu_s / seconds, 3) if cpu_s is not None and seconds > 0 else None,
        }


def _frame(frame: dict[str, Any], innermost: bool, text: str | None) -> dict[str, Any]:
    out = {
        "function": str(frame.get("name") or "?")[:120],
        "file": str(frame.get("filename") or "?")[:300],
        "line": frame.get("line"),
    }
    if innermost:
        out["text"] = text
    return out


CALLING_COMPILED = ("compiled_code", "eager_attention")


def _overlap(found: dict[str, Any], now: dict[int, str]) -> None:
    """Count a dump in which a thread was FX tracing while another was inside a compiled
    function (running it, or its eager fallback), and keep the first such pair."""
    tracers = sorted(tid for tid, a in now.items() if a == "fx_tracing")
    callers = sorted(tid for tid, a in now.items() if a in CALLING_COMPILED)
    pair = next(((t, c) for t in tracers for c in callers if c != t), None)
    if pair is None:
        return
    found["samples"] += 1
    if "tracer" not in found:
        found["tracer"], found["caller"] = pair
        found["caller_activity"] = now[pair[1]]


class Stacks:
    """What the window's dumps found, per process: its threads, the last refusal, the
    samples that failed, and the dumps that caught the FX race."""

    def __init__(self, pids: list[int]) -> None:
        self.threads: dict[int, dict[int, Thread]] = {p: {} for p in pids}
        self.errors: dict[int, str] = {}  # the last refusal, per process
        self.failed: dict[int, int] = {p: 0 for p in pids}
        self.gave_up: set[int] = set()
        self.overlaps: dict[int, dict[str, Any]] = {}

    def sample(self, py_spy: str, pid: int) -> None:
        """One sample of ``pid``'s threads, each counted under its activity."""
        threads = self.threads[pid]
        if pid in self.gave_up and not threads:
            return  # never read, every time asked: a refusal, not bad luck
        dumped, why = dump(py_spy, pid)
        if dumped is None:
            # A nonblocking dump can catch the interpreter mid-update and fail; one more
            # try, then the sample is lost, not the process.
            dumped, why = dump(py_spy, pid)
        if dumped is None:
            self.errors[pid] = why or "no dump"
            self.failed[pid] += 1
            if self.failed[pid] >= GIVE_UP_AFTER or self.errors[pid].startswith(NOT_RUN):
                self.gave_up.add(pid)
            return
        now: dict[int, str] = {}  # this dump: each thread's activity
        for t in dumped:
            if not isinstance(t, dict):
                continue
            tid = int(t.get("os_thread_id") or 0)
            seen = threads.setdefault(tid, Thread(tid, str(t.get("thread_name") or "")))
            now[tid] = seen.add(t)
        _overlap(self.overlaps.setdefault(pid, {"samples": 0}), now)
