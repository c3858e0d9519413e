"""Running a sweep: ``sweep`` (the request), ``planner`` (plan(): specs → jobs; execute(): a
plan's jobs → the store), ``rounds`` (how a stage's jobs take turns), ``jobrun`` (one job →
one result), ``hoststeps``, ``devicestate``, ``overrides``, ``outputs`` (one backend's raw
outputs) and ``results`` (what ``benchlab.run`` returns).

Every public name of these modules is also a name of the package (``PUBLIC_MODULES``), imported
with its module on first use, so that the lab server can read a
:class:`~benchlab.harness.sweep.Sweep` without loading the runtimes' adapters.
"""

from __future__ import annotations

from benchlab.lazy import names_of

#: The package's public face: every name in these modules' ``__all__``, in this order.
PUBLIC_MODULES = (
    "benchlab.harness.sweep",
    "benchlab.harness.overrides",
    "benchlab.harness.results",
    "benchlab.harness.planner",
    "benchlab.harness.rounds",
    "benchlab.harness.jobrun",
    "benchlab.harness.outputs",
    "benchlab.harness.hoststeps",
    "benchlab.harness.devicestate",
    "benchlab.harness.cachewipe",
    "benchlab.harness.nativefiles",
    "benchlab.harness.exitstatus",
    "benchlab.harness.selection",
    "benchlab.harness.doctor",
)
__getattr__ = names_of(__name__, PUBLIC_MODULES, globals())
