"""How a measured program talks to benchlab: ``lines`` (metric lines, emitted and parsed,
native and FAI-PEP's) and ``step`` (the step protocol's program side, standard library only).

Every public name of these modules is also a name of the package (``PUBLIC_MODULES``), imported
with its module on first use, so that a program importing only ``benchlab.protocol.step`` pays
for nothing else.
"""

from __future__ import annotations

from benchlab.lazy import names_of

#: The package's public face: every name in these modules' ``__all__``, in this order.
PUBLIC_MODULES = (
    "benchlab.protocol.lines",
    "benchlab.protocol.step",
    "benchlab.protocol.tensorfiles",
)
__getattr__ = names_of(__name__, PUBLIC_MODULES, globals())
