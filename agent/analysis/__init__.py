"""What a run's facts say over time, before any failure family is weighed: its symptoms
(``symptoms``: is it advancing, is its loss sane, how fast by its own figures), whether it
still advances (``progress``), its throughput against a baseline (``throughput``,
``baseline``), which facts differ between two runs (``diff_keys``), when a cause's evidence
appeared against the drop (``timing``), and the doctor's own unfinished applies
(``applies``).

Stands on ``agent.model`` only.
"""
