"""The diagnosis graph: its wiring (``wiring``), its nodes (``nodes``) over the state
(``state``), the injected collaborators (``doctor``), gathering facts (``gather``), the
optional proposer (``proposer``), and the fixes: which playbooks apply (``applicability``),
where a fix goes (``fix_site``), and the playbooks as the graph's fixers
(``playbook_adapter``).

Stands on ``agent.rules``, ``agent.analysis`` and ``agent.model``.
"""
