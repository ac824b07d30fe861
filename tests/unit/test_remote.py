"""File and process operations on a target (playbooks.remote): each one run of the operations
program by the target's interpreter through the transport, its JSON argument confined to the
workspace for writes, its one-line JSON answer decoded, and a failure raised saying which
operation failed, on what, and where.

The transport here records each argv and answers what the target would have."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from playbooks.remote import Remote
from tools.errors import ApplyError, ApplyRefused
from tools.transport.base import CommandResult

PROGRAM = (Path(__file__).parents[2] / "playbooks" / "_remote_ops.py").read_text()


@dataclass
class Answering:
    """A transport that answers each command with the next of ``answers`` (stdout text) and
    records what it was asked to run."""

    answers: list[str]
    rc: int = 0
    stderr: bytes = b""
    name: str = "gpu-box"
    runs: list[tuple[list[str], float | None]] = field(default_factory=list)

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
    ) -> CommandResult:
        self.runs.append((list(argv), timeout))
        out = self.answers.pop(0).encode()
        return CommandResult(tuple(argv), self.rc, out, self.stderr, 0.0, self.name)

    def close(self) -> None:
        pass

    def ops(self) -> list[dict[str, Any]]:
        """The operations sent, as the program reads them."""
        return [json.loads(argv[-1]) for argv, _ in self.runs]


def answering(*answers: dict[str, Any]) -> Answering:
    return Answering([json.dumps({"ok": True, **a}) for a in answers])


def test_an_operation_is_the_program_run_by_the_targets_interpreter() -> None:
    """Each operation runs the operations program with ``-c`` under the target's interpreter,
    writing no bytecode, its JSON the one argument, within 60 s by default."""
    transport = answering({"exists": False})
    Remote(transport, interpreter="/opt/py/bin/python3").sha256("/w/x")
    ((argv, timeout),) = transport.runs
    assert argv == ["/opt/py/bin/python3", "-B", "-c", PROGRAM, '{"op": "stat", "path": "/w/x"}']
    assert timeout == 60.0


def test_a_confined_remote_sends_its_workspace_with_every_operation() -> None:
    """``confined`` is a copy whose every operation carries the workspace as its root (reads and
    heartbeats included); the original stays unconfined."""
    transport = answering({"sha256": "ab"}, {"exists": False})
    remote = Remote(transport)
    bound = remote.confined("/w")
    bound.write("/w/l.sh", b"hi")
    bound.sha256("/w/l.sh")
    assert remote.root is None
    assert transport.ops() == [
        {"op": "write", "path": "/w/l.sh", "data": "aGk=", "follow": False, "root": "/w"},
        {"op": "stat", "path": "/w/l.sh", "root": "/w"},
    ]


def test_confining_keeps_a_subclass_itself() -> None:
    """A confined remote is of the class it was made from, so a subclass's overrides stay."""

    class Mine(Remote):
        pass

    assert type(Mine(answering()).confined("/w")) is Mine


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda r: r.write("/w/x", b""), "^write /w/x: no workspace to confine it to$"),
        (lambda r: r.remove("/w/x"), "^remove /w/x: no workspace to confine it to$"),
        (lambda r: r.lock("/w/l", "me"), "^lock /w/l: no workspace to confine it to$"),
        (lambda r: r.unlock("/w/l"), "^unlock /w/l: no workspace to confine it to$"),
        (lambda r: r.break_lock("/w/l"), "^break /w/l: no workspace to confine it to$"),
        (
            lambda r: r.start(["t"], "/w", "/w/o.log"),
            "^start /w/o.log: no workspace to confine it to$",
        ),
    ],
    ids=["write", "remove", "lock", "unlock", "break", "start"],
)
def test_an_unconfined_remote_refuses_every_write_before_running_it(
    call: Callable[[Remote], object], message: str
) -> None:
    """A remote with no workspace reads and never writes: each writing operation is an error
    naming it and its path, and nothing is sent to the target."""
    transport = answering()
    with pytest.raises(ApplyError, match=message):
        call(Remote(transport))
    assert transport.runs == []


def test_the_answer_is_the_last_line_the_program_printed() -> None:
    """Whatever the target printed before (a login banner, a warning), the answer is the last
    line."""
    transport = Answering(["Welcome!\n" + json.dumps({"ok": True, "exists": True, "size": 7})])
    assert Remote(transport).size("/w/x") == 7


@pytest.mark.parametrize(
    "stdout", ["", "Traceback (most recent call last):\n"], ids=["nothing", "no-json"]
)
def test_no_answer_is_an_error_with_the_exit_status_and_stderr(stdout: str) -> None:
    """A run that printed no JSON answer is an error naming the operation, the target, the exit
    status and the end of what it wrote to stderr (its last 300 characters)."""
    transport = Answering([stdout], rc=1, stderr=b"x" * 400 + b"\nSyntaxError: bad\n")
    with pytest.raises(ApplyError) as caught:
        Remote(transport).read("/w/x")
    tail = ("x" * 400 + "\nSyntaxError: bad")[-300:]
    assert str(caught.value) == f"read on gpu-box: no answer (rc 1): {tail}"


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ({"ok": False, "error": "/w/x is a symlink", "refused": True}, ApplyRefused),
        ({"ok": False, "error": "OSError: [Errno 28] No space left"}, ApplyError),
    ],
    ids=["refused", "failed"],
)
def test_a_failed_operation_says_what_where_and_why(
    answer: dict[str, Any], error: type[ApplyError]
) -> None:
    """A failed operation is raised with its name, its path, the target and the program's error;
    a refusal (nothing changed: a symlink, a path outside the workspace) is ApplyRefused."""
    remote = Remote(Answering([json.dumps(answer)]), root="/w")
    with pytest.raises(error) as caught:
        remote.write("/w/x", b"")
    assert type(caught.value) is error
    assert str(caught.value) == f"write /w/x on gpu-box: {answer['error']}"


def test_reads_are_decoded_from_base64() -> None:
    """``read`` and ``read_from`` give the bytes the program sent as base64; ``read_from`` asks
    for the offset and limit given."""
    data = base64.b64encode(b"\x00line\n").decode()
    transport = answering({"data": data}, {"data": data, "size": 9})
    remote = Remote(transport)
    assert remote.read("/w/x") == b"\x00line\n"
    assert remote.read_from("/w/x", 3, 10) == b"\x00line\n"
    assert transport.ops()[1] == {"op": "read_from", "path": "/w/x", "offset": 3, "limit": 10}


@pytest.mark.parametrize(
    ("answer", "sha", "size"),
    [({"exists": False}, None, 0), ({"exists": True, "size": 12, "sha256": "ab"}, "ab", 12)],
    ids=["missing", "file"],
)
def test_a_missing_file_has_no_sha256_and_no_size(
    answer: dict[str, Any], sha: str | None, size: int
) -> None:
    """A path that does not exist has no sha256 and a size of 0; one that does has the
    program's."""
    remote = Remote(answering(answer, answer))
    assert (remote.sha256("/w/x"), remote.size("/w/x")) == (sha, size)


@pytest.mark.parametrize(
    ("answer", "taken"),
    [
        ({"locked": True}, (True, "", None)),
        ({"locked": False, "owner": '{"pid": 3}', "age": 12}, (False, '{"pid": 3}', 12.0)),
        ({"locked": False, "owner": "unknown", "age": None}, (False, "unknown", None)),
    ],
    ids=["taken", "held", "held-no-age"],
)
def test_a_lock_is_taken_or_names_its_holder_and_heartbeat_age(
    answer: dict[str, Any], taken: tuple[bool, str, float | None]
) -> None:
    """Taking a lock answers whether it was taken, else who holds it and how many seconds since
    its heartbeat (none when the target could not say); ``lock`` is the same without the age."""
    remote = Remote(answering(answer, answer), root="/w")
    assert remote.try_lock("/w/l", "me") == taken
    assert remote.lock("/w/l", "me") == taken[:2]


def test_waiting_operations_get_their_own_time_limit() -> None:
    """Stopping and waiting may take their timeout: the command is given 30 s more, and the lock
    to keep beating is sent."""
    transport = answering({"killed": False}, {"exited": True})
    remote = Remote(transport)
    assert remote.stop(7, timeout=5.0, beat="/w/l") is False
    assert remote.wait(7, 100.0) is True
    assert [t for _, t in transport.runs] == [35.0, 130.0]
    assert transport.ops() == [
        {"op": "stop", "pid": 7, "timeout": 5.0, "beat": "/w/l"},
        {"op": "wait", "pid": 7, "timeout": 100.0, "beat": None},
    ]


def test_process_answers_are_decoded() -> None:
    """A pid file names a live pid or none; a process's start time is text or none; a started
    process gives its pid and start time; its stdout and stderr are files or none."""
    transport = answering(
        {"pid": 41, "alive": True},
        {"pid": None, "alive": False},
        {"start": 12345},
        {"start": None},
        {"pid": 99, "start": "777"},
        {"1": "/w/o.log", "2": None},
        {"alive": True},
    )
    remote = Remote(transport, root="/w")
    assert remote.running_pid("/w/p") == 41
    assert remote.running_pid("/w/p") is None
    assert remote.started_at(41) == "12345"
    assert remote.started_at(41) is None
    assert remote.start_process(["sh", "l.sh"], "/w", "/w/o.log") == (99, "777")
    assert remote.stdio(99) == {"1": "/w/o.log", "2": None}
    assert remote.alive(99) is True
    assert transport.ops()[4] == {
        "op": "start",
        "argv": ["sh", "l.sh"],
        "cwd": "/w",
        "log": "/w/o.log",
        "env": {},
        "root": "/w",
    }


def test_a_knob_is_the_file_that_declares_it() -> None:
    """``knob`` gives the file of the trainer's code that declares the option (or none);
    ``knob_like`` also gives the option's name as the trainer spells it."""
    transport = answering(
        {"found": "/w/train.py", "literal": "--compile-lock"},
        {"found": None, "literal": None},
        {"found": "/w/opts.py", "literal": "--recompile-limit"},
        {"found": None, "literal": None},
    )
    remote = Remote(transport)
    assert remote.knob("/w/train.py", "--compile-lock") == "/w/train.py"
    assert remote.knob("/w/train.py", "--workers", "processes") is None
    assert remote.knob_like("/w/train.py", "--.*limit") == ("/w/opts.py", "--recompile-limit")
    assert remote.knob_like("/w/train.py", "--.*limit") is None
    assert transport.ops()[1] == {
        "op": "knob",
        "script": "/w/train.py",
        "flag": "--workers",
        "value": "processes",
    }
    assert transport.ops()[2] == {
        "op": "knob",
        "script": "/w/train.py",
        "flag": None,
        "pattern": "--.*limit",
    }
