"""The data model every layer shares, standard library only: ``result`` (Result, Sample,
Summary, JobIdentity, SCHEMA_VERSION, the metric and detail keys), ``metrics`` (the metric
registry), ``units``, ``settings`` (every measuring setting once), the workloads
``generation`` and ``scenario``, and ``diagnosis`` (why a cell is slow or wrong, as data).
"""

from __future__ import annotations

from benchlab.lazy import names_of

# Its face: the public names of these modules (benchlab.lazy.names_of).
PUBLIC_MODULES = ("result", "keys", "metrics", "units", "settings", "generation", "scenario",
                  "diagnosis", "comparison", "labels", "availability", "commands")
__getattr__ = names_of(__name__, PUBLIC_MODULES, globals())
