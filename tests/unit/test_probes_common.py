"""tools.probes._common: what every probe shares on the target. The closed set of failure
kinds and how an OSError maps onto them, stat() results as facts, glob expansion that
names what matched nothing, the shallow walk, the guarded open that never opens a special
file, capped reads, and the Context that records each command a probe runs."""

from __future__ import annotations

import errno
import os
import stat
import types
from pathlib import Path

import pytest

from tools.probes import _common
from tools.probes._common import (
    ERROR_KINDS,
    Context,
    FileRefused,
    ProbeFailure,
    classify_oserror,
    expand_globs,
    failure_from_oserror,
    file_entry,
    file_kind,
    is_regular,
    kind_words,
    loads_strict,
    open_regular,
    profile_places,
    pulse,
    read_capped,
    read_text_capped,
    walk_shallow,
)

# -- failure kinds -------------------------------------------------------------------


def test_probe_failure_keeps_a_known_kind_with_its_message_and_path() -> None:
    """A failure raised with one of the declared kinds carries that kind, the message and
    the path it names."""
    failure = ProbeFailure("not_found", "/ws/x: No such file or directory", "/ws/x")
    assert (failure.kind, failure.message, failure.path) == (
        "not_found",
        "/ws/x: No such file or directory",
        "/ws/x",
    )
    assert str(failure) == "/ws/x: No such file or directory"


def test_probe_failure_with_an_undeclared_kind_becomes_error() -> None:
    """A kind outside the closed set is never passed on: the doctor sees ``error``."""
    failure = ProbeFailure("exploded", "boom")
    assert failure.kind == "error" and failure.path is None
    assert "exploded" not in ERROR_KINDS


@pytest.mark.parametrize(
    ("err", "kind"),
    [
        (errno.ENOENT, "not_found"),
        (errno.EACCES, "permission_denied"),
        (errno.EPERM, "permission_denied"),
        (errno.ENOTDIR, "not_a_directory"),
        (errno.EISDIR, "is_a_directory"),
        (errno.EIO, "io_error"),
        (errno.ELOOP, "io_error"),
        (None, "io_error"),
    ],
    ids=["ENOENT", "EACCES", "EPERM", "ENOTDIR", "EISDIR", "EIO", "ELOOP", "no-errno"],
)
def test_classify_oserror(err: int | None, kind: str) -> None:
    """Each errno a probe meets maps to its kind; any other (or none) is ``io_error``."""
    exc = OSError("bare") if err is None else OSError(err, os.strerror(err))
    assert classify_oserror(exc) == kind


def test_failure_from_oserror_names_the_path_and_the_reason() -> None:
    """The failure's message is ``path: strerror``, its kind the errno's, its path the one
    given."""
    failure = failure_from_oserror(OSError(errno.EACCES, "Permission denied"), "/ws/ckpt")
    assert failure.kind == "permission_denied"
    assert failure.message == "/ws/ckpt: Permission denied"
    assert failure.path == "/ws/ckpt"


def test_failure_from_oserror_without_strerror_uses_the_exception_text() -> None:
    """An OSError built from a bare message still gives a message naming the path."""
    failure = failure_from_oserror(OSError("disk on fire"), "/ws/log")
    assert failure.kind == "io_error" and failure.message == "/ws/log: disk on fire"


# -- JSON read from the target -------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"loss": NaN}', {"loss": "NaN"}),
        ('{"lr": Infinity, "g": -Infinity}', {"lr": "Infinity", "g": "-Infinity"}),
        (b'[1, 2.5, "x", null]', [1, 2.5, "x", None]),
    ],
    ids=["nan-bytes", "infinities-str", "plain-json"],
)
def test_loads_strict_keeps_non_json_constants_as_text(raw: bytes | str, expected: object) -> None:
    """``NaN`` and ``±Infinity`` come back as their text, so the value stays strict JSON;
    everything else parses as json does."""
    assert loads_strict(raw) == expected


# -- what a file is ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "kind", "words"),
    [
        (stat.S_IFDIR | 0o755, "dir", "a directory"),
        (stat.S_IFLNK | 0o777, "symlink", "a symlink"),
        (stat.S_IFIFO | 0o644, "fifo", "a FIFO"),
        (stat.S_IFSOCK | 0o755, "socket", "a socket"),
        (stat.S_IFCHR | 0o666, "device", "a character device"),
        (stat.S_IFBLK | 0o660, "device", "a block device"),
        (0, "other", "not a file"),
    ],
    ids=["dir", "symlink", "fifo", "socket", "char-device", "block-device", "no-type"],
)
def test_file_kind_and_its_words(mode: int, kind: str, words: str) -> None:
    """Each file type has its kind for a fact and its words for a refusal; the two kinds
    of device share a kind but not their words."""
    assert (file_kind(mode), kind_words(mode)) == (kind, words)


def test_a_regular_file_is_kind_file() -> None:
    """A regular file's mode is kind ``file``, whatever its permission bits."""
    assert file_kind(stat.S_IFREG | 0o600) == "file"


def test_is_regular(tmp_path: Path) -> None:
    """A file and a link to one are regular; a directory, a missing path, a dangling link
    are not, and with ``follow_symlinks=False`` a link to a file is not either."""
    (tmp_path / "f").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "f")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert is_regular(str(tmp_path / "f")) is True
    assert is_regular(str(tmp_path / "link")) is True
    assert is_regular(str(tmp_path / "link"), follow_symlinks=False) is False
    assert is_regular(str(tmp_path)) is False
    assert is_regular(str(tmp_path / "missing")) is False
    assert is_regular(str(tmp_path / "dangling")) is False


# -- places named by a profile -------------------------------------------------------


def test_expand_globs_keeps_plain_paths_and_sorts_each_patterns_matches(tmp_path: Path) -> None:
    """A path without magic is kept as given (even one that does not exist), with no
    pattern; a pattern's matches come sorted, each with the pattern, in the order the
    paths were given."""
    for name in ("b.log", "a.log", "c.txt"):
        (tmp_path / name).write_text("")
    plain = str(tmp_path / "missing.json")
    found, unmatched = expand_globs([plain, str(tmp_path / "*.log")])
    pattern = str(tmp_path / "*.log")
    assert found == [
        (plain, None),
        (str(tmp_path / "a.log"), pattern),
        (str(tmp_path / "b.log"), pattern),
    ]
    assert unmatched == []


def test_expand_globs_caps_each_pattern_and_names_patterns_that_matched_nothing(
    tmp_path: Path,
) -> None:
    """``most`` keeps the first matches of each pattern (in sorted order); a pattern that
    matched nothing is listed apart instead of being dropped."""
    for name in ("3.jsonl", "1.jsonl", "2.jsonl"):
        (tmp_path / name).write_text("")
    pattern, empty = str(tmp_path / "*.jsonl"), str(tmp_path / "*.parquet")
    found, unmatched = expand_globs([empty, pattern], most=2)
    assert found == [(str(tmp_path / "1.jsonl"), pattern), (str(tmp_path / "2.jsonl"), pattern)]
    assert unmatched == [empty]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (
            {"paths": ["/ws/a", "/ws/b"]},
            [("/ws/a", "named by the profile"), ("/ws/b", "named by the profile")],
        ),
        ({"paths": ["/ws/a"], "workspace": "/ws"}, [("/ws/a", "named by the profile")]),
        ({"workspace": "/ws"}, []),
        ({"paths": [], "workspace": "/ws"}, []),
    ],
    ids=["paths", "paths-and-workspace", "workspace-only", "no-paths-and-workspace"],
)
def test_profile_places(params: dict[str, object], expected: list[tuple[str, str]]) -> None:
    """The profile's paths each come with why they are looked at; a workspace alone gives
    no places (the probe looks in it on its own)."""
    assert profile_places(params, "dump") == expected


@pytest.mark.parametrize(
    "params",
    [{}, {"paths": []}, {"paths": None, "workspace": ""}],
    ids=["nothing", "empty-paths", "empty-workspace"],
)
def test_profile_places_without_paths_or_workspace_is_bad_params(params: dict[str, object]) -> None:
    """With neither paths nor a workspace the probe has nowhere to look: ``bad_params``,
    the message saying what kind of path it needed."""
    with pytest.raises(ProbeFailure, match=r"^needs trace paths or a workspace$") as err:
        profile_places(params, "trace")
    assert err.value.kind == "bad_params"


# -- the shallow walk ----------------------------------------------------------------


def _tree(root: Path) -> None:
    """root/{top.txt, a/{a.txt, b/{b.txt, c/c.txt}}, .git/{HEAD, objects/}}."""
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / ".git" / "objects").mkdir(parents=True)
    (root / "top.txt").write_text("")
    (root / "a" / "a.txt").write_text("")
    (root / "a" / "b" / "b.txt").write_text("")
    (root / "a" / "b" / "c" / "c.txt").write_text("")
    (root / ".git" / "HEAD").write_text("")


@pytest.mark.parametrize(
    ("depth", "dirs"),
    [(0, [""]), (1, ["", "/a"]), (2, ["", "/a", "/a/b"]), (9, ["", "/a", "/a/b", "/a/b/c"])],
    ids=["depth-0", "depth-1", "depth-2", "deeper-than-the-tree"],
)
def test_walk_shallow_stops_at_depth_and_skips_hidden_directories(
    tmp_path: Path, depth: int, dirs: list[str]
) -> None:
    """The root and the directories at most ``depth`` levels below it, each with its file
    names; ``.git`` is never entered."""
    _tree(tmp_path)
    walked = {top: sorted(files) for top, files in walk_shallow(str(tmp_path), depth)}
    names = {"": ["top.txt"], "/a": ["a.txt"], "/a/b": ["b.txt"], "/a/b/c": ["c.txt"]}
    assert walked == {str(tmp_path) + d: names[d] for d in dirs}


@pytest.mark.parametrize("depth", [1, 2], ids=["depth-1", "depth-2"])
def test_walk_shallow_reaches_as_deep_from_a_root_with_a_trailing_slash(
    tmp_path: Path, depth: int
) -> None:
    """A workspace written ``/ws/`` is walked as deep as ``/ws``: the same directories,
    each named as ``os.walk`` names it below the root as given."""
    _tree(tmp_path)
    plain = sorted(top[len(str(tmp_path)) :] for top, _ in walk_shallow(str(tmp_path), depth))
    slashed = sorted(
        top[len(str(tmp_path)) + 1 :] for top, _ in walk_shallow(str(tmp_path) + "/", depth)
    )
    assert plain == ["", "/a", "/a/b"][: depth + 1]
    assert slashed == ["", "a", "a/b"][: depth + 1]


def test_walk_shallow_of_a_hidden_root_still_walks_it(tmp_path: Path) -> None:
    """Only directories below the root are skipped for being hidden: a root that is itself
    a dot-directory is walked."""
    root = tmp_path / ".cache"
    (root / "x").mkdir(parents=True)
    (root / "x" / "f").write_text("")
    walked = {top: files for top, files in walk_shallow(str(root), 1)}
    assert walked == {str(root): [], str(root / "x"): ["f"]}


# -- stat as a fact ------------------------------------------------------------------


def test_file_entry_of_a_file(tmp_path: Path) -> None:
    """A file's entry names its path, kind, size, mtime and permission bits (octal)."""
    path = tmp_path / "train.log"
    path.write_bytes(b"12345")
    path.chmod(0o640)
    os.utime(path, (1_700_000_000.5, 1_700_000_000.5))
    assert file_entry(str(path)) == {
        "path": str(path),
        "kind": "file",
        "size": 5,
        "mtime": 1_700_000_000.5,
        "mode": "0o640",
    }


def test_file_entry_uses_the_stat_it_is_given(tmp_path: Path) -> None:
    """A stat already taken is used as it is: the path is not stat()ed again (here it no
    longer exists)."""
    d = tmp_path / "ckpt"
    d.mkdir()
    d.chmod(0o750)
    st = os.stat(d)
    d.rmdir()
    entry = file_entry(str(d), st)
    assert entry["kind"] == "dir" and entry["mode"] == "0o750" and "error" not in entry


@pytest.mark.parametrize(
    ("make", "error", "kind"),
    [
        ("missing", "No such file or directory", "not_found"),
        ("loop", "symlink loop (too many levels of symbolic links)", "io_error"),
    ],
    ids=["missing", "symlink-loop"],
)
def test_file_entry_of_what_cannot_be_stat_ed_is_a_fact(
    tmp_path: Path, make: str, error: str, kind: str
) -> None:
    """A failed stat is an entry too, with the reason and its kind; a symlink loop says
    it is one."""
    path = tmp_path / "x"
    if make == "loop":
        path.symlink_to(path)
    assert file_entry(str(path)) == {"path": str(path), "error": error, "error_kind": kind}


def test_pulse_is_seconds_since_the_file_changed_on_the_targets_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``age_s`` is now minus the mtime, rounded to milliseconds."""
    path = tmp_path / "log"
    path.write_text("x")
    os.utime(path, (1000.0, 1000.0))
    monkeypatch.setattr(_common, "time", types.SimpleNamespace(time=lambda: 1042.12345))
    entry = pulse(str(path))
    assert entry["age_s"] == 42.123 and entry["mtime"] == 1000.0


def test_pulse_of_a_missing_file_has_no_age(tmp_path: Path) -> None:
    """A file that cannot be stat()ed has no age: the entry is the error alone."""
    path = str(tmp_path / "gone.log")
    assert pulse(path) == {
        "path": path,
        "error": "No such file or directory",
        "error_kind": "not_found",
    }


# -- the guarded open ----------------------------------------------------------------


def test_open_regular_opens_a_file_for_binary_reading_named_by_its_path(tmp_path: Path) -> None:
    """A regular file (or a link to one) is opened read-only, binary, named by the path
    it was asked for."""
    (tmp_path / "real.json").write_bytes(b'{"a": 1}')
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "real.json")
    with open_regular(str(link)) as f:
        assert f.name == str(link) and f.mode == "rb"
        assert f.read() == b'{"a": 1}'


def _special(tmp_path: Path, what: str) -> str:
    if what == "dir":
        return str(tmp_path)
    if what == "fifo":
        os.mkfifo(tmp_path / "pipe.log")
        return str(tmp_path / "pipe.log")
    if what == "link-to-fifo":
        os.mkfifo(tmp_path / "pipe")
        (tmp_path / "out.log").symlink_to(tmp_path / "pipe")
        return str(tmp_path / "out.log")
    if what == "char-device":
        return os.devnull
    if what == "loop":
        (tmp_path / "loop").symlink_to(tmp_path / "loop")
        return str(tmp_path / "loop")
    return str(tmp_path / "missing")


@pytest.mark.parametrize(
    ("what", "kind", "reason"),
    [
        ("dir", "is_a_directory", "is a directory"),
        ("fifo", "not_a_file", "not a regular file (a FIFO); not opened"),
        ("link-to-fifo", "not_a_file", "not a regular file (a FIFO); not opened"),
        ("char-device", "not_a_file", "not a regular file (a character device); not opened"),
        ("loop", "io_error", "symlink loop (too many levels of symbolic links)"),
        ("missing", "not_found", "No such file or directory"),
    ],
    ids=["dir", "fifo", "link-to-fifo", "char-device", "symlink-loop", "missing"],
)
def test_open_regular_refuses_what_is_not_a_regular_file(
    tmp_path: Path, what: str, kind: str, reason: str
) -> None:
    """Anything but a regular file is refused without being opened (a FIFO would block, a
    device may act): FileRefused with the kind, the reason, and a message naming the path."""
    path = _special(tmp_path, what)
    with pytest.raises(FileRefused) as err:
        open_regular(path)
    refused = err.value
    assert (refused.kind, refused.reason, refused.path) == (kind, reason, path)
    assert str(refused) == refused.message == f"{path}: {reason}"


def test_file_refused_is_both_a_probe_failure_and_an_oserror() -> None:
    """A refusal is caught by ``except OSError`` (a per-file problem) and by
    ``except ProbeFailure``; its errno and filename are the OSError's."""
    refused = FileRefused("is_a_directory", "is a directory", "/ws/d", errno.EISDIR)
    assert isinstance(refused, OSError) and isinstance(refused, ProbeFailure)
    assert (refused.errno, refused.strerror, refused.filename) == (
        errno.EISDIR,
        "is a directory",
        "/ws/d",
    )
    assert str(refused) == "/ws/d: is a directory"


def test_file_refused_with_an_undeclared_kind_becomes_error() -> None:
    """Like any probe failure, a refusal of an undeclared kind is ``error``, and its
    errno defaults to EINVAL."""
    refused = FileRefused("weird", "odd", "/p")
    assert refused.kind == "error" and refused.errno == errno.EINVAL


# -- capped reads --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "cap", "expected"),
    [
        (b"", 10, (b"", False)),
        (b"abc", 10, (b"abc", False)),
        (b"abcde", 5, (b"abcde", False)),
        (b"abcdef", 5, (b"abcde", True)),
        (b"abc", 0, (b"", True)),
    ],
    ids=["empty", "under-cap", "exactly-cap", "one-over-cap", "zero-cap"],
)
def test_read_capped(
    tmp_path: Path, content: bytes, cap: int, expected: tuple[bytes, bool]
) -> None:
    """At most ``cap`` bytes, and whether the file held more than that."""
    path = tmp_path / "f"
    path.write_bytes(content)
    assert read_capped(str(path), cap) == expected


def test_read_capped_reads_past_one_chunk(tmp_path: Path) -> None:
    """A cap beyond the 1 MiB read size is still honoured to the byte."""
    content = bytes(range(256)) * 4100  # 1,049,600 bytes
    path = tmp_path / "big.bin"
    path.write_bytes(content)
    cap = (1 << 20) + 7
    data, more = read_capped(str(path), cap)
    assert data == content[:cap] and more is True
    assert read_capped(str(path), len(content)) == (content, False)


def test_read_capped_refuses_a_fifo_as_an_oserror(tmp_path: Path) -> None:
    """A FIFO is never read (nobody may be writing it): the refusal is an OSError."""
    os.mkfifo(tmp_path / "p")
    with pytest.raises(OSError, match=r"p: not a regular file \(a FIFO\); not opened$"):
        read_capped(str(tmp_path / "p"), 10)


def test_read_text_capped_replaces_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    """The capped bytes decoded as UTF-8, an undecodable byte becoming U+FFFD."""
    path = tmp_path / "log.txt"
    path.write_bytes(b"step 1 \xff loss \xc3\xa9 more")
    assert read_text_capped(str(path), 16) == ("step 1 \ufffd loss \u00e9", True)


# -- the context handed to each probe ------------------------------------------------


def test_remaining_without_a_deadline_is_the_default() -> None:
    """No deadline: the time left is whatever default the caller asks for."""
    assert Context().remaining() == 60.0 and Context().remaining(5.0) == 5.0


@pytest.mark.parametrize(
    ("deadline", "left"),
    [(130.0, 30.0), (100.05, 0.1), (50.0, 0.1)],
    ids=["ahead", "nearly-gone", "passed"],
)
def test_remaining_is_time_to_the_deadline_never_below_a_tenth(
    monkeypatch: pytest.MonkeyPatch, deadline: float, left: float
) -> None:
    """The seconds from now (monotonic) to the deadline, floored at 0.1 so a command is
    still given a limit it can be killed by."""
    monkeypatch.setattr(_common, "time", types.SimpleNamespace(monotonic=lambda: 100.0))
    assert Context(deadline=deadline).remaining() == left


def test_run_records_the_command_and_returns_its_output() -> None:
    """A command's rc, stdout and stderr come back, and the context records its argv and
    rc so the fact can name it."""
    ctx = Context()
    rc, out, err = ctx.run(["printf", "%s-%s", "a", "b"])
    assert (rc, out, err) == (0, b"a-b", b"")
    assert ctx.commands == [{"argv": ["printf", "%s-%s", "a", "b"], "rc": 0}]


def test_run_of_a_failing_command_is_its_exit_status() -> None:
    """A non-zero exit is data: the rc is returned and recorded."""
    ctx = Context()
    assert ctx.run(["false"]) == (1, b"", b"")
    assert ctx.commands == [{"argv": ["false"], "rc": 1}]


def test_run_of_a_missing_command_has_no_rc_and_says_so() -> None:
    """A command that is not installed gives rc None and a stderr naming it; the record
    keeps rc None."""
    ctx = Context()
    rc, out, err = ctx.run(["no-such-tool-xyz", "--version"])
    assert (rc, out, err) == (None, b"", b"no-such-tool-xyz: command not found")
    assert ctx.commands == [{"argv": ["no-such-tool-xyz", "--version"], "rc": None}]


def test_run_past_its_time_limit_is_killed_and_has_no_rc() -> None:
    """A command that outlives its limit is killed: rc None, a stderr saying it timed out
    after how many (whole) seconds, and the record keeps rc None."""
    ctx = Context()
    rc, out, err = ctx.run(["sleep", "5"], timeout=0.05)
    assert (rc, out, err) == (None, b"", b"sleep: timed out after 0s")
    assert ctx.commands == [{"argv": ["sleep", "5"], "rc": None}]
