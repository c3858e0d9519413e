"""The data model every layer shares, standard library only: ``result`` (Result, Sample,
Summary, JobIdentity, SCHEMA_VERSION, the metric and detail keys), ``metrics`` (the metric
registry), ``units``, ``settings`` (every measuring setting once), the workloads
``generation`` and ``scenario``, and ``diagnosis`` (why a cell is slow or wrong, as data).

``benchlab.schema`` was one module before it was this package; its names are still here.
"""

from __future__ import annotations

from benchlab.schema.result import *  # noqa: F403 - the names benchlab.schema always had
from benchlab.schema.result import __all__ as __all__
