"""Running a sweep: ``sweep`` (the request), ``planner`` (plan(): specs → jobs; execute(): a
plan's jobs → the store), ``rounds`` (how a stage's jobs take turns), ``jobrun`` (one job →
one result), ``hoststeps``, ``devicestate``, ``overrides``, ``outputs`` (one backend's raw
outputs), ``results`` (what ``benchlab.run`` returns), ``devicefit`` (what runs on a device
without Python) and ``keptfiles`` (what a device keeps between jobs).

Its names import with their module on first use, so that the lab server can read a
:class:`~benchlab.harness.sweep.Sweep` without loading the runtimes' adapters.
"""

from __future__ import annotations

from benchlab.lazy import names_of

# Its face: the public names of these modules (benchlab.lazy.names_of).
PUBLIC_MODULES = ("sweep", "overrides", "results", "planner", "rounds", "jobrun", "outputs",
                  "hoststeps", "devicestate", "cachewipe", "nativefiles", "exitstatus",
                  "selection", "doctor", "devicefit", "keptfiles")
__getattr__ = names_of(__name__, PUBLIC_MODULES, globals())
