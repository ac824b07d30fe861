"""Each build fact the torch_source probe reads from the installed torch's sources,
checked against what that torch does when run: a worker thread reading a recompile
limit the main thread set; the main thread asking ``is_fx_tracing`` while another
thread is inside ``symbolic_trace``; dynamo's own warning when a function passes its
recompile limit (the name and number it prints); flex_attention called eagerly, twice.
The observer below runs in a fresh interpreter and shares no code with the reader."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from tools.probes import torch_source
from tools.probes._common import Context

OBSERVE = textwrap.dedent(
    r"""
    import json, logging, re, threading, warnings
    import torch, torch._dynamo, torch.fx
    from torch.nn.attention.flex_attention import flex_attention

    seen = {}

    # 1. A limit set in the main thread, read by a worker thread.
    torch._dynamo.config.recompile_limit = 64
    box = []
    t = threading.Thread(target=lambda: box.append(torch._dynamo.config.recompile_limit))
    t.start(); t.join()
    seen["config_overrides_thread_local"] = box[0] != 64
    torch._dynamo.config.recompile_limit = box[0]

    # 2. One thread inside symbolic_trace while the main thread asks is_fx_tracing.
    inside, release = threading.Event(), threading.Event()

    class Waits(torch.nn.Module):
        def forward(self, x):
            inside.set()
            release.wait(30)
            return x + 1

    tracer = threading.Thread(target=lambda: torch.fx.symbolic_trace(Waits()))
    tracer.start()
    assert inside.wait(30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seen["fx_flag_process_global"] = torch.fx._symbolic_trace.is_fx_tracing()
    release.set(); tracer.join()

    # 3. Past the recompile limit: dynamo's warning names the limit and its value.
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logging.getLogger("torch._dynamo").addHandler(Keep())
    f = torch.compile(lambda x: x.sin().sum(), backend="eager", dynamic=False)
    for n in range(1, 40):
        f(torch.randn(n))
    hit = [m for m in records if "hit config." in m]
    name, value = re.search(r"hit config\.(\w+) \((\d+)\)", hit[0]).groups()
    seen["recompile_limit"] = {"name": name, "value": int(value)}

    # 4. flex_attention called eagerly, twice.
    q = torch.randn(1, 1, 16, 8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        flex_attention(q, q, q)
        flex_attention(q, q, q)
    unfused = [str(w.message) for w in caught if "unfused" in str(w.message)]
    seen["flex_unfused_warning"] = {"count": len(unfused), "text": unfused[:1]}
    print(json.dumps(seen))
    """
)


@pytest.fixture(scope="module")
def observed() -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-c", OBSERVE], capture_output=True, text=True, timeout=240
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return dict(json.loads(run.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def read() -> dict[str, Any]:
    return dict(torch_source.collect({}, Context())["build"])


@pytest.mark.parametrize("fact", ["config_overrides_thread_local", "fx_flag_process_global"])
def test_the_per_thread_answers_are_what_torch_does(
    fact: str, observed: dict[str, Any], read: dict[str, Any]
) -> None:
    """Whether config overrides are per thread and the FX flag is process-wide, as read from
    the sources, is what the installed torch does when run, and the answer cites its
    evidence."""
    assert read[fact]["value"] is observed[fact], (read[fact], observed[fact])
    assert read[fact]["evidence"], read[fact]


def test_the_recompile_limit_is_the_one_dynamo_says_it_hit(
    observed: dict[str, Any], read: dict[str, Any]
) -> None:
    """The recompile limit's name and default read from the sources are the ones dynamo
    reports when the limit is hit."""
    answer = read["recompile_limit"]
    assert answer["value"] == observed["recompile_limit"]["name"], (answer, observed)
    assert answer["note"] == f"default {observed['recompile_limit']['value']}", answer


def test_flex_attention_warns_as_the_sources_say(
    observed: dict[str, Any], read: dict[str, Any]
) -> None:
    """Whether flex_attention warns of its unfused path, and how often, is as the sources
    say, and the quoted warning is the text torch prints."""
    answer, seen = read["flex_unfused_warning"], observed["flex_unfused_warning"]
    assert answer["value"] is (seen["count"] > 0), (answer, seen)
    assert (answer["note"] == "warned once per process") is (seen["count"] == 1), (answer, seen)
    said = answer["evidence"][0].split(": ", 1)[1].strip('"')
    assert seen["text"][0].startswith(said[:60]), (said, seen)
