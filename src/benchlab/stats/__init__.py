"""The measurement's statistics, pure numbers: ``summary`` (a process's summary, median CI,
adaptive stopping), ``runstats`` (the process as the unit: intervals that predict the next run,
paired ratios, the between-runs change test), ``noise`` (noise warnings) and ``race`` (which
cells of a contest stop after a round).

``benchlab.stats`` was one module before it was this package; its names are still here,
imported on first use.
"""

from __future__ import annotations

from benchlab.lazy import names_of

__getattr__ = names_of(__name__, "benchlab.stats.summary", globals())
