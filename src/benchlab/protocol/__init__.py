"""How a measured program talks to benchlab: ``lines`` (metric lines, emitted and parsed,
native and FAI-PEP's) and ``step`` (the step protocol's program side, standard library only).

``benchlab.protocol`` was one module before it was this package; its names are still here,
imported on first use so that a program importing only ``benchlab.protocol.step`` pays for
nothing else.
"""

from __future__ import annotations

from benchlab.lazy import names_of

__getattr__ = names_of(__name__, "benchlab.protocol.lines", globals())
