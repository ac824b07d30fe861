"""Unattended health checks: read-only, bounded in time, against a baseline.

``run`` plans and runs a fleet of targets (``fleet``), each checked by ``check``; what a
check produces is ``model``; every run is kept by ``history``; ``output`` renders a run as
JSON, JUnit XML, Markdown and a Prometheus textfile, with trend charts.
"""
