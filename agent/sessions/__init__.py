"""Sessions: a diagnosis with a target, a transcript and a ledger (``session``, its
settings in ``config``), run through the graph (``runner``), targets named in a profile
(``targets``), and sessions read back from what they recorded (``recorded``, ``replay``).

Stands on ``agent.graph`` and the rooms below it.
"""
