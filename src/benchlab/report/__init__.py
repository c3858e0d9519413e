"""Reporters: turn results into a terminal table, a JSON directory, CSV or Parquet.

The names below are imported on first use (PEP 562): the terminal reporters load rich, which
``benchlab.api`` and the JSON directory writer must not pay for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchlab.lazy import names_at_homes

if TYPE_CHECKING:
    from benchlab.report.answers import answer_spread, answer_spread_table
    from benchlab.report.export import export_results
    from benchlab.report.jsondir import write_result_json
    from benchlab.report.terminal import SweepProgress, results_table

__all__ = ["SweepProgress", "answer_spread", "answer_spread_table", "export_results",
           "results_table", "write_result_json"]

_HOMES = {
    "SweepProgress": "benchlab.report.terminal",
    "answer_spread": "benchlab.report.answers",
    "answer_spread_table": "benchlab.report.answers",
    "export_results": "benchlab.report.export",
    "results_table": "benchlab.report.terminal",
    "write_result_json": "benchlab.report.jsondir",
}


__getattr__ = names_at_homes(__name__, _HOMES, globals())
