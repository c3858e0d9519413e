"""How a measured program talks to benchlab: ``lines`` (metric lines, emitted and parsed,
native and FAI-PEP's) and ``step`` (the step protocol's program side, standard library only).

Its names import with their module on first use, so that a program importing only
``benchlab.protocol.step`` pays for nothing else.
"""

from __future__ import annotations

from benchlab.lazy import names_of

# Its face: the public names of these modules (benchlab.lazy.names_of).
PUBLIC_MODULES = ("lines", "step", "tensorfiles")
__getattr__ = names_of(__name__, PUBLIC_MODULES, globals())
