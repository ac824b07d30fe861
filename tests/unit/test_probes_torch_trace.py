"""The torch_trace probe (tools/probes/torch_trace.py): where it looks for torch's
structured trace files (the profile's paths, the ``TORCH_TRACE`` of the workspace's
processes, directories in the workspace that hold trace files), which files it takes
(torch's file names, regular files only, the newest few), and how each is reported
(where it was found and why, its rank, what the parser read, or why it could not be
read)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tools.probes import _workspace_env, torch_trace
from tools.probes._common import Context, ProbeFailure

PREFIX = "dedicated_log_torch_trace_"
GLOG = "V1202 20:30:32.414000 4987 torch/_dynamo/utils.py:1288] "


def write_trace(path: Path, compile_id: str = "0/0", mtime: float | None = None) -> Path:
    """A trace file holding one compile of ``score``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    metrics = {"compile_id": compile_id, "co_name": "score", "cache_size": 0}
    path.write_text(GLOG + json.dumps({"compilation_metrics": metrics}) + "\n")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.fixture(autouse=True)
def no_live_processes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, str]]]:
    """The processes working in the workspace, as the probe will see them: none unless
    a test adds one."""
    found: list[tuple[str, dict[str, str]]] = []

    def in_workspace(workspace: str, names: tuple[str, ...]) -> list[tuple[str, dict[str, str]]]:
        assert names == ("TORCH_TRACE",)
        return found

    monkeypatch.setattr(_workspace_env, "in_workspace", in_workspace)
    return found


def collect(**params: Any) -> dict[str, Any]:
    return torch_trace.collect(params, Context())


def test_without_paths_or_a_workspace_there_is_nowhere_to_look() -> None:
    """A profile that names no trace paths and no workspace fails as bad parameters,
    saying what it needs."""
    with pytest.raises(ProbeFailure, match="needs trace paths or a workspace") as failed:
        collect()
    assert failed.value.kind == "bad_params"


def test_a_named_file_is_read_and_reported_with_its_rank(tmp_path: Path) -> None:
    """A trace file the profile names is read: its path, why it was looked at, the rank
    its name gives, and what the parser read from it."""
    path = write_trace(tmp_path / f"{PREFIX}rank_3_ab12.log")
    out = collect(paths=[str(path)])
    assert out["looked"] == [{"where": str(path), "why": "named by the profile"}]
    assert out["files_found"] == 1
    (trace,) = out["traces"]
    assert (trace["path"], trace["why"], trace["rank"]) == (str(path), "named by the profile", 3)
    assert [r["compile_id"] for r in trace["compiles"]] == ["0/0"]
    assert (trace["lines"], trace["cut"], trace["overlong_lines"]) == (1, False, 0)


def test_in_a_directory_only_torchs_regular_trace_files_are_taken(tmp_path: Path) -> None:
    """In a directory, files named as torch names its trace files and ending ``.log``
    are taken; other names, other endings, symlinks and directories of that name are
    not."""
    d = tmp_path / "trace"
    kept = write_trace(d / f"{PREFIX}a.log")
    write_trace(d / "other.log")
    write_trace(d / f"{PREFIX}b.txt")
    (d / f"{PREFIX}link.log").symlink_to(kept)
    (d / f"{PREFIX}dir.log").mkdir()
    out = collect(paths=[str(d)])
    assert [t["path"] for t in out["traces"]] == [str(kept)]
    assert out["traces"][0]["rank"] is None


def test_a_named_path_that_is_no_regular_file_is_not_read(tmp_path: Path) -> None:
    """A named path that does not exist, or is a symlink, is looked at (and listed as
    looked at) but no file is found there."""
    target = write_trace(tmp_path / f"{PREFIX}real.log")
    link = tmp_path / "link.log"
    link.symlink_to(target)
    missing = tmp_path / "missing.log"
    out = collect(paths=[str(missing), str(link)])
    assert [p["where"] for p in out["looked"]] == [str(missing), str(link)]
    assert (out["files_found"], out["traces"]) == (0, [])


def test_the_workspace_processes_trace_dirs_and_trace_dirs_in_it_are_looked_at(
    tmp_path: Path, no_live_processes: list[tuple[str, dict[str, str]]]
) -> None:
    """With a workspace, the ``TORCH_TRACE`` a process working there set is looked at,
    and so is each directory in the workspace holding a trace file; each file found is
    reported with the reason it was looked at."""
    ws = tmp_path / "ws"
    outside = write_trace(tmp_path / "elsewhere" / f"{PREFIX}p.log")
    inside = write_trace(ws / "runs" / "trace" / f"{PREFIX}w.log")
    no_live_processes.append(("4242", {"TORCH_TRACE": str(outside.parent)}))
    out = collect(workspace=str(ws))
    assert out["looked"] == [
        {"where": str(outside.parent), "why": "TORCH_TRACE of pid 4242"},
        {"where": str(inside.parent), "why": "in the workspace"},
    ]
    assert [(t["path"], t["why"]) for t in out["traces"]] == [
        (str(outside), "TORCH_TRACE of pid 4242"),
        (str(inside), "in the workspace"),
    ]


def test_a_file_found_twice_keeps_the_first_reason(tmp_path: Path) -> None:
    """A file both named by the profile and found in the workspace is read once, under
    the reason it was found by first: the profile's."""
    ws = tmp_path / "ws"
    path = write_trace(ws / "trace" / f"{PREFIX}a.log")
    out = collect(paths=[str(path)], workspace=str(ws))
    assert out["files_found"] == 1
    assert [(t["path"], t["why"]) for t in out["traces"]] == [(str(path), "named by the profile")]


def test_the_workspace_walk_is_shallow_and_skips_hidden_directories(tmp_path: Path) -> None:
    """Directories up to four levels under the workspace are searched; deeper ones and
    hidden ones (a ``.venv``) are not."""
    ws = tmp_path / "ws"
    four = write_trace(ws / "a" / "b" / "c" / "d" / f"{PREFIX}4.log")
    write_trace(ws / "a" / "b" / "c" / "d" / "e" / f"{PREFIX}5.log")
    write_trace(ws / ".venv" / f"{PREFIX}hidden.log")
    out = collect(workspace=str(ws))
    assert [t["path"] for t in out["traces"]] == [str(four)]


def test_the_workspace_walk_stops_after_enough_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once more files than the walk's bound were seen, no further directory is
    searched: the workspace's own three files use up a bound of two."""
    monkeypatch.setattr(torch_trace, "MAX_WALK", 2)
    ws = tmp_path / "ws"
    for name in ("a.py", "b.py", "c.py"):
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("")
    write_trace(ws / "sub" / f"{PREFIX}x.log")
    assert collect(workspace=str(ws))["traces"] == []


def test_only_the_newest_files_are_read_listed_by_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the bound on files, the most recently written are read (here the two
    newest of three), listed in path order; all three are counted found."""
    monkeypatch.setattr(torch_trace, "MAX_FILES", 2)
    d = tmp_path / "trace"
    write_trace(d / f"{PREFIX}a.log", mtime=1_000)
    write_trace(d / f"{PREFIX}b.log", mtime=3_000)
    write_trace(d / f"{PREFIX}c.log", mtime=2_000)
    out = collect(paths=[str(d)])
    assert out["files_found"] == 3
    assert [Path(t["path"]).name for t in out["traces"]] == [f"{PREFIX}b.log", f"{PREFIX}c.log"]


def test_a_file_that_cannot_be_opened_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that fails to open is still reported, with the system's reason in place
    of what it holds."""
    path = write_trace(tmp_path / f"{PREFIX}a.log")

    def refuse(p: str) -> Any:
        raise OSError(errno.EACCES, "Permission denied", p)

    monkeypatch.setattr(torch_trace, "open_regular", refuse)
    (trace,) = collect(paths=[str(path)])["traces"]
    assert trace == {
        "path": str(path),
        "why": "named by the profile",
        "rank": None,
        "error": "Permission denied",
    }
