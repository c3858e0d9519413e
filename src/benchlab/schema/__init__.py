"""The data model every layer shares, standard library only: ``result`` (Result, Sample,
Summary, JobIdentity, SCHEMA_VERSION, the metric and detail keys), ``metrics`` (the metric
registry), ``units``, ``settings`` (every measuring setting once), the workloads
``generation`` and ``scenario``, and ``diagnosis`` (why a cell is slow or wrong, as data).

Every public name of these modules is also a name of the package (``PUBLIC_MODULES``), imported
with its module on first use.
"""

from __future__ import annotations

from benchlab.lazy import names_of

#: The package's public face: every name in these modules' ``__all__``, in this order.
PUBLIC_MODULES = (
    "benchlab.schema.result",
    "benchlab.schema.keys",
    "benchlab.schema.metrics",
    "benchlab.schema.units",
    "benchlab.schema.settings",
    "benchlab.schema.generation",
    "benchlab.schema.scenario",
    "benchlab.schema.diagnosis",
    "benchlab.schema.comparison",
    "benchlab.schema.labels",
    "benchlab.schema.availability",
    "benchlab.schema.commands",
)
__getattr__ = names_of(__name__, PUBLIC_MODULES, globals())
