"""tools.probes.flight_recorder: torch's Flight Recorder dumps (one pickle per rank)
found where the profile, the trainer's environment or the workspace says, each summarised
(its groups' last enqueued/started/completed collectives, its last ring entries, the op of
each sequence number), and across ranks the first collective some rank never enqueued.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from tools.probes import _workspace_env, flight_recorder
from tools.probes._common import Context, ProbeFailure
from tools.probes.flight_recorder import across, read_dump

NO_ENTRY = {
    "collective_seq_id": None,
    "op": None,
    "state": None,
    "pg_id": None,
    "process_group": None,
    "thread_name": None,
    "input_sizes": None,
    "timeout_ms": None,
    "time_created_ns": None,
}


def ring_entry(seq: int, op: str = "gloo:all_reduce") -> dict[str, Any]:
    """One entry as torch 2.13 writes it into the ring."""
    return {
        "record_id": seq - 1,
        "pg_id": 0,
        "process_group": ("0", "default_pg"),
        "collective_seq_id": seq,
        "p2p_seq_id": 0,
        "op_id": seq,
        "profiling_name": op,
        "time_created_ns": 1_700_000_000_000_000_000 + seq,
        "input_sizes": [[4, 2]],
        "output_sizes": [[4, 2]],
        "state": "completed",
        "timeout_ms": 8000,
        "thread_name": "pt_autograd_0",
        "is_p2p": False,
    }


def dump(last_enqueued: int, entries: list[Any] | None = None) -> dict[str, Any]:
    """A rank's dump whose default group enqueued collectives 1..``last_enqueued``."""
    return {
        "version": "2.10",
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
        "pg_status": {
            "0": {
                "last_enqueued_collective": last_enqueued,
                "last_started_collective": last_enqueued,
                "last_completed_collective": last_enqueued - 1,
            }
        },
        "entries": [ring_entry(s) for s in range(1, last_enqueued + 1)]
        if entries is None
        else entries,
    }


def write(path: Path, value: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(value, protocol=2))
    return path


def summary(rank: int | None, enqueued: dict[str, Any], ops: dict[str, str]) -> dict[str, Any]:
    """What ``read_dump`` makes of a rank's dump, as far as ``across`` reads it."""
    status = {pg: {"last_enqueued_collective": n} for pg, n in enqueued.items()}
    return {"path": f"/d/rank{rank}", "rank": rank, "pg_status": status, "ops": ops}


def test_a_dump_is_summarised(tmp_path: Path) -> None:
    """A rank's dump gives its rank (from the file name), torch's format version, each
    group's three last collectives, how many entries the ring held, the last
    ``LAST_ENTRIES`` of them with the fields a reader needs, and each sequence's op."""
    path = write(tmp_path / "fr_trace_rank_1", dump(10))
    out = read_dump(str(path))
    assert out["path"] == str(path)
    assert out["rank"] == 1
    assert out["version"] == "2.10"
    assert out["pg_status"] == {
        "0": {
            "last_enqueued_collective": 10,
            "last_started_collective": 10,
            "last_completed_collective": 9,
        }
    }
    assert out["entries"] == 10
    assert [e["collective_seq_id"] for e in out["last"]] == [3, 4, 5, 6, 7, 8, 9, 10]
    assert out["last"][-1] == {
        "collective_seq_id": 10,
        "op": "gloo:all_reduce",
        "state": "completed",
        "pg_id": 0,
        "process_group": ["0", "default_pg"],
        "thread_name": "pt_autograd_0",
        "input_sizes": [[4, 2]],
        "timeout_ms": 8000,
        "time_created_ns": 1_700_000_000_000_000_010,
    }
    assert out["ops"] == {str(s): "gloo:all_reduce" for s in range(1, 11)}
    assert "error" not in out


def test_ring_entries_of_the_wrong_type_are_none(tmp_path: Path) -> None:
    """An entry field of an unexpected type is None, not passed on (a truth value is no
    sequence number); an entry that is no dict is all None; a process group keeps its first
    two parts; an entry without sequence number or op is left out of ``ops``; group status
    values that are no integers are None, and a group whose status is no dict is left out."""
    entries: list[Any] = [
        "not an entry",
        {
            "collective_seq_id": True,
            "profiling_name": 3,
            "state": None,
            "pg_id": "0",
            "process_group": ["1", "sub", "extra"],
            "thread_name": 1.5,
            "input_sizes": (4, 2),
            "timeout_ms": 8000.0,
            "time_created_ns": "now",
        },
        {"collective_seq_id": 7, "profiling_name": ""},
    ]
    value = {
        "version": 2.1,
        "pg_status": {0: {"last_enqueued_collective": "7"}, 1: "x"},
        "entries": entries,
    }
    out = read_dump(str(write(tmp_path / "rank0", value)))
    assert out["version"] is None
    assert out["pg_status"] == {
        "0": {
            "last_enqueued_collective": None,
            "last_started_collective": None,
            "last_completed_collective": None,
        }
    }
    assert out["entries"] == 3
    assert out["last"] == [
        NO_ENTRY,
        dict(NO_ENTRY, process_group=["1", "sub"]),
        dict(NO_ENTRY, collective_seq_id=7, op=""),
    ]
    assert out["ops"] == {}


@pytest.mark.parametrize(
    ("name", "rank"),
    [
        ("fr_trace_rank_3", 3),
        ("nccl_trace_rank12", 12),
        ("rank_0", 0),
        ("trace_rank_1.pkl", None),
        ("dump.pkl", None),
    ],
    ids=["underscore", "no-underscore", "bare", "suffix-after-rank", "no-rank"],
)
def test_the_rank_is_the_number_ending_the_file_name(
    tmp_path: Path, name: str, rank: int | None
) -> None:
    """A dump's rank is the number after ``rank`` or ``rank_`` at the very end of its file
    name, as torch names them (``<prefix><rank>``); any other name has no rank."""
    assert read_dump(str(write(tmp_path / name, dump(1))))["rank"] == rank


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (pickle.dumps([1, 2], protocol=2), "not a Flight Recorder dump (no 'entries' list)"),
        (
            pickle.dumps({"entries": {}}, protocol=2),
            "not a Flight Recorder dump (no 'entries' list)",
        ),
        (
            pickle.dumps({"entries": []}, protocol=2)[:-1],
            "not a plain-data pickle: no STOP: the pickle is truncated",
        ),
    ],
    ids=["a-list", "entries-not-a-list", "cut-short"],
)
def test_a_file_that_is_no_dump_says_why(tmp_path: Path, content: bytes, error: str) -> None:
    """A pickle that is not a Flight Recorder dump, or not a whole pickle, is one error
    line on that rank's summary, and nothing else is made up for it."""
    path = tmp_path / "fr_trace_rank_0"
    path.write_bytes(content)
    assert read_dump(str(path)) == {"path": str(path), "rank": 0, "error": error}


def test_a_dump_over_the_size_limit_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dump larger than ``MAX_BYTES`` is not parsed in part; the error gives the limit."""
    monkeypatch.setattr(flight_recorder, "MAX_BYTES", 16)
    path = write(tmp_path / "rank_1", dump(3))
    assert read_dump(str(path)) == {
        "path": str(path),
        "rank": 1,
        "error": "larger than 16 bytes; not read",
    }


def test_a_missing_dump_says_so(tmp_path: Path) -> None:
    """A dump path that is not there is an error saying so, not an exception."""
    path = str(tmp_path / "rank_4")
    assert read_dump(path) == {"path": path, "rank": 4, "error": "No such file or directory"}


@pytest.mark.parametrize(
    ("dumps", "expected"),
    [
        (
            [summary(0, {"0": 41}, {"41": "gloo:all_reduce"}), summary(1, {"0": 40}, {})],
            [
                {
                    "pg": "0",
                    "collective_seq_id": 41,
                    "op": "gloo:all_reduce",
                    "not_reached_by": [1],
                    "reached_by": [0],
                    "last_enqueued": {"0": 41, "1": 40},
                }
            ],
        ),
        (
            [
                summary(2, {"0": 9}, {"9": "nccl:broadcast"}),
                summary(0, {"0": 10}, {"9": "nccl:all_gather"}),
                summary(1, {"0": 8}, {}),
            ],
            [
                {
                    "pg": "0",
                    "collective_seq_id": 9,
                    "op": "nccl:broadcast",
                    "not_reached_by": [1],
                    "reached_by": [0, 2],
                    "last_enqueued": {"0": 10, "1": 8, "2": 9},
                }
            ],
        ),
        ([summary(0, {"0": 5}, {}), summary(1, {"0": 5}, {})], []),
        ([summary(0, {"0": 5}, {})], []),
        ([summary(0, {"0": 6}, {}), summary(None, {"0": 2}, {})], []),
        ([summary(0, {"0": 6}, {}), dict(summary(1, {"0": 2}, {}), error="x")], []),
        ([summary(0, {"0": 6}, {}), summary(1, {"0": None}, {})], []),
        (
            [summary(0, {"1": 3, "0": 2}, {}), summary(1, {"0": 2, "1": 4}, {})],
            [
                {
                    "pg": "1",
                    "collective_seq_id": 4,
                    "op": None,
                    "not_reached_by": [0],
                    "reached_by": [1],
                    "last_enqueued": {"0": 3, "1": 4},
                }
            ],
        ),
    ],
    ids=[
        "one-behind",
        "op-from-first-rank-ahead",
        "all-level",
        "one-rank",
        "rank-unknown-ignored",
        "unread-ignored",
        "no-count-ignored",
        "per-group",
    ],
)
def test_the_first_collective_some_rank_never_enqueued(
    dumps: list[dict[str, Any]], expected: list[dict[str, Any]]
) -> None:
    """Per group, where the ranks' last enqueued collectives differ, the first missing one
    is the lowest count plus one: the ranks below it did not reach it, the others did, and
    its op is as the first rank (in dump order) that reached it recorded it. Groups where
    fewer than two ranks with a rank number and a count agree or differ say nothing."""
    assert across(dumps) == expected


def test_collect_needs_somewhere_to_look() -> None:
    """With neither dump paths nor a workspace the probe fails as bad parameters."""
    with pytest.raises(ProbeFailure, match="needs dump paths or a workspace") as info:
        flight_recorder.collect({}, Context())
    assert info.value.kind == "bad_params"


def test_collect_reads_the_profiles_globs_in_rank_order(tmp_path: Path) -> None:
    """The profile's globs are expanded; the dumps are read and ordered by rank, those
    without one last; each says why it was read; the unreadable are counted; the first
    missing collective is worked out across them."""
    write(tmp_path / "fr_rank_1", dump(2))
    write(tmp_path / "fr_rank_0", dump(3))
    (tmp_path / "fr_rank_2").write_bytes(b"\x80\x02garbage")
    write(tmp_path / "fr_last", dump(3))
    out = flight_recorder.collect({"paths": [str(tmp_path / "fr_*")]}, Context())
    assert out["looked"] == [{"where": str(tmp_path / "fr_*"), "why": "named by the profile"}]
    assert [(d["path"], d["rank"], d["why"]) for d in out["dumps"]] == [
        (str(tmp_path / "fr_rank_0"), 0, "named by the profile"),
        (str(tmp_path / "fr_rank_1"), 1, "named by the profile"),
        (str(tmp_path / "fr_rank_2"), 2, "named by the profile"),
        (str(tmp_path / "fr_last"), None, "named by the profile"),
    ]
    assert out["unread"] == 1
    assert [(m["collective_seq_id"], m["not_reached_by"]) for m in out["first_missing"]] == [
        (3, [1])
    ]


def test_collect_reads_at_most_max_dumps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No more than ``MAX_DUMPS`` files are read, the first the globs name."""
    monkeypatch.setattr(flight_recorder, "MAX_DUMPS", 2)
    for rank in range(4):
        write(tmp_path / f"rank_{rank}", dump(1))
    out = flight_recorder.collect({"paths": [str(tmp_path / "rank_*")]}, Context())
    assert [d["rank"] for d in out["dumps"]] == [0, 1]


def test_the_workspace_is_searched_for_pickles_named_with_a_rank(tmp_path: Path) -> None:
    """In the workspace, files named with a rank whose first byte opens a pickle are dumps;
    a text file so named, a file with no rank in its name and a hidden directory are not
    looked at; a file the profile already named keeps the profile's reason."""
    named = write(tmp_path / "logs" / "trace_rank_0", dump(1))
    found = write(tmp_path / "a" / "b" / "trace_rank_1", dump(1))
    (tmp_path / "notes_rank_2").write_text("rank two was slow")
    write(tmp_path / "dump.pkl", dump(1))
    write(tmp_path / ".cache" / "trace_rank_3", dump(1))
    out = flight_recorder.collect({"paths": [str(named)], "workspace": str(tmp_path)}, Context())
    assert [(d["path"], d["why"]) for d in out["dumps"]] == [
        (str(named), "named by the profile"),
        (str(found), "in the workspace, named with a rank"),
    ]


@pytest.mark.parametrize(
    ("envs", "looked"),
    [
        (
            [("101", {"TORCH_FR_DUMP_TEMP_FILE": "{ws}/fr_"})],
            [("{ws}/fr_*", "TORCH_FR_DUMP_TEMP_FILE of pid 101")],
        ),
        (
            [("7", {"TORCH_NCCL_DUMP_ON_TIMEOUT": "1"})],
            [("/tmp/nccl_trace_rank_*", "torch's default prefix (pid 7 dumps)")],
        ),
        ([("7", {"TORCH_FR_DUMP_ON_TIMEOUT": "0"})], []),
        (
            [
                (
                    "7",
                    {"TORCH_FR_DUMP_ON_TIMEOUT": "1", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "{ws}/n_"},
                ),
                ("8", {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE": "{ws}/n_"}),
            ],
            [("{ws}/n_*", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE of pid 7")],
        ),
    ],
    ids=["prefix-set", "dumping-on-default-prefix", "dumping-off", "same-prefix-once"],
)
def test_the_trainers_environment_names_the_dump_prefix(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    envs: list[tuple[str, dict[str, str]]],
    looked: list[tuple[str, str]],
) -> None:
    """A process working in the workspace that sets a dump prefix has its dumps looked
    for at that prefix; one that only turns dumping on, at torch's default prefix; one
    that turns it off, nowhere. A prefix is looked at once, for the first process naming it."""
    ws = str(tmp_path)

    def in_workspace(workspace: str, names: tuple[str, ...]) -> list[tuple[str, dict[str, str]]]:
        assert workspace == ws
        return [(pid, {k: v.format(ws=ws) for k, v in env.items()}) for pid, env in envs]

    monkeypatch.setattr(_workspace_env, "in_workspace", in_workspace)
    out = flight_recorder.collect({"workspace": ws}, Context())
    assert out["looked"] == [{"where": w.format(ws=ws), "why": y} for w, y in looked]


def test_dumps_at_the_trainers_prefix_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files at a trainer's prefix are read, even outside the workspace and with no
    rank in their names, each with the process that named the prefix as its reason."""
    ws, out_dir = tmp_path / "ws", tmp_path / "dumps"
    ws.mkdir()
    write(out_dir / "fr_0", dump(2))
    write(out_dir / "fr_1", dump(1))
    prefix = str(out_dir / "fr_")
    monkeypatch.setattr(
        _workspace_env,
        "in_workspace",
        lambda workspace, names: [("55", {"TORCH_FR_DUMP_TEMP_FILE": prefix})],
    )
    out = flight_recorder.collect({"workspace": str(ws)}, Context())
    assert [(d["path"], d["why"]) for d in out["dumps"]] == [
        (str(out_dir / "fr_0"), "TORCH_FR_DUMP_TEMP_FILE of pid 55"),
        (str(out_dir / "fr_1"), "TORCH_FR_DUMP_TEMP_FILE of pid 55"),
    ]
