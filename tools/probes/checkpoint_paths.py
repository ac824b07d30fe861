"""Where each part the doctor reads or cites sits in the checkpoints probe's fact: one
source for its shape beside the probe that writes it. A checkpoint is picked by its name
(``@name=step_600``), whatever its place in the list; ``tests/unit/test_checkpoint_paths.py``
resolves every path in a real listing."""

from __future__ import annotations

STEPS = ("steps",)  # the checkpoints, oldest first
PACE_WINDOWS = ("pace", "windows")  # steps per second between saves
RECORDED = ("recorded",)  # what the newest finished checkpoint records
RECORDED_FROM = ("recorded_from",)  # which file of which checkpoint each record came from

_BY_NAME = "@name="


def entry(name: str, *field: str | int) -> tuple[str | int, ...]:
    """A field of the checkpoint named ``name``: ``entry("step_600", "step")``."""
    return (*STEPS, f"{_BY_NAME}{name}", *field)


def entry_name(path: tuple[object, ...] | list[object]) -> str | None:
    """The checkpoint a path built by ``entry`` reads, or None for any other path."""
    head = path[1] if len(path) >= 2 else None
    if tuple(path[:1]) == STEPS and isinstance(head, str) and head.startswith(_BY_NAME):
        return head[len(_BY_NAME) :]
    return None
