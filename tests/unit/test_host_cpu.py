"""The host's CPU and memory as ``/proc`` states them (tools/probes/_host_cpu.py): CPU
ticks per thread and per process, the host's busy and total ticks, the threads queued
for the cores, a process's children, memory and its pressure, and what the trainer's
processes and the host's others used over a window. Each test writes the ``/proc``
files it needs in proc(5)'s formats under a directory of its own, and the module reads
there; expected values are worked out from those files."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import pytest

from tools.probes import _host_cpu
from tools.probes._host_cpu import (
    children,
    cores,
    cpu_times,
    host_load,
    host_ticks,
    memory,
    runnable,
    share,
    thread_ticks,
)


class FakeOS:
    """``os`` as the module sees it: ``/proc`` listed from the test's directory, this
    process's pid, the load averages and the CPU count as the test sets them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.pid = 300
        self.load: tuple[float, float, float] | None = (1.0, 0.5, 0.25)
        self.cpus = 8

    def listdir(self, path: str) -> list[str]:
        return sorted(os.listdir(self.where(path)))

    def where(self, path: str) -> str:
        assert path.startswith("/proc"), path
        return str(self.root) + path[len("/proc") :]

    def getpid(self) -> int:
        return self.pid

    def getloadavg(self) -> tuple[float, float, float]:
        if self.load is None:
            raise OSError("no load average here")
        return self.load

    def cpu_count(self) -> int:
        return self.cpus


@pytest.fixture
def proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeOS:
    root = tmp_path / "proc"
    root.mkdir()
    fake = FakeOS(root)

    def fake_open(path: str, mode: str = "r", *args: Any, **kwargs: Any) -> IO[Any]:
        return open(fake.where(path), mode, *args, **kwargs)

    monkeypatch.setattr(_host_cpu, "os", fake)
    monkeypatch.setattr(_host_cpu, "open", fake_open, raising=False)
    return fake


Write = Callable[[str, str], None]


@pytest.fixture
def write(proc: FakeOS) -> Write:
    """Write ``text`` to ``/proc/<relative>`` of the test's own tree."""

    def put(relative: str, text: str) -> None:
        path = proc.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    return put


def stat_line(pid: int, name: str, ppid: int, utime: int, stime: int) -> str:
    """A /proc/PID/stat line: pid, (comm), state, ppid, pgrp, session, tty_nr, tpgid,
    flags, minflt, cminflt, majflt, cmajflt, utime, stime, then the rest."""
    return f"{pid} ({name}) S {ppid} {pid} {pid} 0 -1 4194560 900 0 7 0 {utime} {stime} 0 0 20 0\n"


def test_each_threads_ticks_are_user_plus_system_with_its_name(write: Write) -> None:
    """Per thread of the process: utime + stime and the name ``comm`` gives (``?`` where
    it cannot be read); a thread whose stat is cut short is left out."""
    write("100/task/100/stat", stat_line(100, "python", 1, 250, 50))
    write("100/task/100/comm", "python\n")
    write("100/task/101/stat", stat_line(101, "pt_autograd_0", 1, 7, 3))
    write("100/task/102/stat", "102 (short) S 1 2 3\n")
    write("100/task/102/comm", "short\n")
    assert thread_ticks(100) == {100: (300, "python"), 101: (10, "?")}


def test_a_process_that_is_gone_has_no_threads(proc: FakeOS) -> None:
    """A pid with no /proc entry (it exited) gives no threads, not an error."""
    assert thread_ticks(4242) == {}


def test_every_process_on_the_host_is_read_by_its_stat(write: Write) -> None:
    """Each numeric /proc entry is a process: its ticks and command name (the name up
    to the last parenthesis, so a name holding ``) `` stays whole, clipped to 64
    characters); other entries and a process whose stat is gone are passed over."""
    write("100/stat", stat_line(100, "my) app", 1, 10, 5))
    write("200/stat", stat_line(200, "n" * 70, 1, 1, 1))
    write("300/status", "no stat here\n")
    write("cpuinfo", "processor: 0\n")
    write("self/stat", stat_line(999, "self", 1, 0, 0))
    assert host_ticks() == {100: (15, "my) app"), 200: (2, "n" * 64)}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cpu  100 0 50 800 20 5 5 0 0 0\ncpu0 50 0 25 400 10 2 3 0 0 0\n", (160, 980)),
        ("cpu  1 2 3 4 5 6 7 8\n", (27, 36)),
        ("cpu0 100 0 50 800 20 5 5 0 0 0\n", None),
        ("cpu  100 0 50 800\n", None),
        ("cpu  100 zero 50 800 20 5 5 0\n", None),
    ],
    ids=["all-cores-line", "eight-fields", "not-the-total-line", "too-few-fields", "not-numbers"],
)
def test_the_hosts_busy_ticks_are_all_but_idle_and_iowait(
    write: Write, text: str, expected: tuple[int, int] | None
) -> None:
    """From /proc/stat's ``cpu`` line: the total of its first eight fields, and busy as
    that total less idle (4th) and iowait (5th); a line that is not that gives None."""
    write("stat", text)
    assert cpu_times() == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cpu  1 2 3 4 5 6 7 8\nprocs_running 3\nprocs_blocked 0\n", 2),
        ("procs_running 1\n", 0),
        ("procs_running 0\n", 0),
        ("cpu  1 2 3 4 5 6 7 8\n", None),
        ("procs_running many\n", None),
    ],
    ids=["three-running", "only-this-probe", "none-running", "no-such-line", "not-a-number"],
)
def test_the_queue_for_the_cores_leaves_this_probe_out(
    write: Write, text: str, expected: int | None
) -> None:
    """/proc/stat's ``procs_running`` less this probe's own thread (never below zero);
    None where the line is missing or unreadable."""
    write("stat", text)
    assert runnable() == expected


def test_a_processs_children_are_read_from_its_main_thread(write: Write) -> None:
    """The children file of the main thread lists the child pids; a process without one
    (or gone) has none."""
    write("100/task/100/children", "101 102 ")
    assert children(100) == [101, 102]
    assert children(200) == []


def test_memory_and_its_pressure_are_read_in_bytes_and_percent(write: Write) -> None:
    """MemTotal and MemAvailable in bytes (/proc/meminfo gives kB); the share of the
    last 10 s that some and all tasks stalled on memory."""
    write("meminfo", "MemTotal:       16384 kB\nMemFree:  1 kB\nMemAvailable:    8192 kB\n")
    write(
        "pressure/memory",
        "some avg10=1.50 avg60=0.00 avg300=0.00 total=123\n"
        "full avg10=0.25 avg60=0.00 avg300=0.00 total=45\n",
    )
    assert memory() == {
        "total_bytes": 16_777_216,
        "available_bytes": 8_388_608,
        "pressure": {"some_avg10": 1.5, "full_avg10": 0.25},
    }


def test_memory_without_pressure_information_says_none(write: Write) -> None:
    """A kernel that keeps no pressure information, or a meminfo line that cannot be
    read, leaves those values None and keeps the rest."""
    write("meminfo", "MemTotal:       16384 kB\nMemAvailable: lots\n")
    assert memory() == {"total_bytes": 16_777_216, "available_bytes": None, "pressure": None}


BEFORE = {1: (100, "a"), 2: (50, "b")}
AFTER = {1: (300, "a"), 2: (150, "b"), 3: (999, "c")}


@pytest.mark.parametrize(
    ("pids", "seconds", "expected"),
    [([1, 2, 3], 2.0, 1.5), ([2], 4.0, 0.25), ([3], 2.0, None), ([1], 0.0, None)],
    ids=["together", "one", "only-read-after", "no-window"],
)
def test_the_cores_processes_used_together(
    pids: list[int], seconds: float, expected: float | None
) -> None:
    """The ticks each process used between the two reads, in seconds (100 ticks a
    second), summed over the window: processes 1 and 2 used 2 s and 1 s of 2 s, 1.5
    cores. A process not read both times counts for nothing; none at all, or a window of
    no length, is None."""
    assert share(BEFORE, AFTER, pids, seconds, 100.0) == expected


@pytest.mark.parametrize(
    ("before", "after", "ready", "expected"),
    [
        ((100, 1000), (160, 1100), [3, None, 1, 2], (0.6, [1, 2, 3], 2)),
        ((100, 1000), (160, 1100), [4, 1], (0.6, [1, 4], 4)),
        (None, (160, 1100), [None], (None, [], None)),
        ((100, 1000), (100, 1000), [], (None, [], None)),
    ],
    ids=["busy-and-queue", "even-count-upper-median", "no-first-read", "no-ticks-passed"],
)
def test_how_busy_the_cores_were_and_the_queue_for_them(
    before: tuple[int, int] | None,
    after: tuple[int, int] | None,
    ready: list[int | None],
    expected: tuple[float | None, list[int], int | None],
) -> None:
    """Busy ticks over all ticks between the reads (60 of 100: 0.6); the runnable counts
    read, sorted, and their median (the upper one of an even count); None where the
    reads cannot say."""
    busy, counts, median = expected
    assert cores(before, after, ready) == {
        "cores_busy": busy,
        "runnable": counts,
        "runnable_median": median,
    }


def test_the_hosts_other_busy_processes_leave_out_the_trainer_and_the_doctor(
    proc: FakeOS, write: Write
) -> None:
    """The five busiest other processes over a 2 s window, busiest first (a tie goes to
    the higher pid), with their CPU seconds and share; the trainer (100), its child (101)
    and this probe's own line (300, started by 200, started by init) are not others; a
    process not read at the start is not counted; the share of all others sums them."""
    proc.pid = 300
    write("300/stat", stat_line(300, "python3", 200, 0, 0))
    write("200/stat", stat_line(200, "sh", 1, 0, 0))
    write("100/task/100/children", "101\n")
    ticks = {100: 900, 101: 900, 200: 900, 300: 900, 400: 200, 401: 50}
    ticks |= {402: 10, 403: 10, 404: 5, 405: 1, 500: 0}
    names = {400: "hog", 401: "a", 402: "b", 403: "c", 404: "d", 405: "e", 500: "idle"}
    before = {pid: (1000, names.get(pid, "x")) for pid in ticks}
    after = {pid: (1000 + t, names.get(pid, "x")) for pid, t in ticks.items()}
    after[600] = (5000, "new")
    load = host_load(before, after, {100}, 2.0, 100.0)
    assert load == {
        "cpus": 8,
        "load": [1.0, 0.5, 0.25],
        "others": [
            {"pid": 400, "name": "hog", "cpu_s": 2.0, "cpu_share": 1.0},
            {"pid": 401, "name": "a", "cpu_s": 0.5, "cpu_share": 0.25},
            {"pid": 403, "name": "c", "cpu_s": 0.1, "cpu_share": 0.05},
            {"pid": 402, "name": "b", "cpu_s": 0.1, "cpu_share": 0.05},
            {"pid": 404, "name": "d", "cpu_s": 0.05, "cpu_share": 0.025},
        ],
        "others_cpu_share": 1.38,
    }


def test_idle_others_an_unknown_load_and_no_window(proc: FakeOS, write: Write) -> None:
    """Others that used no CPU are not listed; a host with no load average says None;
    a window of no length lists no one and gives no share."""
    proc.load = None
    write("300/stat", stat_line(300, "python3", 1, 0, 0))
    idle = {500: (10, "idle")}
    load = host_load(idle, idle, set(), 2.0, 100.0)
    assert (load["load"], load["others"], load["others_cpu_share"]) == (None, [], 0.0)
    busy = host_load({500: (10, "b")}, {500: (90, "b")}, set(), 0.0, 100.0)
    assert (busy["others"], busy["others_cpu_share"]) == ([], None)


def test_a_pid_taken_by_another_process_during_the_window_counts_for_nothing(
    proc: FakeOS,
) -> None:
    """Over a 2 s window (100 ticks a second) pid 700 ``old`` (900 ticks) exited and a
    ``new`` process took its pid (100 ticks); pid 701 ``hog`` used 100 ticks; pid 702
    kept its name but read 50 ticks fewer. The two reads of 700 and of 702 are not of
    one process, so they count for nothing, not -8 s and -0.5 s: the hog alone is listed
    and is the others' whole share, 1 s of 2 s, 0.5 cores."""
    before = {700: (900, "old"), 701: (0, "hog"), 702: (300, "worker")}
    after = {700: (100, "new"), 701: (100, "hog"), 702: (250, "worker")}
    load = host_load(before, after, set(), 2.0, 100.0)
    assert load["others"] == [{"pid": 701, "name": "hog", "cpu_s": 1.0, "cpu_share": 0.5}]
    assert load["others_cpu_share"] == 0.5


def test_the_trainers_own_processes_leave_out_one_whose_pid_was_taken() -> None:
    """The trainer's children 700 (its pid taken by ``new``, 900 ticks to 100) and 701
    (100 ticks more) over a 2 s window: 701 alone counts, 1 s of 2 s, 0.5 cores; with
    700 the only child, none is comparable and the share is None, not -4."""
    before = {700: (900, "old"), 701: (0, "worker")}
    after = {700: (100, "new"), 701: (100, "worker")}
    assert share(before, after, [700, 701], 2.0, 100.0) == 0.5
    assert share(before, after, [700], 2.0, 100.0) is None
