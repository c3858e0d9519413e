"""The data model every layer shares, standard library only: ``result`` (Result, Sample,
Summary, JobIdentity, SCHEMA_VERSION, the metric and detail keys), ``metrics`` (the metric
registry), ``units``, ``settings`` (every measuring setting once), the workloads
``generation`` and ``scenario``, and ``diagnosis`` (why a cell is slow or wrong, as data).

``benchlab.schema`` was one module before it was this package; its names are still here,
imported on first use.
"""

from __future__ import annotations

from benchlab.lazy import names_of

__getattr__ = names_of(__name__, "benchlab.schema.result", globals())
