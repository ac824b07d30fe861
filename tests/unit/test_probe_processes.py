"""processes: the trainer found in /proc, with threads and compile-steering variables."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest

from tools.probes import processes
from tools.probes._common import Context, ProbeFailure

TRAINER = """
import sys, threading, time
for i in range(3):
    threading.Thread(target=time.sleep, args=(60,), name=f"drafter-{i}", daemon=True).start()
print("ready", flush=True)
time.sleep(60)
"""


@pytest.fixture
def trainer() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    marker = f"train_dflash_{uuid.uuid4().hex[:8]}.py"
    env = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": "/ws/compile_cache",
        "CUDA_VISIBLE_DEVICES": "0,1,2",
        "HF_TOKEN_FOR_TEST": "x",
        "TORCH_API_KEY": "s3cret",
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", TRAINER, marker], env=env, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    try:
        yield proc, marker
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def test_finds_the_trainer(trainer: tuple[subprocess.Popen[bytes], str]) -> None:
    """Matched by a piece of its command line; threads, names, age and env come along,
    and a variable that looks like a credential is redacted."""
    proc, marker = trainer
    out = processes.collect({"match": [marker]}, Context())
    (p,) = out["processes"]
    assert p["pid"] == proc.pid and p["cmdline"][-1] == marker
    assert p["threads"] == 4
    # Python before 3.14 does not pass thread names to the OS: count, not names.
    assert sum(p["thread_names"].values()) == 4
    assert p["env"]["TORCHINDUCTOR_CACHE_DIR"] == "/ws/compile_cache"
    assert p["env"]["CUDA_VISIBLE_DEVICES"] == "0,1,2"
    assert p["env"]["TORCH_API_KEY"] == "<redacted>"
    assert "HF_TOKEN_FOR_TEST" not in p["env"]
    assert p["age_s"] is not None and 0 <= p["age_s"] < 120
    assert p["start_time"] == pytest.approx(time.time() - p["age_s"], abs=5)


def test_no_match_is_an_empty_list() -> None:
    out = processes.collect({"match": [f"no-such-{uuid.uuid4().hex}"]}, Context())
    assert out["processes"] == [] and not out["truncated"]


def test_bad_match() -> None:
    with pytest.raises(ProbeFailure):
        processes.collect({"match": "train"}, Context())
