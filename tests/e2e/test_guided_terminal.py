"""The guided session as a person sees it: ``dflash-doctor diagnose`` in a real terminal
(tmux, 120 × 50), with no ``--interactive`` flag, so the menu is there because stdin is
a terminal. What is on the screen when the menu waits is what the person reads; the
scrollback does not count.

The workspace is the incident as another program logs it (``tests/lib/logs.py``): three
drafter devices at ~12,800 tok/s together, ~4,300 after the resume at step 690.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lib.logs import incident_workspace
from tests.lib.need import need

CLI = Path(sys.executable).with_name("dflash-doctor")
MENU = "next: [t]est a hypothesis, [p]robe again"


class Terminal:
    """One command in a detached tmux session on a server of its own (``-L``), so that
    nothing here touches another tmux the machine runs."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        run = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30
        )
        assert run.returncode == 0, run.stderr
        return run.stdout

    def start(self, command: str) -> None:
        self.tmux("new-session", "-d", "-x", "120", "-y", "50", "-s", "doctor", command)

    def screen(self) -> str:
        """The visible screen, its whitespace collapsed: the console wraps long lines at
        the width it finds, which is not what these tests are about."""
        return " ".join(self.tmux("capture-pane", "-p", "-J", "-t", "doctor").split())

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "doctor", "-l", text)
        self.tmux("send-keys", "-t", "doctor", "Enter")

    def wait_for(self, text: str, times: int = 1, timeout: float = 180) -> str:
        """The screen once ``text`` shows ``times`` times in the whole pane (the visible
        screen and the scrollback), which is when the prompt it ends is waiting."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            everything = self.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "doctor")
            if " ".join(everything.split()).count(text) >= times:
                return self.screen()
            time.sleep(0.5)
        raise AssertionError(f"{text!r} never showed {times}×; the screen:\n{self.screen()}")


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    need(shutil.which("tmux") is not None, "tmux", "apt-get install tmux")
    term = Terminal(f"doctor-test-{uuid.uuid4().hex[:8]}")
    try:
        yield term
    finally:
        subprocess.run(["tmux", "-L", term.socket, "kill-server"], capture_output=True)


@pytest.mark.slow
def test_the_first_screen_shows_the_symptom_and_p_shows_the_value_it_probed_again(
    terminal: Terminal, tmp_path: Path
) -> None:
    """The menu's first screen holds the verdict and the symptom (the drop, with where it
    began); after ``p`` and a probe name, the screen holds the new fact, its id new and
    its figure the one the probe read, above the menu again."""
    ws = incident_workspace(tmp_path)
    state = tmp_path / "state"
    argv = [str(CLI), "diagnose", "--target", "local", "--workspace", str(ws)]
    line = f"env XDG_STATE_HOME={shlex.quote(str(state))} {shlex.join(argv)}"
    terminal.start(f"{line}; echo doctor exited $?; sleep 600")

    first = terminal.wait_for(MENU)
    assert "insufficient evidence — session " in first, first
    drop = re.search(
        r"✔ tokens/s \(sum of 3 series\) fell to 0\.3\d× at step 700 \(verified\)", first
    )
    assert drop, first
    ids_before = set(re.findall(r"F-[0-9a-f]{4,}", first))

    terminal.type("p")
    terminal.wait_for("which probes, comma-separated")
    terminal.type("trainlog")
    after = terminal.wait_for(MENU, times=2)
    assert "1 new fact(s):" in after, after
    new = re.search(
        r"(F-[0-9a-f]{4,}) trainlog: .*, 360 records, steps 10–1200, recent median ([\d,]+) ", after
    )
    assert new, after
    assert new.group(1) not in ids_before
    # The figure is the probe's, shown as claims show figures: the slow phase's devices
    # logged 1,430 × (0.95–1.05) each, so the median of the recent records lies there.
    assert 1358 <= int(new.group(2).replace(",", "")) <= 1502, new.group(0)
    # The new fact stands right above the menu: nothing after it redraws the screen.
    tail = after[after.index(new.group(0)) :]
    assert tail.endswith("[s]top:") and "insufficient evidence —" not in tail, tail

    # [s]top: the report, and the command ends well (a verdict was reached).
    terminal.type("s")
    terminal.wait_for("doctor exited 0", timeout=60)
