"""The incident end to end on the reference trainer (``python -m examples.demo``, which
``make demo`` runs): ``run`` is the story, ``__main__`` its command line."""
