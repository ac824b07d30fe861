"""A health run written out: one format to stdout or every format into a directory
(``formats``), as JUnit XML (``junit``), Markdown (``markdown``), a Prometheus textfile
(``prom``) and throughput trends (``trend``)."""
