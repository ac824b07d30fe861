"""The incident's workspace laid out in a temporary directory, for the probe, sweep and
parser tests.

``make_workspace`` lays out the incident's ``/workspace`` in a temporary directory: two
checkpoints, a train log written the way the reference trainer writes it (one line per
device), a stdout log with a thread traceback, a training script and a prompt file.
``as_nobody`` runs a function in a forked child that dropped root, so "permission
denied" can be tested on a machine where the tests run as root.
"""

from __future__ import annotations

import json
import os
import pickle
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.lib.torch_error_texts import FX_NESTED_TRACE


def write_pt(path: Path, payload: bytes = b"weights") -> None:
    """A file shaped like ``torch.save`` output (a zip archive), without torch."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", payload)
        z.writestr("archive/version", b"3\n")


def train_log_lines(steps: range, *, t0: float = 1.7e9, drafter_tok: float = 4266.0) -> list[str]:
    lines = []
    for i, step in enumerate(steps):
        t = t0 + i
        for dev in range(2):
            lines.append(
                json.dumps(
                    {
                        "timestamp": t,
                        "device": f"cuda:{dev}",
                        "role": "target",
                        "step": step,
                        "loss": None,
                        "tokens_per_s": 4000.0,
                        "seq_len": 512,
                    },
                    sort_keys=True,
                )
            )
        lines.append(
            json.dumps(
                {
                    "timestamp": t,
                    "device": "cuda:2",
                    "role": "drafter",
                    "step": step,
                    "loss": 2.5,
                    "tokens_per_s": drafter_tok,
                    "seq_len": 512,
                },
                sort_keys=True,
            )
        )
    return lines


def make_workspace(root: Path) -> Path:
    ckpt = root / "checkpoints"
    for step in (600, 690):
        d = ckpt / f"step_{step}"
        d.mkdir(parents=True)
        write_pt(d / "drafter.pt")
        write_pt(d / "optimizer.pt")
        meta = {
            "step": step,
            "torch": {
                "version": "2.11.0+cu130",
                "git_version": "70d99e998b4955e0049d13a98d77ae1b14db1f45",
            },
            "triton": {"version": "3.6.0"},
            "tokens_per_s": 12800.0,
            "dataset": {"prompts": 600000},
        }
        (d / "metadata.json").write_text(json.dumps(meta))
    (ckpt / "train_log.jsonl").write_text("\n".join(train_log_lines(range(0, 700, 10))) + "\n")
    (ckpt / "train_stdout.log").write_text(
        "2026-01-01 10:00:00 [MainThread] dataset data/prompts.jsonl: 1100000 prompts\n"
        "2026-01-01 10:00:01 [drafter-1] Exception in thread drafter-1:\n"
        "2026-01-01 10:00:01 [drafter-1] Traceback (most recent call last):\n"
        '2026-01-01 10:00:01 [drafter-1]   File "train.py", line 3, in run\n'
        "2026-01-01 10:00:01 [drafter-1]     out = flex(q, k, v)\n"
        f"2026-01-01 10:00:01 [drafter-1] {FX_NESTED_TRACE}\n"
    )
    (root / "train_dflash.py").write_text(
        "import torch\n"
        "import torch.fx._symbolic_trace as st\n"
        "st.is_fx_symbolic_tracing = lambda: False\n"
        "flex = torch.compile(flex_attention)\n"
    )
    (root / "data").mkdir()
    (root / "data" / "prompts.jsonl").write_text(
        "".join(json.dumps({"prompt": "x" * n}) + "\n" for n in (10, 20, 20, 300))
    )
    return root


def world_readable_dir() -> Path:
    """A fresh directory under the system temp dir that other users may enter (pytest's
    own tmp_path lives in a 0700 directory, which would deny everything to nobody)."""
    path = Path(tempfile.mkdtemp(prefix="dflash-probe-"))
    path.chmod(0o755)
    return path


def as_nobody(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in a forked child as uid/gid 65534 (nobody) and return its result.

    Root reads everything, so a "permission denied" test needs another user: the child
    drops its privileges for real (setgid/setuid), then the kernel refuses it access.
    When the tests do not run as root the child keeps the current user, which the
    caller's chmod already locks out. Whatever the child imports lazily must be imported
    before the fork: the interpreter may live under /root, which nobody cannot read."""
    import encodings.cp437  # noqa: F401 - zipfile decodes member names with it

    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.close(rfd)
            if os.getuid() == 0:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            try:
                out: Any = ("ok", fn())
            except BaseException as exc:
                out = ("raised", f"{type(exc).__name__}: {exc}")
            data = pickle.dumps(out)
            os.write(wfd, data)
        finally:
            os._exit(0)
    os.close(wfd)
    chunks = []
    while chunk := os.read(rfd, 1 << 16):
        chunks.append(chunk)
    os.close(rfd)
    os.waitpid(pid, 0)
    status, value = pickle.loads(b"".join(chunks))
    if status != "ok":
        raise AssertionError(f"child raised {value}")
    return value


def write_run(ws: Path, extra_line: str = "") -> None:
    """A plain trainer's run in ``ws``: a JSON-lines log (``extra_line`` at its end) and
    two checkpoints with metadata."""
    ws.mkdir(parents=True, exist_ok=True)
    rows = [
        json.dumps({"step": s, "loss": 2.0 - s / 400, "tokens_per_sec": 1000.0})
        for s in range(10, 210, 10)
    ]
    (ws / "train.jsonl").write_text("\n".join(rows + ([extra_line] if extra_line else [])) + "\n")
    for step in (100, 200):
        out = ws / "checkpoints" / f"step_{step}"
        out.mkdir(parents=True)
        (out / "model.pt").write_bytes(b"\0" * 64)
        (out / "meta.json").write_text(json.dumps({"step": step, "torch": "2.13.0"}))
