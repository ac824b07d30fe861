"""The graph's side of the playbooks: turn a playbook into the ``doctor.Fixer`` the
graph offers, with the baseline throughput it must reach taken from the cited diff."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agent.analysis.throughput import primary_entry
from agent.graph.fix_site import measure_for, series_words
from agent.rules.base import Evidence
from playbooks import FixOutcome, FixPlan, Remote, TrainerSite, Transaction
from playbooks.base import Playbook
from tools.transport.base import Transport


class PlaybookAdapter:
    def __init__(
        self,
        playbook: Playbook,
        site: TrainerSite | Callable[[Evidence], TrainerSite],
        transport: Transport,
        *,
        min_ratio: float = 0.9,
        run_timeout: float = 600.0,
    ) -> None:
        self.playbook = playbook
        self.name = playbook.name
        self.requires = playbook.requires
        # A site built from the facts (agent.graph.fix_site) is built again for each plan and
        # apply: the same facts give the same site.
        self.site = site
        self.transport = transport
        self.min_ratio = min_ratio
        self.run_timeout = run_timeout

    def _transaction(self, evidence: Evidence) -> Transaction:
        speed = primary_entry(evidence.diff)
        baseline = speed.baseline_value if speed is not None else None
        site = self.site if isinstance(self.site, TrainerSite) else self.site(evidence)
        return Transaction(
            self.playbook,
            site,
            Remote(self.transport, interpreter=site.interpreter),
            measure=measure_for(evidence),
            series=series_words(evidence),
            baseline_tok_s=float(baseline) if isinstance(baseline, int | float) else None,
            min_ratio=self.min_ratio,
            run_timeout=self.run_timeout,
        )

    def plan(self, evidence: Evidence) -> FixPlan:
        return self._transaction(evidence).plan()

    def apply(self, plan: FixPlan, evidence: Evidence) -> FixOutcome:
        return self._transaction(evidence).apply(plan)


def adapt(
    playbooks: Sequence[Playbook],
    site: TrainerSite | Callable[[Evidence], TrainerSite],
    transport: Transport,
    **kw: float,
) -> dict[str, PlaybookAdapter]:
    return {p.name: PlaybookAdapter(p, site, transport, **kw) for p in playbooks}
