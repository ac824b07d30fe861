"""The trainer's threads as py-spy's samples show them (tools/probes/_stacks.py): one
nonblocking dump and why it failed, the source line of a frame, each thread's samples
counted per activity with the stack and own frame standing for them, the sampling that
retries a failed dump once and gives up on a process that refuses every time, and the
dumps that caught one thread FX tracing while another ran a compiled function. py-spy is
stood in for by tiny shell scripts (for ``dump``) or by canned dumps (for ``Stacks``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tools.probes import _stacks
from tools.probes._stacks import NOT_RUN, Stacks, Thread, dump, source_line

SITE = "/venv/lib/python3.11/site-packages/"
FX = SITE + "torch/fx/_symbolic_trace.py"
COMPILED = SITE + "torch/_inductor/output_code.py"
FLEX = SITE + "torch/_higher_order_ops/flex_attention.py"


@pytest.fixture(autouse=True)
def fresh_line_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Source lines are cached per process: each test starts with none read."""
    monkeypatch.setattr(_stacks, "_LINES", {})


def fake_py_spy(tmp_path: Path, body: str) -> str:
    """An executable standing in for py-spy: a shell script running ``body``."""
    path = tmp_path / "py-spy"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def test_a_dump_runs_py_spy_nonblocking_on_the_pid_and_reads_its_json(tmp_path: Path) -> None:
    """py-spy is asked for a nonblocking JSON dump of the pid; the threads it prints are
    returned with no error."""
    spy = fake_py_spy(tmp_path, """printf '[{"args": "%s"}]' "$*\"""")
    assert dump(spy, 42) == ([{"args": "dump --pid 42 --json --nonblocking"}], None)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            "echo 'reading /proc' >&2; echo 'Error: Permission Denied (os error 13)' >&2; exit 1",
            "Error: Permission Denied (os error 13)",
        ),
        (
            "echo \"thread 'main' panicked at src/python_spy.rs:12:\" >&2;"
            " echo 'stack backtrace:' >&2; echo '  10: main' >&2; exit 101",
            "thread 'main' panicked at src/python_spy.rs:12:",
        ),
        ("echo 'first line' >&2; echo 'last line' >&2; exit 1", "first line"),
        ("echo '  only stdout said this  '; exit 1", "only stdout said this"),
        ("exit 2", "py-spy exited 2"),
        ("echo 'not json'", "py-spy printed no JSON"),
    ],
    ids=["error-line", "panic-first-line", "else-first-line", "stdout", "silent", "not-json"],
)
def test_a_failed_dump_says_why_in_one_line(tmp_path: Path, body: str, said: str) -> None:
    """A failed dump gives no threads and one line of why: py-spy's error line, a
    panic's first line (not the backtrace's last), else its first line (stdout where
    stderr is empty), else its exit status; output that is not JSON says so."""
    assert dump(fake_py_spy(tmp_path, body), 42) == (None, said)


def test_a_dump_that_is_json_but_no_list_gives_no_threads(tmp_path: Path) -> None:
    """JSON that is not a list of threads is no dump, though py-spy said nothing wrong."""
    assert dump(fake_py_spy(tmp_path, "echo '{\"threads\": []}'"), 42) == (None, None)


def test_a_missing_py_spy_did_not_run(tmp_path: Path) -> None:
    """A py-spy that cannot be started is reported as not run, with the system's
    reason."""
    missing = str(tmp_path / "none")
    assert dump(missing, 42) == (
        None,
        f"{NOT_RUN}: [Errno 2] No such file or directory: '{missing}'",
    )


def test_a_frames_source_line_is_read_stripped_clipped_and_kept(tmp_path: Path) -> None:
    """The frame's line as its file has it: stripped, at most 200 bytes, read once and
    kept (a file changed later still gives what was read); a line past the file's end or
    an unreadable file gives None."""
    src = tmp_path / "train.py"
    src.write_text("import time\n    time.sleep(1)  \n" + "x" * 300 + "\n")
    assert source_line(str(src), 2) == "time.sleep(1)"
    assert source_line(str(src), 3) == "x" * 200
    assert source_line(str(src), 9) is None
    assert source_line(str(tmp_path / "missing.py"), 1) is None
    src.write_text("changed\nchanged\n")
    assert source_line(str(src), 2) == "time.sleep(1)"


def frame(name: str, filename: str, line: int = 1) -> dict[str, Any]:
    return {"name": name, "filename": filename, "line": line}


def sample(*frames: dict[str, Any], active: bool = True, gil: bool = False) -> dict[str, Any]:
    return {"frames": list(frames), "active": active, "owns_gil": gil}


@pytest.fixture
def train_py(tmp_path: Path) -> str:
    src = tmp_path / "train.py"
    src.write_text("def step(x):\n    x = x * 2\n\ndef nap():\n    time.sleep(1)\n")
    return str(src)


def test_a_threads_samples_are_counted_per_activity_with_their_stack(train_py: str) -> None:
    """Four samples: twice in its own code, once sleeping, once loading data (its own
    frame outer, not innermost). The main activity is the most sampled, its stack the
    first such sample's (the innermost frame with its line's text); the own frame is the
    innermost frame outside the libraries, the most sampled one kept; the CPU share is
    the CPU seconds over the window."""
    thread = Thread(7, "MainThread")
    activities = [
        thread.add(sample(frame("step", train_py, 2), gil=True)),
        thread.add(sample(frame("nap", train_py, 5), active=False)),
        thread.add(
            sample(
                frame("fetch", SITE + "torch/utils/data/_utils/fetch.py", 52),
                frame("main", train_py, 9),
            )
        ),
        thread.add(sample(frame("step", train_py, 2), gil=True)),
    ]
    assert activities == ["own_code", "sleeping", "data_loading", "own_code"]
    assert thread.summary(1.5, 3.0) == {
        "tid": 7,
        "name": "MainThread",
        "samples": 4,
        "active_samples": 3,
        "gil_samples": 2,
        "activities": {"data_loading": 1, "own_code": 2, "sleeping": 1},
        "activity": "own_code",
        "activity_share": 0.5,
        "own_frame": f"{train_py}:2 step",
        "own_frame_samples": 2,
        "own_innermost_samples": 3,
        "stack": [{"function": "step", "file": train_py, "line": 2, "text": "x = x * 2"}],
        "cpu_s": 1.5,
        "cpu_share": 0.5,
    }


def test_the_stack_kept_names_only_the_innermost_frames_line(train_py: str) -> None:
    """In a kept stack only the innermost frame carries its source text; a frame
    missing its name or file shows ``?``, and entries that are no frame are dropped."""
    thread = Thread(1, "w")
    thread.add({"frames": ["junk", frame("nap", train_py, 5), {"line": 3}], "active": True})
    assert thread.summary(None, 1.0)["stack"] == [
        {"function": "nap", "file": train_py, "line": 5, "text": "time.sleep(1)"},
        {"function": "?", "file": "?", "line": 3},
    ]


def test_a_tie_between_activities_goes_to_the_later_name(train_py: str) -> None:
    """Two activities sampled equally often: the one whose name sorts last is the
    thread's activity (a fixed choice, the same on every run); likewise its own frame."""
    thread = Thread(1, "w")
    thread.add(sample(frame("step", train_py, 2)))
    thread.add(sample(frame("nap", train_py, 5)))
    summary = thread.summary(None, 1.0)
    assert (summary["activity"], summary["activity_share"]) == ("sleeping", 0.5)
    assert summary["own_frame"] == f"{train_py}:5 nap"


def test_a_thread_never_sampled_has_no_activity_and_no_cpu_share() -> None:
    """With no samples there is no activity, share, own frame or stack; CPU seconds
    unknown, or a window of no length, give no CPU share."""
    summary = Thread(3, "idle").summary(None, 2.0)
    assert (summary["activity"], summary["activity_share"], summary["own_frame"]) == (
        None,
        None,
        None,
    )
    assert (summary["stack"], summary["own_frame_samples"], summary["cpu_share"]) == ([], 0, None)
    assert Thread(3, "idle").summary(2.0, 0.0)["cpu_share"] is None


@pytest.mark.parametrize(
    ("active", "activity"),
    [(False, "idle"), (True, "python"), (None, "python")],
    ids=["idle", "active", "not-said"],
)
def test_a_sample_without_frames_is_idle_or_python(active: bool | None, activity: str) -> None:
    """A sample with no frames is idle where py-spy saw the thread idle, else plain
    Python; nothing is its own frame."""
    thread = Thread(1, "w")
    assert thread.add({"frames": [], "active": active}) == activity
    assert thread.own == {}


class FakeDumps:
    """``dump`` answering from a list of (threads, why) in turn; the calls counted."""

    def __init__(self, *answers: tuple[list[Any] | None, str | None]) -> None:
        self.answers = list(answers)
        self.calls = 0

    def __call__(self, py_spy: str, pid: int) -> tuple[list[Any] | None, str | None]:
        self.calls += 1
        return self.answers.pop(0)


def threads(*activities: tuple[int, str]) -> list[Any]:
    """A dump: thread ``tid`` with one frame in the file its activity is read from."""
    where = {"fx": FX, "compiled": COMPILED, "flex": FLEX, "data": SITE + "torch/utils/data/x.py"}
    return [
        {"os_thread_id": tid, "thread_name": f"t{tid}", "frames": [frame("f", where[kind])]}
        for tid, kind in activities
    ]


def test_each_dumps_threads_are_counted_under_their_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each thread of a dump is counted under its thread id with its name; entries that
    are no thread are passed over."""
    monkeypatch.setattr(_stacks, "dump", FakeDumps(([*threads((1, "data")), "junk"], None)))
    stacks = Stacks([10])
    stacks.sample("py-spy", 10)
    (only,) = stacks.threads[10].values()
    assert (only.tid, only.name, only.activities) == (1, "t1", {"data_loading": 1})
    assert (stacks.errors, stacks.failed) == ({}, {10: 0})


def test_a_failed_dump_is_tried_once_more(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dump that fails (caught mid-update) is retried at once; the retry's threads
    count and the sample is not failed."""
    fake = FakeDumps((None, "Error: transient"), (threads((1, "data")), None))
    monkeypatch.setattr(_stacks, "dump", fake)
    stacks = Stacks([10])
    stacks.sample("py-spy", 10)
    assert fake.calls == 2
    assert list(stacks.threads[10]) == [1]
    assert (stacks.errors, stacks.failed[10]) == ({}, 0)


def test_a_process_that_refuses_every_time_is_given_up_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Four failed samples (each a dump and its retry) with nothing ever read: the last
    refusal is kept, and the process is not asked again."""
    fake = FakeDumps(*[(None, "Error: Permission Denied")] * 8)
    monkeypatch.setattr(_stacks, "dump", fake)
    stacks = Stacks([10])
    for _ in range(5):
        stacks.sample("py-spy", 10)
    assert fake.calls == 8
    assert stacks.errors == {10: "Error: Permission Denied"}
    assert (stacks.failed[10], stacks.gave_up) == (4, {10})


def test_py_spy_not_running_gives_up_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A py-spy that did not run will not run next time: the process is given up on
    after one failed sample."""
    fake = FakeDumps((None, f"{NOT_RUN}: timed out"), (None, f"{NOT_RUN}: timed out"))
    monkeypatch.setattr(_stacks, "dump", fake)
    stacks = Stacks([10])
    stacks.sample("py-spy", 10)
    stacks.sample("py-spy", 10)
    assert (fake.calls, stacks.failed[10], stacks.gave_up) == (2, 1, {10})


def test_a_process_once_read_is_still_sampled_after_failures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bad luck is not a refusal: a process whose threads were read once is sampled
    again even after four failed samples; a dump that is no list is failed as no dump."""
    answers: list[tuple[list[Any] | None, str | None]] = [(threads((1, "data")), None)]
    answers += [(None, None)] * 8 + [(threads((1, "data")), None)]
    fake = FakeDumps(*answers)
    monkeypatch.setattr(_stacks, "dump", fake)
    stacks = Stacks([10])
    for _ in range(6):
        stacks.sample("py-spy", 10)
    assert fake.calls == 10
    assert (stacks.errors, stacks.failed[10], stacks.gave_up) == ({10: "no dump"}, 4, {10})
    assert stacks.threads[10][1].samples == 2


def test_the_fx_race_is_counted_per_dump_with_its_first_pair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A dump in which one thread FX traces while another runs a compiled function (or
    its eager attention fallback) is counted; the first such pair of threads is kept,
    with what the caller was doing. A dump with a tracer alone is not counted."""
    fake = FakeDumps(
        (threads((1, "fx"), (2, "data")), None),
        (threads((3, "flex"), (1, "fx")), None),
        (threads((1, "fx"), (2, "compiled")), None),
    )
    monkeypatch.setattr(_stacks, "dump", fake)
    stacks = Stacks([10])
    for _ in range(3):
        stacks.sample("py-spy", 10)
    assert stacks.overlaps == {
        10: {"samples": 2, "tracer": 1, "caller": 3, "caller_activity": "eager_attention"}
    }


def test_no_fx_race_leaves_a_zero_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process sampled with no tracer beside a caller has the race counted zero."""
    monkeypatch.setattr(_stacks, "dump", FakeDumps((threads((2, "compiled")), None)))
    stacks = Stacks([10])
    stacks.sample("py-spy", 10)
    assert stacks.overlaps == {10: {"samples": 0}}
