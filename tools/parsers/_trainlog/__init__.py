"""The train-log parser's modules; ``tools.parsers.trainlog`` is their public surface.

This file holds nothing else on purpose: the probe bundle ships the modules that are
imported (``tools.sweep.bundle``), never a package's ``__init__``, so on a target this package
is a bare namespace and anything defined here would be missing there.
"""
