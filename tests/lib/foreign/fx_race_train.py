"""The incident's race in one small process: a worker thread calls a ``torch.compile``'d
function in a loop while another thread runs ``torch.fx.symbolic_trace`` over a module
again and again (an exporter, a profiling hook). torch's FX-tracing flag is process-wide,
so the worker's compiled calls see it while the tracer traces: with dynamo's
``error_on_nested_fx_trace`` off (``--nested eager``, set in the worker: dynamo's config
is per thread in this build) they run eagerly with nothing printed; on, torch raises its
FX-trace error in the worker. The worker logs ``logs/steps.jsonl`` (``step``,
``calls_per_sec``, ``time``) every ``--log-every`` calls.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path

import torch
import torch._dynamo
import torch.fx


class Stack(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(16, 16) for _ in range(100))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def score(x: torch.Tensor) -> torch.Tensor:
    return (x.sin() * x.cos()).sum()


def trace_forever(stop: threading.Event) -> None:
    model = Stack()
    while not stop.is_set():
        torch.fx.symbolic_trace(model)


def work(nested: str, log_every: int) -> None:
    torch._dynamo.config.error_on_nested_fx_trace = nested == "error"
    compiled = torch.compile(score, backend="eager")
    x = torch.randn(256)
    log = Path("logs") / "steps.jsonl"
    log.parent.mkdir(exist_ok=True)
    since, step = time.perf_counter(), 0
    with log.open("a") as fh:
        while True:
            compiled(x)
            step += 1
            if step % log_every == 0:
                now = time.perf_counter()
                row = {"step": step, "calls_per_sec": log_every / (now - since)}
                fh.write(json.dumps({**row, "time": time.time()}) + "\n")
                fh.flush()
                since = now


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nested", choices=["error", "eager"], default="eager")
    parser.add_argument("--log-every", type=int, default=200)
    args = parser.parse_args()
    stop = threading.Event()
    threading.Thread(target=trace_forever, args=(stop,), name="exporter", daemon=True).start()
    worker = threading.Thread(target=work, args=(args.nested, args.log_every), name="worker-0")
    worker.start()
    worker.join()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
