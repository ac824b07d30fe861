"""Parsers for the trainer's logs, usable on their own (replays, a fresh log tail) and
shipped inside the probe bundle (stdlib only, Python >= 3.8; see ``tools.sweep``).

- ``trainlog.summarize_log(f, fields=..., throughput_unit=...)``: a ``train_log.jsonl``
  (or CSV, text lines, ``trainer_state.json``) summarised in bounded memory — steps,
  restarts, tokens/s and loss per series (device/role), windowed medians, time gaps,
  malformed lines by reason. Its modules are the ``_trainlog`` package.
- ``stdoutlog.scan(f, extra=...)``: error signatures (the one table,
  ``signatures.SIGNATURES``) with counts and first/last lines, tracebacks with their
  exception and thread, the last lines.

Both take a binary file object; both read a file larger than ``max_scan`` as head
plus tail, and say so in ``coverage``.
"""

from __future__ import annotations

from tools.parsers import stdoutlog, trainlog

__all__ = ["stdoutlog", "trainlog"]
