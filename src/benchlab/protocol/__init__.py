"""How a measured program talks to benchlab: ``lines`` (metric lines, emitted and parsed,
native and FAI-PEP's) and ``step`` (the step protocol's program side, standard library only).

``benchlab.protocol`` was one module before it was this package; its names are still here,
imported on first use so that a program importing only ``benchlab.protocol.step`` pays for
nothing else.
"""

from __future__ import annotations

from benchlab.lazy import names_at_homes

__all__ = [
    "FAI_PEP_PREFIXES",
    "KNOWN_PREFIXES",
    "PREFIX",
    "ParsedOutput",
    "ReportedSummary",
    "format_detail",
    "format_info",
    "format_metric",
    "format_summary",
    "parse_output",
]

__getattr__ = names_at_homes(__name__, dict.fromkeys(__all__, "benchlab.protocol.lines"), globals())
