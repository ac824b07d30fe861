"""Property-based fuzzing of what a user or a machine hands the doctor (issue 14): profiles,
train logs, console logs, checkpoint metadata, and option values at the real console
script, special files among them.

The properties are the documented contract: a profile loads or is a ``ConfigError``; a
log or metadata file yields its fact (JSON-serialisable: it is stored in the ledger) or
a ``ProbeFailure`` naming it, never another exception; the CLI exits 0, 1 or 2, prints no
traceback, says a refusal in one line, and finishes within its limits. (URIs are fuzzed
in tests/e2e/test_cli_hostile.py, transcripts in tests/e2e/test_transcript_seal.py.)"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.lib.cli import SCRIPT
from tools.errors import DoctorError
from tools.parsers import stdoutlog
from tools.parsers.trainlog import summarize_log
from tools.probes import checkpoints
from tools.probes._common import Context, ProbeFailure
from tools.profile import TargetProfile, load_config

FAST = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _fresh(tmp_path: Path) -> Path:
    """A directory of its own for one example (the fixture's is shared by all of them)."""
    return Path(tempfile.mkdtemp(dir=tmp_path))


# -- values --------------------------------------------------------------------------

_numbers = st.one_of(
    st.integers(),
    st.integers(min_value=10**300, max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
)
_strings = st.text(max_size=40) | st.sampled_from(
    ["", " ", "local", "ssh://h", "../../etc", "/dev/zero", "nan", "1e300", "$(id)", "\x00"]
)
_scalars = st.one_of(st.none(), st.booleans(), _numbers, _strings)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_strings, inner, max_size=4),
    max_leaves=12,
)


def _toml_value(value: Any) -> str:
    """``value`` written as TOML (NaN and infinities as TOML spells them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string is a JSON string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value if v is not None) + "]"
    if isinstance(value, dict):
        body = ", ".join(f"{json.dumps(str(k))} = {_toml_value(v)}" for k, v in value.items())
        return "{" + body + "}"
    return '""'


_FIELDS = sorted(TargetProfile.model_fields)
_profiles = st.fixed_dictionaries(
    {"uri": st.sampled_from(["local", "ssh://u@h:22", "ssh://[::1]", "docker://c"]) | _strings},
    optional={
        name: _json | st.sampled_from([{"step": "x"}, {"train": 1.5}, [1, 2], "py", "all"])
        for name in [*_FIELDS, "no_such_field"]
        if name != "uri"
    },
)


def _profile_text(default: Any, targets: dict[str, dict[str, Any]]) -> str:
    lines = [] if default is None else [f"default_target = {_toml_value(default)}"]
    for name, fields in targets.items():
        lines.append(f"[targets.{json.dumps(name)}]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in fields.items() if v is not None]
    return "\n".join(lines) + "\n"


@FAST
@given(
    default=st.none() | _strings,
    targets=st.dictionaries(st.text(min_size=1, max_size=8), _profiles, max_size=3),
)
def test_any_profile_loads_or_is_a_config_error(
    tmp_path: Path, default: Any, targets: dict[str, dict[str, Any]]
) -> None:
    """Any profile text loads, with every target's sweep spec buildable, or is refused with
    an error that says why; nothing else escapes."""
    path = _fresh(tmp_path) / "doctor.toml"
    path.write_text(_profile_text(default, targets))
    try:
        config = load_config(path)
        for name in config.targets:
            # What a sweep then builds from it: its spec (time limits checked there).
            config.target(name).sweep_spec()
    except DoctorError as exc:
        assert str(exc).strip(), "a refusal says why"


@FAST
@given(data=st.binary(max_size=400), cut=st.integers(min_value=0, max_value=400))
def test_any_bytes_in_a_profile_are_a_config_error_at_worst(
    tmp_path: Path, data: bytes, cut: int
) -> None:
    """A real template, cut anywhere and followed by any bytes."""
    from tools.profile import TEMPLATE

    path = _fresh(tmp_path) / "doctor.toml"
    path.write_bytes(TEMPLATE.encode()[:cut] + data)
    with contextlib.suppress(DoctorError):
        load_config(path)


# -- logs ----------------------------------------------------------------------------

_record = st.dictionaries(
    st.sampled_from(
        [
            "step",
            "global_step",
            "_step",
            "loss",
            "tokens_per_s",
            "tok/s",
            "time",
            "role",
            "rank",
            "epoch",
            "train/loss",
            "throughput",
            "lr",
        ]
    )
    | _strings,
    _json,
    max_size=6,
)
_line = st.one_of(
    _record.map(lambda r: json.dumps(r, allow_nan=True)),
    st.text(max_size=120),
    st.binary(max_size=80).map(lambda b: b.decode("latin-1")),
    st.sampled_from(
        [
            "step=3 loss=2.31 tokens_per_s=812.5",
            "Train - Step 4 [4/100], Loss: 1.2",
            "{'loss': 1.0, 'global_step': 2}",
            "Step 5 | loss:1.1 tokens_per_second_per_gpu:9e999",
            "[" * 3000,
            '{"step": ' + "9" * 500 + "}",
            "step,loss,tokens_per_s",
            "1,2.0,nan",
        ]
    ),
)
_NAMES = ["train_log.jsonl", "metrics.csv", "trainer_state.json", "train.log", "log.txt"]


def _jsonable(value: Any) -> None:
    """What the ledger stores: strict JSON, no NaN."""
    json.dumps(value, allow_nan=False)


@FAST
@given(
    lines=st.lists(_line, max_size=40),
    name=st.sampled_from(_NAMES),
    truncate=st.booleans(),
)
# Found by this test: a carriage return inside a CSV field made the csv module raise,
# and an infinite value in a text record made the fact unwritable as strict JSON.
@example(lines=["0\r0"], name="metrics.csv", truncate=False)
@example(lines=["STEP 0:A:1E310"], name="metrics.csv", truncate=False)
def test_any_train_log_yields_its_summary(
    tmp_path: Path, lines: list[str], name: str, truncate: bool
) -> None:
    """Any train log, of any supported name, whole or cut in half, yields a summary that is
    strict JSON."""
    path = _fresh(tmp_path) / name
    data = "\n".join(lines).encode("utf-8", "surrogatepass")
    path.write_bytes(data[: len(data) // 2] if truncate else data)
    with open(path, "rb", buffering=0) as raw:
        summary = summarize_log(raw, workers=1)
    _jsonable(summary)


@FAST
@given(lines=st.lists(_line, max_size=40))
def test_any_console_log_yields_its_scan(tmp_path: Path, lines: list[str]) -> None:
    """Any console log after a traceback's opening lines yields a scan that is strict
    JSON."""
    head = ["Traceback (most recent call last):", '  File "x.py", line 1, in <module>']
    path = _fresh(tmp_path) / "stdout.log"
    path.write_bytes("\n".join(head + lines).encode("utf-8", "surrogatepass"))
    with open(path, "rb", buffering=0) as raw:
        found = stdoutlog.scan(raw)
    _jsonable(found)


@FAST
@given(
    files=st.dictionaries(
        st.sampled_from(
            ["metadata.json", "meta.json", "trainer_state.json", "config.json", "hparams.yaml"]
        ),
        st.one_of(
            _json.map(lambda v: json.dumps(v, allow_nan=True)),
            st.text(max_size=200),
            st.just("[" * 5000),
        ),
        max_size=3,
    ),
    step_names=st.lists(
        st.sampled_from(["step_10", "checkpoint-20", "epoch=0-step=30.ckpt", "global_step40"]),
        min_size=1,
        max_size=3,
        unique=True,
    ),
)
# Found by this test: a metadata file holding Infinity made a fact no strict JSON holds.
@example(files={"metadata.json": "Infinity"}, step_names=["step_10"])
@example(files={"meta.json": '{"loss": NaN, "step": -Infinity}'}, step_names=["checkpoint-20"])
def test_any_checkpoint_metadata_yields_the_fact(
    tmp_path: Path, files: dict[str, str], step_names: list[str]
) -> None:
    """Any metadata files in any checkpoint folder naming yield a strict-JSON fact, or a
    probe failure that says why."""
    root = _fresh(tmp_path) / "checkpoints"
    for step in step_names:
        (root / step).mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (root / step / name).write_text(text, errors="surrogatepass")
    try:
        value = checkpoints.collect({"path": str(root)}, Context())
    except ProbeFailure as exc:
        assert str(exc).strip()
        return
    _jsonable(value)


# -- option values at the console script ---------------------------------------------


def _special(tmp: Path, kind: str) -> str:
    path = tmp / f"special-{kind}"
    if path.exists() or path.is_symlink():
        return str(path)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
    elif kind == "loop":
        path.symlink_to(path.with_name(path.name + "-b"))
        path.with_name(path.name + "-b").symlink_to(path)
    elif kind == "devzero":
        return "/dev/zero"
    elif kind == "missing":
        return str(path)
    else:
        path.write_bytes(b"\xff\xfe garbage \x00\n[[[")
    return str(path)


_SPECIAL = st.sampled_from(["fifo", "dir", "loop", "devzero", "missing", "garbage"])
_seconds = st.one_of(
    st.sampled_from(["0", "-1", "nan", "inf", "1e300", "abc", "", "3", "0.5", "604801"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp / "state"), "HOME": str(tmp)}
    started = time.monotonic()
    done = subprocess.run(
        [SCRIPT, "-q", *args], capture_output=True, text=True, timeout=60, env=env, cwd=tmp
    )
    assert time.monotonic() - started < 60
    return done


# A port nothing listens on: an input that passes is tried and fails fast (exec: 255).
_REFUSED_PORT = ("-t", "ssh://u@127.0.0.1:1", "--", "true")


def _documented(done: subprocess.CompletedProcess[str], codes: tuple[int, ...] = (0, 1, 2)) -> None:
    """An exit code the command documents (exec: 255 for a connection that failed), no
    traceback, and a refusal (2) in one line."""
    said = done.stdout + done.stderr
    assert done.returncode in codes, (done.returncode, said[-2000:])
    assert "Traceback" not in said, said[-2000:]
    if done.returncode == 2:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("dflash-doctor: error: "), lines


SLOW = settings(
    # Each example is three console-script runs (about a second each): few examples, but
    # the fixed edge cases in the strategies (nan, inf, 0, 1e300, each special file) are
    # drawn early by hypothesis.
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@pytest.mark.slow
@SLOW
@given(timeout=_seconds, connect=_seconds, fmt=st.sampled_from(["md", "json", "xml", ""]))
def test_any_option_values_are_run_or_refused_in_one_line(
    tmp_path: Path, timeout: str, connect: str, fmt: str
) -> None:
    """Any time limit or format at the real console script either runs, fails with a
    documented exit code, or is refused in one line; never a traceback."""
    # exec: the command's own code, 2 for a refused value, 255 when it could not be run
    # or ran out of its time (a limit of 1e-300 s is a limit, and it is reached).
    _documented(
        _cli(tmp_path, "exec", "--timeout", timeout, "--target", "local", "--", "true"), (0, 2, 255)
    )
    _documented(
        _cli(tmp_path, "exec", "--connect-timeout", connect, "--retries", "0", *_REFUSED_PORT),
        (2, 255),
    )
    _documented(_cli(tmp_path, "diagnose", "--format", fmt, "--target", "ssh://h:99999"))


@pytest.mark.slow
@SLOW
@given(kind=_SPECIAL, option=st.sampled_from(["--config", "--known-hosts", "--ssh-config"]))
def test_any_special_file_as_an_input_is_refused_in_one_line(
    tmp_path: Path, kind: str, option: str
) -> None:
    """Any special file given as a profile, known_hosts or ssh config is refused in one line
    before connecting; a missing or garbled known_hosts is used as OpenSSH would."""
    path = _special(tmp_path, kind)
    if option == "--config":
        done = _cli(tmp_path, "facts", "--config", path, "--target", "t")
    else:
        done = _cli(tmp_path, "exec", option, path, "--retries", "0", *_REFUSED_PORT)
    # A special file is refused before connecting. A missing known_hosts is a fresh one,
    # and lines of one that do not parse are skipped with a warning, as OpenSSH does: the
    # connection is then tried (and refused: 255).
    usable = option != "--config" and kind in ("missing", "garbage")
    _documented(done, (2, 255) if usable else (2,))


@pytest.mark.slow
@SLOW
@given(kind=_SPECIAL, command=st.sampled_from(["replay", "report"]))
def test_any_special_file_as_a_transcript_is_refused_in_one_line(
    tmp_path: Path, kind: str, command: str
) -> None:
    """Any special file handed to ``replay`` or ``report`` as a transcript is refused in one
    line, exit 2."""
    done = _cli(tmp_path, command, _special(tmp_path, kind))
    _documented(done)
    assert done.returncode == 2, done.stderr
