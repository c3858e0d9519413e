"""Running a sweep: ``sweep`` (the request), ``planner`` (plan(): specs → jobs; execute(): a
plan's jobs → the store), ``rounds`` (how a stage's jobs take turns), ``jobrun`` (one job →
one result), ``hoststeps``, ``devicestate``, ``overrides``, ``outputs`` (one backend's raw
outputs) and ``results`` (what ``benchlab.run`` returns).

``benchlab.harness`` was one module (today's ``planner``) before it was this package; its names
are still here, imported on first use, so that the lab server can read a
:class:`~benchlab.harness.sweep.Sweep` without loading the runtimes' adapters.
"""

from __future__ import annotations

from benchlab.lazy import names_of

__getattr__ = names_of(__name__, "benchlab.harness.planner", globals())
