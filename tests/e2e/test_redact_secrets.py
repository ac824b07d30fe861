"""Secrets never reach the disk (issue 14, "Secrets reach the disk"): every format the
detector claims (tools.secrets_detect: the detect-secrets plugins it enables) and every
one of the redactor's own rules, planted in a log line, a JSON metadata value, a shell
script and a command line, is gone from the transcript and from the output facts are made
of; end to end, from the transcript, the ledger, the graph and ``facts --json``; and a
target's host name (an SSH config alias, the host probe's answer) goes the same way.

Every secret here is fake and made from pieces at import time, so that this file holds
none; each is well formed (the right prefix, length and alphabet; a JWT's parts decode).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from detect_secrets.plugins import keyword

from tests.lib.cli import cli
from tests.lib.planted_secrets import (
    BY_KIND,
    ISSUE_24,
    PLANTED,
    REPORTED,
    RNG,
    Planted,
    leaks,
)
from tests.lib.sshd import SSHServer
from tools import secrets_detect
from tools.probes._runner import SENTINEL
from tools.redact import Redactor
from tools.sweep import SweepSpec, sweep
from tools.transcript import TranscriptWriter, read_transcript, unb64
from tools.transport import LocalTransport
from tools.transport.record import RecordingTransport

# -- the detector's claims are all planted --------------------------------------------


def test_every_format_the_detector_claims_is_planted() -> None:
    """Each enabled plugin has a planted secret, and each of its patterns (each keyword
    form, each private-key marker) matches one: enabling a plugin needs a test of it."""
    claimed = {p.claimed_by for p in PLANTED} - {"hand"}
    assert claimed == set(secrets_detect.enabled())
    for plugin in secrets_detect._regex_plugins():
        for pattern in plugin.denylist:
            assert any(
                pattern.search(line)
                for p in PLANTED
                if p.claimed_by == type(plugin).__name__
                for line in p.form.split("\n")
            ), (type(plugin).__name__, pattern.pattern)
    for pattern in keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP:
        assert any(pattern.search(p.form) for p in PLANTED if p.claimed_by == "KeywordDetector")
    marker_plugin = secrets_detect._private_key_plugin()
    for pattern in marker_plugin.denylist:
        assert any(pattern.search(p.form) for p in PLANTED), pattern.pattern


def test_a_pattern_is_skipped_only_where_it_cannot_match() -> None:
    """A text is not scanned for a pattern when it lacks the plain run read from the
    pattern: that run is in each of the pattern's matches in the planted secrets."""
    for plugin in secrets_detect._regex_plugins():
        for pattern in plugin.denylist:
            literal = secrets_detect._literal(pattern)
            matches = [m.group(0) for p in PLANTED for m in pattern.finditer(p.form)]
            assert matches, pattern.pattern
            for match in matches:
                assert literal in (match.lower() if pattern.flags & re.I else match)


def test_the_key_words_are_the_keyword_plugins() -> None:
    """The words read from the keyword plugin's list are plain words, each of which its
    own pattern takes."""
    words = secrets_detect.key_words()
    assert "password" in words and "api_key" in words and "apikey" in words
    assert all(re.fullmatch(keyword.DENYLIST_REGEX, word, re.I) for word in words)


# -- four places, through the recorder as a session records ---------------------------


def _log(p: Planted) -> bytes:
    lines = ["step 1 loss 2.0", f"2026-01-02 03:04:05 WARNING {p.form}", "", "step 2 loss 1.9"]
    return ("\n".join(lines) + "\n").encode()


def _metadata(p: Planted) -> bytes:
    record: dict[str, Any] = {"step": 10, "note": p.form}
    if p.name is not None:
        record[p.name.lstrip("-")] = p.parts[0]
    return (json.dumps(record) + "\n").encode()


def _script(p: Planted) -> bytes:
    return ("#!/bin/sh\nset -e\n" + p.form + "\npython train.py\n").encode()


def _argv(p: Planted) -> list[str]:
    argv = ["python", "train.py", "--note", p.form]
    if p.name is not None:
        argv += [f"--{p.name.lstrip('-')}", p.parts[0]]
    return argv


PLACES: dict[str, Callable[[Planted], bytes]] = {
    "log_line": _log,
    "metadata_value": _metadata,
    "shell_script": _script,
}


def _recorded(tmp_path: Path, argv: list[str], redactor: Redactor) -> tuple[str, str]:
    """Runs ``argv`` for real through the recorder; the transcript's bytes with its
    outputs decoded, and the output as the caller (the fact maker) got it."""
    path = tmp_path / "transcript.jsonl"
    writer = TranscriptWriter(path, {"target": "local"}, redactor)
    result = RecordingTransport(LocalTransport(), writer).run(argv, timeout=30)
    writer.close()
    assert result.rc == 0, result.stderr
    return _transcript_text(path), result.stdout.decode("utf-8", "replace")


def _transcript_text(path: Path) -> str:
    """A transcript's every line, its outputs decoded (as base64 they would hide nothing
    and could match a window of a secret that is itself base64, as a JWT's parts are)."""
    parts = []
    for line in path.read_text().splitlines():
        event = json.loads(line)
        for key in ("stdout", "stderr"):
            if isinstance(event.get(key), str):
                parts.append(unb64(event.pop(key)).decode("utf-8", "replace"))
        parts.append(json.dumps(event, ensure_ascii=False))
    read_transcript(path)  # and it is a whole, well-chained transcript
    return "\n".join(parts)


@pytest.mark.parametrize("place", [*PLACES, "command_line"])
@pytest.mark.parametrize("kind", sorted(BY_KIND))
def test_a_planted_secret_is_not_recorded(tmp_path: Path, kind: str, place: str) -> None:
    """Each kind of secret, planted in a log line, a metadata value, a script or a command
    line, is in neither the transcript nor the output returned; the text around it keeps its
    shape."""
    planted = BY_KIND[kind]
    if place == "command_line":
        argv = ["echo", *_argv(planted)]  # as `ps` shows a command line
    else:
        source = tmp_path / "planted"
        source.write_bytes(PLACES[place](planted))
        argv = ["cat", str(source)]
    recorded, returned = _recorded(tmp_path, argv, Redactor())
    assert leaks(recorded, [planted]) == [], recorded
    assert leaks(returned, [planted]) == [], returned
    if place == "log_line":
        # The lines around it, after the blank line that ends a key cut short, are kept.
        assert returned.startswith("step 1 loss 2.0\n") and "\n\nstep 2 loss 1.9\n" in returned
    if place == "metadata_value":
        assert json.loads(returned)["step"] == 10  # still the same JSON document


def test_the_bundles_answer_stays_json_with_every_secret_in_it() -> None:
    """All the secrets at once, as the bundle answers: a log's tail (a list of lines),
    a metadata record, a process's command line and environment; the document keeps its
    shape and none of them is left."""
    lines = [line for p in PLANTED for line in _log(p).decode().splitlines()]
    value = {
        "tail": lines,
        "metadata": {p.kind: json.loads(_metadata(p)) for p in PLANTED},
        "processes": [{"cmdline": _argv(p)} for p in PLANTED],
        "env": {"TORCH_NONCE": BY_KIND["hex_env"].parts[0], "HF_TOKEN": BY_KIND["hf_token"].form},
    }
    doc = {"format": 1, "results": [{"probe": "x", "ok": True, "value": value}]}
    raw = (SENTINEL + json.dumps(doc) + "\n").encode()
    out = Redactor().data(raw).decode()
    assert out.startswith(SENTINEL) and out.endswith("\n")
    parsed = json.loads(out[len(SENTINEL) :])
    got = parsed["results"][0]["value"]
    assert len(got["tail"]) == len(lines) and len(got["processes"]) == len(PLANTED)
    assert leaks(out, PLANTED) == []


def test_ordinary_training_text_keeps_its_digests_paths_and_settings() -> None:
    """What looks random in a training log but is no secret is left: a checkpoint's
    sha256, a commit under a JSON key, a cache path in an environment setting."""
    digest, commit = f"{RNG.getrandbits(256):064x}", f"{RNG.getrandbits(160):040x}"
    text = "\n".join(
        [
            f"saved checkpoint /data/runs/exp12/step_000690 sha256 {digest}",
            json.dumps({"step": 690, "loss": 2.1, "commit": commit, "tokens_per_sec": 12800}),
            "export TORCHINDUCTOR_CACHE_DIR=/data/cache/inductor_cache_dir_of_the_run_12",
            "CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc-per-node 4 train.py --max-tokens 4096",
        ]
    )
    assert Redactor().output(text) == text


def test_a_key_cut_before_its_end_is_redacted_to_the_blank_line() -> None:
    """A key with no END line, its lines behind a log prefix (torchrun's ``[rank0]:``,
    which the old rule took for the key's end): gone to the blank line that ends the
    block, as one placeholder; what follows the blank line stays."""
    key = BY_KIND["pem_without_end"]
    block = "\n".join(f"[rank0]: {line}" for line in key.form.split("\n"))
    out = Redactor().text(f"loading key\n{block}\n[rank0]: done\n\nstep 3 loss 1.8")
    assert out == "loading key\n[rank0]: [REDACTED-SECRET-1]\n\nstep 3 loss 1.8"
    assert Redactor().text(key.form) == "[REDACTED-SECRET-1]"  # to the end of the text


def test_redacting_twice_changes_nothing() -> None:
    """Replay relies on it: the detector finds nothing in its own placeholders."""
    text = "\n".join(_log(p).decode() for p in PLANTED)
    redactor = Redactor()
    once = redactor.output(text)
    assert redactor.output(once) == once


def test_a_host_name_the_target_tells_is_redacted_everywhere() -> None:
    """The host probe's "hostname" is learned from the answer it stands in: it is a
    placeholder there and wherever else the name stands, its short name too."""
    doc = {
        "format": 1,
        "results": [
            {"probe": "layout", "ok": True, "value": {"root": "/home/u/gpu-node-7.corp.example"}},
            {"probe": "host", "ok": True, "value": {"hostname": "gpu-node-7.corp.example"}},
        ],
    }
    out = Redactor().data(b"ssh gpu-node-7 up\n" + (SENTINEL + json.dumps(doc)).encode()).decode()
    assert "gpu-node-7" not in out, out
    parsed = json.loads(out.split("\n")[1][len(SENTINEL) :])
    assert re.fullmatch(r"\[REDACTED-HOST-\d\]", parsed["results"][1]["value"]["hostname"])
    assert re.match(r"ssh \[REDACTED-HOST-\d\] up\n", out)
    assert Redactor().any({"hostname": "localhost"}) == {"hostname": "localhost"}


def test_a_short_host_name_is_redacted_where_it_is_the_host_not_as_a_word() -> None:
    """A host called "vm" is a placeholder as the host probe's answer; as a word it would
    also take /proc/sys/vm and "vm.max_map_count" from facts that need them."""
    doc = {
        "format": 1,
        "results": [
            {"probe": "host", "ok": True, "value": {"hostname": "vm"}},
            {"probe": "gpus", "ok": True, "value": {"read": "/proc/sys/vm/overcommit_memory"}},
        ],
    }
    out = json.loads(
        Redactor().data((SENTINEL + json.dumps(doc)).encode()).decode()[len(SENTINEL) :]
    )
    assert re.fullmatch(r"\[REDACTED-HOST-\d\]", out["results"][0]["value"]["hostname"])
    assert out["results"][1]["value"]["read"] == "/proc/sys/vm/overcommit_memory"


@pytest.mark.slow
def test_redaction_of_a_10_mb_log_stays_within_bounds() -> None:
    """The detector runs on every command's output: 10 MB of training log, a secret in
    it, is redacted in a time of the order of the text's own scans (one regular expression
    per format, not one per line), and the secret is gone."""
    import time

    line = "[rank0] step 12 loss 2.3456 lr 1.0e-04 tokens_per_sec 12800 grad_norm 0.812"
    lines = [line] * (10_000_000 // len(line))
    lines[len(lines) // 2] = BY_KIND["stripe_sk"].form
    text = "\n".join(lines)
    started = time.perf_counter()
    out = Redactor().text(text)
    elapsed = time.perf_counter() - started
    assert leaks(out, [BY_KIND["stripe_sk"]]) == []
    # Reading each line the plugins' way takes minutes; the budget is generous for a
    # busy CI machine and still an order of magnitude below that.
    assert elapsed < 60, elapsed


# -- end to end: a real diagnose on a workspace holding every reported secret ---------


def _workspace(root: Path) -> Path:
    """A workspace whose console log, checkpoint metadata and launch script carry the
    reported secrets where the probes ship them: the log's unparsed lines (the first five
    are samples) and its last ten lines, the metadata record, the launcher."""
    ws = root / "ws"
    ckpt = ws / "checkpoints" / "step_10"
    ckpt.mkdir(parents=True)
    reported = [BY_KIND[k] for k in [*REPORTED, *ISSUE_24]]
    lines = [f"step {i} loss {2 - i / 100:.2f}" for i in range(1, 6)]
    for p in reported:
        lines += [f"WARNING {line}" for line in p.form.split("\n")] + [""]
    lines += [f"step {i} loss {2 - i / 100:.2f}" for i in range(6, 9)]
    lines += ["ValueError: bad key", *BY_KIND["pem_without_end"].form.split("\n")]
    (ws / "train_stdout.log").write_text("\n".join(lines) + "\n")
    metadata = {"step": 10, "notes": {p.kind: p.form for p in reported}}
    metadata.update({p.name.lstrip("-"): p.parts[0] for p in reported if p.name})
    (ckpt / "metadata.json").write_text(json.dumps(metadata))
    (ckpt / "model.pt").write_bytes(b"weights")
    (ws / "run.sh").write_text("#!/bin/sh\n" + "\n".join(p.form for p in reported) + "\n")
    return ws


@pytest.fixture
def trainer_process(tmp_path: Path) -> Iterator[list[Planted]]:
    """A running process the processes probe takes for the trainer, its command line and
    environment holding the reported secrets."""
    reported = [BY_KIND[k] for k in REPORTED if "\n" not in BY_KIND[k].form]
    argv = [sys.executable, "-c", "import time; time.sleep(600)", "train.py"]
    for p in reported:
        argv += ["--note", p.form] + ([f"--{p.name.lstrip('-')}", p.parts[0]] if p.name else [])
    env = {**os.environ, "TORCH_RUN_NONCE": BY_KIND["hex_env"].parts[0]}
    proc = subprocess.Popen(argv, env=env, cwd=tmp_path, start_new_session=True)
    try:
        yield reported
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def _kept(state: Path, stdout: bytes) -> dict[str, str]:
    """Everything the session kept, by file (the transcript's outputs decoded), and what
    the command printed."""
    (session,) = (state / "dflash-doctor" / "sessions").iterdir()
    kept = {p.name: p.read_bytes().decode("utf-8", "replace") for p in session.iterdir()}
    kept["transcript.jsonl"] = _transcript_text(session / "transcript.jsonl")
    kept["stdout"] = stdout.decode("utf-8", "replace")
    return kept


def _run(state: Path, *args: str) -> dict[str, str]:
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    result = cli("-q", *args, "--json", env=env)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    json.loads(result.stdout)
    return _kept(state, result.stdout)


@pytest.mark.slow
def test_a_diagnose_keeps_no_reported_secret(
    tmp_path: Path, trainer_process: list[Planted]
) -> None:
    """The real CLI on a real workspace and a real trainer process: the sweep itself
    ships every reported secret (so the test plants them where probes look), and neither
    ``diagnose`` nor ``facts`` keeps or prints any of them (issue 24's formats too)."""
    ws = _workspace(tmp_path)
    reported = [BY_KIND[k] for k in [*REPORTED, *ISSUE_24]]
    shipped = sweep(LocalTransport(), SweepSpec(workspace=str(ws), interpreter=sys.executable))
    raw = json.dumps([r.value for r in shipped.results])
    assert leaks(raw, reported) == [p.kind for p in reported]
    assert leaks(raw, trainer_process) == [p.kind for p in trainer_process]

    common = ["--target", "local", "--workspace", str(ws), "--interpreter", sys.executable]
    for command, extra in (("diagnose", ["--non-interactive"]), ("facts", [])):
        kept = _run(tmp_path / command, command, *common, *extra)
        if command == "diagnose":
            assert {"graph.sqlite", "ledger.jsonl", "transcript.jsonl"} <= kept.keys()
        for name, text in kept.items():
            assert leaks(text, reported) == [], (command, name)


@pytest.mark.slow
def test_health_a_snapshot_and_reports_keep_no_reported_secret(tmp_path: Path) -> None:
    """The other writers, on the same workspace: ``snapshot`` (a baseline), ``health
    --out`` in all four formats and its history, and ``report`` rendered as md, html and
    json from a health session's transcript: no file under the state or output
    directories holds any of the reported formats (issue 24's too)."""
    ws = _workspace(tmp_path)
    reported = [BY_KIND[k] for k in [*REPORTED, *ISSUE_24]]
    shipped = sweep(LocalTransport(), SweepSpec(workspace=str(ws), interpreter=sys.executable))
    assert leaks(json.dumps([r.value for r in shipped.results]), reported) == [
        p.kind for p in reported
    ]  # the sweep the health check runs ships every one of them
    state, out = tmp_path / "state", tmp_path / "out"
    common = ["--target", "local", "--workspace", str(ws), "--interpreter", sys.executable]
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    snapshot = cli("-q", "snapshot", "--name", "good", *common, env=env)
    assert snapshot.returncode == 0, snapshot.stderr.decode()[-3000:]
    health = cli("-q", "health", *common, "--baseline", "good", "--out", str(out), env=env)
    assert b"Traceback" not in health.stderr and health.returncode in (0, 1, 2)
    (run,) = json.loads((out / "health.json").read_text())["targets"]
    for fmt in ("md", "html", "json"):
        rendered = out / f"report.{fmt}"
        made = cli("report", run["transcript"], "--format", fmt, "--out", str(rendered), env=env)
        assert made.returncode == 0, made.stderr.decode()[-3000:]
    files = [p for root in (state, out) for p in root.rglob("*") if p.is_file()]
    assert {"good.json", "history.jsonl", "health.md", "report.html"} <= {p.name for p in files}
    for path in files:
        text = path.read_bytes().decode("utf-8", "replace")
        if path.name == "transcript.jsonl":
            text = _transcript_text(path)
        assert leaks(text, reported) == [], path
    for printed in (snapshot, health):
        assert leaks((printed.stdout + printed.stderr).decode(errors="replace"), reported) == []


@pytest.mark.ssh
@pytest.mark.slow
def test_an_ssh_alias_and_the_host_name_stay_off_the_disk(
    sshd_server: SSHServer, tmp_path: Path
) -> None:
    """``ssh://trainer-alias`` resolved through ssh_config: every fact cites the target
    as the transcript does, by placeholder, and the name the host probe reads on the
    target is a placeholder too, in the ledger, the transcript and the facts printed."""
    ws = _workspace(tmp_path)
    kept = _run(
        tmp_path / "state",
        "facts",
        "--target",
        "ssh://trainer-alias",
        "--ssh-config",
        str(sshd_server.ssh_config()),
        "--workspace",
        str(ws),
        "--interpreter",
        sys.executable,
    )
    nodename = os.uname().nodename
    word = re.compile(rf"(?<![\w.-])(?:trainer-alias|{re.escape(nodename)})(?![\w-])")
    for name in ("ledger.jsonl", "transcript.jsonl"):
        assert not word.search(kept[name]), (name, word.search(kept[name]))
    facts = [json.loads(line) for line in kept["ledger.jsonl"].splitlines()]
    assert facts and {f["target"] for f in facts} == {"ssh://[REDACTED-HOST-1]"}
    host = next(f for f in facts if f["probe"] == "host")
    assert re.fullmatch(r"\[REDACTED-HOST-\d+\]", host["value"]["hostname"])
    printed = json.loads(kept["stdout"])
    assert {f["target"] for f in printed["facts"]} == {"ssh://[REDACTED-HOST-1]"}
    assert leaks(kept["transcript.jsonl"], [BY_KIND[k] for k in REPORTED]) == []
