"""Input-bound: the live trainer's thread spends most of its sampled stacks loading data
(inside ``torch.utils.data``: the loader's iterator, its fetchers, the dataset's own
``__getitem__`` they call), so the model waits on its input: a slow dataset or collate,
data-loader workers too few, busy or dead. The frame of the trainer's own code it loads
in (a dataset's ``__getitem__``) and the line are cited where the stacks show one.

The evidence is the live fact (``tools.probes.live``): per thread, the activity most of
its samples fell in (``tools.probes._activities``: any frame under ``torch/utils/data/``
makes a stack ``data_loading``, whatever its inner frames do), its share, the innermost
frame of the trainer's own code, the process's data-loader children and the cores they
used over the window. The thread tested
is the one with the most samples loading data, else the busiest (then refuted).
"""

from __future__ import annotations

from typing import Any

from agent.model.claims import Claim, Exists
from agent.model.facts import Fact
from agent.model.hypotheses import Hypothesis, Kind, Prediction
from agent.rules.base import Evidence, ref
from agent.rules.live_threads import (
    doing,
    innermost_line,
    per_process,
    who,
)

LOADING = "data_loading"


class InputBound:
    kind: Kind = "input_bound"
    needs = frozenset({"live"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        return per_process(
            self.kind, evidence.latest("live"), (LOADING,), "activity_share", self._one
        )

    def _one(
        self, live: Fact, i: int, proc: dict[str, Any], j: int, thread: dict[str, Any]
    ) -> Hypothesis:
        at = ("processes", i, "threads", j)
        name = who(thread, proc)
        claims = [*doing(live, at, name, LOADING), *innermost_line(live, at, name, thread)]
        if thread.get("own_frame"):
            label = f"{name}'s frame in the trainer's code"
            claims.append(Claim(predicate=Exists(a=ref(live, *at, "own_frame", label=label))))
        kids = proc.get("children") or []
        if kids and proc.get("children_cpu_share") is not None:
            # Its data-loader workers: how busy they were says where the input's time goes
            # (their work, or a wait they share).
            label = f"cores pid {proc.get('pid')}'s {len(kids)} child process(es) used"
            at_proc = ("processes", i, "children_cpu_share")
            claims.append(Claim(predicate=Exists(a=ref(live, *at_proc, label=label))))
        return Hypothesis(
            kind="input_bound",
            claims=tuple(claims),
            predictions=(
                Prediction(
                    expect="more data-loader workers, or a faster dataset or collate at the "
                    "frame cited, bring the speed back",
                    probe="live",
                ),
            ),
            weight=2,
        )
