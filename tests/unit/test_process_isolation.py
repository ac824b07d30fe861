"""The process-isolation playbook (playbooks.process_isolation): one process per device through
the trainer's own option and value, set on its exec line only where its code declares both, and
refused, saying why, where it does not.

The target is a workspace under tmp_path read by the remote operations run in this process."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from playbooks.base import FX_TRACE, TrainerSite
from playbooks.process_isolation import ProcessIsolation
from playbooks.remote import Remote
from tests.lib.in_process_remote import InProcess, trainer_site
from tools.errors import ApplyError

DECLARES = (
    "import argparse\n"
    'argparse.ArgumentParser().add_argument("--workers", choices=["threads", "processes"])\n'
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def test_it_answers_the_fx_trace_race_judged_by_the_fx_trace_error() -> None:
    """The playbook is offered for a verified FX-trace race and judged by the FX-trace error's
    absence."""
    playbook = ProcessIsolation()
    assert (playbook.name, playbook.requires, playbook.answers) == (
        "process-isolation",
        frozenset({"fx_trace_race"}),
        "fx_trace_race",
    )
    assert playbook.signature == FX_TRACE


@pytest.mark.parametrize(
    ("launch", "after"),
    [
        (
            "#!/bin/sh\nexec python train.py\n",
            "#!/bin/sh\nexec python train.py --workers processes\n",
        ),
        (
            "#!/bin/sh\nexec python train.py --workers threads --lr 1\n",
            "#!/bin/sh\nexec python train.py --workers processes --lr 1\n",
        ),
    ],
    ids=["added", "value-replaced"],
)
def test_a_trainer_that_declares_the_option_gets_one_process_per_device(
    ws: Path, launch: str, after: str
) -> None:
    """Where the trainer's code declares ``--workers`` and ``processes``, the exec line gets
    ``--workers processes`` (an earlier value replaced), citing the file that declares it."""
    site, remote = trainer_site(ws, launch, DECLARES)
    (change,) = ProcessIsolation().changes(site, remote)
    assert (change.path, change.before_sha256, change.after, change.why) == (
        f"{ws}/launch.sh",
        hashlib.sha256(launch.encode()).hexdigest(),
        after,
        f"the trainer declares --workers processes ({ws}/train.py)",
    )


def test_an_exec_line_already_isolated_needs_no_change(ws: Path) -> None:
    """A launch line that already runs one process per device is left as it is."""
    site, remote = trainer_site(
        ws, "#!/bin/sh\nexec python train.py --workers processes\n", DECLARES
    )
    assert ProcessIsolation().changes(site, remote) == []


@pytest.mark.parametrize(
    ("launch", "trainer", "where"),
    [
        (
            "#!/bin/sh\nexec python train.py\n",
            'import argparse\nargparse.ArgumentParser().add_argument("--workers", type=int)\n',
            "{ws}/train.py",
        ),
        ("#!/bin/sh\nexec ./trainer-bin --workers 2\n", None, "its launch line"),
    ],
    ids=["option-without-the-value", "no-python-file"],
)
def test_a_trainer_without_the_option_and_value_is_refused(
    ws: Path, launch: str, trainer: str | None, where: str
) -> None:
    """A trainer whose code does not declare both the option and the value (or whose launch line
    names no Python file to read) cannot be isolated: refused, saying where it looked."""
    site, remote = trainer_site(ws, launch, trainer)
    message = (
        f"the trainer declares no --workers processes option (not in {where.format(ws=ws)} nor"
        " in the modules it imports from its tree): only the trainer can run one process per"
        " device"
    )
    with pytest.raises(ApplyError, match=f"^{re.escape(message)}$"):
        ProcessIsolation().changes(site, remote)


def test_a_trainers_own_option_name_and_value_are_used(ws: Path) -> None:
    """A playbook given another option and value looks for and sets those."""
    trainer = 'OPTIONS = {"--mode": ["threaded", "multiproc"]}\n'
    site, remote = trainer_site(ws, "#!/bin/sh\nexec python train.py\n", trainer)
    (change,) = ProcessIsolation("--mode", "multiproc").changes(site, remote)
    assert change.after == "#!/bin/sh\nexec python train.py --mode multiproc\n"


def test_a_launch_script_not_written_yet_is_changed_from_its_text(ws: Path) -> None:
    """For a trainer started from a command (the doctor's launch file not written yet), the change
    is made to the script it would write, and there is no file before it."""
    (ws / "train.py").write_text(DECLARES)
    site = TrainerSite(
        str(ws),
        f"{ws}/.dflash-doctor/launch.sh",
        f"{ws}/p",
        f"{ws}/t.log",
        f"{ws}/o.log",
        launch_text=f"#!/bin/sh\ncd {ws}\nexec python train.py\n",
    )
    (change,) = ProcessIsolation().changes(site, Remote(InProcess()))
    assert (change.before_sha256, change.after) == (
        None,
        f"#!/bin/sh\ncd {ws}\nexec python train.py --workers processes\n",
    )
