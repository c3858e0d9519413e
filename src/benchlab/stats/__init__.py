"""The measurement's statistics, pure numbers: ``summary`` (a process's summary, median CI,
adaptive stopping), ``runstats`` (the process as the unit: intervals that predict the next run,
paired ratios, the between-runs change test), ``noise`` (noise warnings) and ``race`` (which
cells of a contest stop after a round).
"""

from __future__ import annotations

from benchlab.lazy import names_of

# Its face: the public names of these modules (benchlab.lazy.names_of).
PUBLIC_MODULES = ("summary", "runstats", "noise", "race")
__getattr__ = names_of(__name__, PUBLIC_MODULES, globals())
