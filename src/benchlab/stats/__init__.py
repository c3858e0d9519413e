"""The measurement's statistics, pure numbers: ``summary`` (a process's summary, median CI,
adaptive stopping), ``runstats`` (the process as the unit: intervals that predict the next run,
paired ratios, the between-runs change test), ``noise`` (noise warnings) and ``race`` (which
cells of a contest stop after a round).

Every public name of these modules is also a name of the package (``PUBLIC_MODULES``), imported
with its module on first use.
"""

from __future__ import annotations

from benchlab.lazy import names_of

#: The package's public face: every name in these modules' ``__all__``, in this order.
PUBLIC_MODULES = (
    "benchlab.stats.summary",
    "benchlab.stats.runstats",
    "benchlab.stats.noise",
    "benchlab.stats.race",
)
__getattr__ = names_of(__name__, PUBLIC_MODULES, globals())
