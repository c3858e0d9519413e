"""Reporters: turn results into a terminal table, a JSON directory, CSV or Parquet."""

from __future__ import annotations

from benchlab.report.export import export_results
from benchlab.report.jsondir import write_result_json
from benchlab.report.terminal import SweepProgress, results_table

__all__ = ["SweepProgress", "export_results", "results_table", "write_result_json"]
