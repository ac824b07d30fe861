"""The version, in one place: the package build reads it (pyproject's ``[tool.hatch.version]``)
and ``--version`` prints it without importing anything else."""

__version__ = "0.1.0"
