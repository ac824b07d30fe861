"""tools.probes.stdoutlog: the trainer's console log, chosen by the profile or the
workspace layout, scanned for the error signatures (the built-in table plus the profile's
own rows), with the file's stat and the record of which file was read and why.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tools.probes import layout, stdoutlog
from tools.probes._common import Context, ProbeFailure

MINE = {"id": "mine", "pattern": r"MYERR \w+", "means": "the trainer's own error"}
LOG = "starting\nMYERR boom\nstep 1\nMYERR again\n"


def test_a_profile_path_is_scanned_with_the_profiles_own_signatures(tmp_path: Path) -> None:
    """The file the profile names is read; a signature the profile adds is counted like the
    built-in ones, with its first and last line; the value carries the file's stat and says
    the profile named it."""
    log = tmp_path / "console.txt"
    log.write_text(LOG)
    out = stdoutlog.collect({"path": str(log), "extra_signatures": [MINE]}, Context())
    mine = out["signatures"]["mine"]
    assert (mine["count"], mine["first_line"], mine["last_line"]) == (2, 2, 4)
    assert (mine["first"], mine["last"]) == ("MYERR boom", "MYERR again")
    assert mine["means"] == "the trainer's own error"
    assert out["signatures"]["traceback"]["count"] == 0
    assert (out["file"]["path"], out["file"]["kind"], out["file"]["size"]) == (
        str(log),
        "file",
        len(LOG),
    )
    assert out["source"] == {"path": str(log), "why": "named by the profile"}


def test_the_layouts_choice_is_read_and_its_reason_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a path the workspace layout's best console log is read, and the value's
    ``source`` is the layout's record of which file and why."""
    log = tmp_path / "run" / "out.log"
    log.parent.mkdir()
    log.write_text(LOG)
    source = {"path": str(log), "why": "named like a console log", "workspace": str(tmp_path)}
    asked: list[tuple[str, str]] = []

    def chosen(params: dict[str, Any], role: str, what: str) -> tuple[str, dict[str, Any]]:
        asked.append((role, what))
        return str(log), source

    monkeypatch.setattr(layout, "chosen", chosen)
    out = stdoutlog.collect({"workspace": str(tmp_path)}, Context())
    assert asked == [("stdout_logs", "console log")]
    assert out["source"] == source
    assert out["file"]["path"] == str(log)


def test_with_neither_path_nor_workspace_the_parameters_are_bad() -> None:
    """Nothing to read and nowhere to look for it fails as bad parameters saying so."""
    with pytest.raises(
        ProbeFailure, match=r"^needs a path or a workspace to find console log in$"
    ) as info:
        stdoutlog.collect({}, Context())
    assert info.value.kind == "bad_params"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"pattern": "x"}, "signature None: needs a new id and a pattern"),
        ({"id": "mine"}, "signature 'mine': needs a new id and a pattern"),
        (
            {"id": "traceback", "pattern": "x"},
            "signature 'traceback': needs a new id and a pattern",
        ),
        (
            {"id": "mine", "pattern": "MYERR ("},
            "signature 'mine': bad regex: missing ), unterminated subpattern at position 6",
        ),
    ],
    ids=["no-id", "no-pattern", "id-of-a-built-in", "bad-regex"],
)
def test_a_bad_profile_signature_fails_before_the_log_is_opened(
    tmp_path: Path, row: dict[str, str], message: str
) -> None:
    """A profile signature without an id or pattern, reusing a built-in id, or whose regex
    does not compile fails the probe as bad parameters naming the row, before any file is
    looked at (a missing log does not hide the mistake)."""
    params = {"path": str(tmp_path / "missing.log"), "extra_signatures": [row]}
    with pytest.raises(ProbeFailure, match=f"^{re.escape(message)}$") as info:
        stdoutlog.collect(params, Context())
    assert info.value.kind == "bad_params"


def test_a_log_path_that_is_a_directory_is_refused(tmp_path: Path) -> None:
    """A path that is a directory is not scanned: the probe fails saying so, with the
    path."""
    with pytest.raises(ProbeFailure, match=f"^{re.escape(str(tmp_path))}: is a directory$") as info:
        stdoutlog.collect({"path": str(tmp_path)}, Context())
    assert info.value.kind == "is_a_directory"
