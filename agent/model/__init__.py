"""The grounding model: facts the probes observed (``facts``), claims that cite them and
are checked against them (``claims``), hypotheses built from those claims
(``hypotheses``), and how versions compare (``versions``).

The floor everything else of ``agent`` stands on: it imports nothing else of ``agent``.
"""
