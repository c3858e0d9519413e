"""Where every CLI command group writes: results to stdout, progress and errors to stderr.

One pair for the whole CLI (``benchlab``, ``benchlab lab``, ``benchlab zoo``), so a command
group never opens its own and the two streams stay what a pipe expects.
"""

from __future__ import annotations

from benchlab.report.terminal import make_console

__all__ = ["console", "err_console"]

console = make_console()
"""Results: tables, reports, JSON."""
err_console = make_console(stderr=True)
"""Progress, warnings and errors."""
