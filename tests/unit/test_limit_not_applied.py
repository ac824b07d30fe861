"""The recompile limit set where it does not apply, on facts the real probes make: the
script read by script_patches, this machine's torch read by torch_source, a console
holding dynamo's warning read by the stdoutlog parser. Verified only where all of it
holds: the script's value differs from torch's default, the build keeps overrides per
thread, the script starts a thread, and torch says it hit its default."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from agent.model.facts import Fact, Ledger
from agent.model.hypotheses import Hypothesis, verify
from agent.rules.base import Evidence
from agent.rules.limit_not_applied import LimitNotApplied
from tests.lib import torch_error_texts as texts
from tools.parsers import stdoutlog
from tools.probes import script_patches, torch_source
from tools.probes._common import Context

MAIN_SETS = """\
import threading
import torch
torch._dynamo.config.recompile_limit = {value}
workers = [threading.Thread(target=print) for _ in range(3)]
"""


def hypotheses(tmp_path: Path, script: str, warning: str | None) -> tuple[Ledger, list[Hypothesis]]:
    ledger = Ledger()
    path = tmp_path / "train.py"
    path.write_text(script)
    scripts = script_patches.collect({"paths": [str(path)]}, Context())
    log = tmp_path / "console.log"
    lines = ["step 10 loss 2.1", *(texts.recompile_warning(warning) if warning else [])]
    log.write_text("\n".join(lines) + "\n")
    with io.FileIO(str(log), "r") as f:
        console = stdoutlog.scan(f)
    facts = [
        ledger.append(Fact(probe="script_patches", target="local", value=scripts)),
        ledger.append(
            Fact(probe="torch_source", target="local", value=torch_source.collect({}, Context()))
        ),
        ledger.append(Fact(probe="stdoutlog", target="local", value=console)),
    ]
    evidence = Evidence(ledger=ledger, fact_ids=[f.id for f in facts])
    return ledger, [verify(h, ledger) for h in LimitNotApplied().propose(evidence)]


def test_a_limit_set_in_the_main_thread_and_hit_at_the_default_is_verified(
    tmp_path: Path,
) -> None:
    """A limit raised in the main thread of a script that starts threads, with torch warning it hit
    its default: verified, citing the script's line and the line that starts a thread."""
    _, (found,) = hypotheses(tmp_path, MAIN_SETS.format(value=64), texts.RECOMPILE_LIMIT)
    assert found.status == "verified", found
    said = [v.sentence for v in found.verdicts]
    assert any(f"{tmp_path / 'train.py'}:3 = 64" in t for t in said), said
    assert any("first line of" in t and "starts a thread" in t and "= 4" in t for t in said), said


@pytest.mark.parametrize(
    ("value", "warning", "fails"),
    [
        # The limit applied where torch compiled: the warning names the script's value.
        (64, texts.RECOMPILE_LIMIT.replace("(8)", "(64)"), "first recompile-limit warning"),
        # The script set torch's default: nothing was lost.
        (8, texts.RECOMPILE_LIMIT, "recompile limit the script sets"),
        # torch never said it hit a limit.
        (64, None, "first recompile-limit warning"),
    ],
)
def test_what_refutes_it(tmp_path: Path, value: int, warning: str | None, fails: str) -> None:
    """Torch's warning naming the script's own value, a script that sets torch's default, or no
    warning at all: not verified, and each failing claim is the one that says so."""
    _, (found,) = hypotheses(tmp_path, MAIN_SETS.format(value=value), warning)
    assert found.status != "verified", found
    failing = [v.sentence for v in found.verdicts if v.outcome != "holds"]
    assert failing and all(t.startswith(fails) for t in failing), failing


def test_a_script_that_sets_no_limit_is_not_this_family(tmp_path: Path) -> None:
    """A script that sets no recompile limit proposes nothing from this family, even with torch's
    warning in the console."""
    _, found = hypotheses(tmp_path, "import torch\n", texts.RECOMPILE_LIMIT)
    assert found == []
