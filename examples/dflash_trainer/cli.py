"""Command line: ``python -m examples.dflash_trainer {dataset,init,train,break} …``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from . import dataset, sabotage
from .config import TrainConfig, Workspace

REPO_ROOT = Path(__file__).resolve().parents[2]

LAUNCHER = '''#!/usr/bin/env python3
"""DFlash reference trainer launcher for this workspace, written by `init`.

Run it as `python {launcher} [train flags]`; every checkpoint records its md5 as the
training script's.
"""
import sys

sys.path.insert(0, {root!r})
from examples.dflash_trainer.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["train", "--workspace", {ws!r}, *sys.argv[1:]]))
'''


def _lengths(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m examples.dflash_trainer", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("dataset", help="create or expand WS/data/prompts.jsonl")
    d.add_argument("--workspace", type=Path, required=True)
    d.add_argument("--size", type=int, default=512, help="prompts to create")
    d.add_argument("--lengths", type=_lengths, default=list(dataset.DEFAULT_LENGTHS))
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--expand", action="store_true", help="append instead of create")
    d.add_argument("--add", type=int, default=512, help="prompts to append with --expand")
    d.add_argument("--new-lengths", type=_lengths, default=[80, 96, 112])

    i = sub.add_parser("init", help="write the workspace launcher WS/train_dflash.py")
    i.add_argument("--workspace", type=Path, required=True)

    t = sub.add_parser("train", help="train the drafter (see README.md for every flag)")
    t.add_argument("--workspace", type=Path, required=True)
    t.add_argument("--targets", type=int, default=2)
    t.add_argument("--drafters", type=int, default=1)
    t.add_argument("--workers", choices=["threads", "processes"], default="threads")
    t.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    t.add_argument("--batch-size", type=int, default=8)
    t.add_argument("--steps", type=int, default=200)
    t.add_argument("--max-seconds", type=float, default=None)
    t.add_argument("--lr", type=float, default=3e-3)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--log-every", type=int, default=5)
    t.add_argument("--save-every", type=int, default=100)
    t.add_argument("--resume", action="store_true")
    t.add_argument("--compile-lock", action="store_true")
    t.add_argument("--intra-op-threads", type=int, default=None)
    t.add_argument("--compile-cache", type=Path, default=None)
    t.add_argument("--recompile-limit", type=int, default=None)
    t.add_argument("--emulate-torch211-race", action="store_true")
    t.add_argument("--nested-fx-trace", choices=["error", "eager"], default="error")
    t.add_argument("--monkeypatch-fx-check", action="store_true")
    t.add_argument("--record-torch-version", default=None)

    b = sub.add_parser("break", help="damage a workspace like the incident's")
    b.add_argument("what", choices=["compile-cache", "script", "truncate-checkpoint"])
    b.add_argument("--workspace", type=Path, required=True)
    b.add_argument("--compile-cache", type=Path, default=None)
    b.add_argument("--step", type=int, default=None)
    b.add_argument("--file", default="drafter.pt")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    ws = Workspace(args.workspace.resolve())
    if args.command == "dataset":
        if args.expand:
            total = dataset.expand(ws.data, args.add, args.new_lengths, seed=args.seed + 1)
            print(f"expanded {ws.data} by {args.add} prompts of lengths {args.new_lengths}")
        else:
            total = dataset.generate(ws.data, args.size, args.lengths, seed=args.seed)
            print(f"wrote {ws.data} with lengths {args.lengths}")
        print(f"{total} prompts")
        return 0
    if args.command == "init":
        ws.root.mkdir(parents=True, exist_ok=True)
        ws.launcher.write_text(
            LAUNCHER.format(launcher=ws.launcher.name, root=str(REPO_ROOT), ws=str(ws.root))
        )
        print(f"wrote {ws.launcher}")
        return 0
    if args.command == "break":
        if args.what == "compile-cache":
            print(sabotage.wipe_compile_cache(args.compile_cache or ws.compile_cache))
        elif args.what == "script":
            print(sabotage.change_script(ws))
        else:
            print(sabotage.truncate_checkpoint(ws, args.step, args.file))
        return 0
    from .runner import train

    fields = {k: v for k, v in vars(args).items() if k not in ("command", "workspace")}
    return train(TrainConfig(workspace=ws.root, **fields))
