"""benchlab: benchmark ML inference across frameworks, backends and devices.

The Python API mirrors the CLI: :func:`run` is ``benchlab run`` and returns :class:`Results`;
:func:`load_spec` / :func:`load_suite` read spec files; :func:`open_store` opens the results
store that ``benchlab results`` reads.
"""

from __future__ import annotations

from benchlab.api import parse_framework, plan_sweep, run
from benchlab.errors import (
    BenchlabError,
    InfrastructureError,
    SpecError,
    UserError,
)
from benchlab.harness import TestOverrides
from benchlab.results import Results
from benchlab.schema import SCHEMA_VERSION, JobIdentity, Result, Sample, Status, Summary
from benchlab.spec import load_spec, load_suite
from benchlab.stats import summarize
from benchlab.store import open_store

__version__ = "0.1.0"

__all__ = [
    "SCHEMA_VERSION",
    "BenchlabError",
    "InfrastructureError",
    "JobIdentity",
    "Result",
    "Results",
    "Sample",
    "SpecError",
    "Status",
    "Summary",
    "TestOverrides",
    "UserError",
    "load_spec",
    "load_suite",
    "open_store",
    "parse_framework",
    "plan_sweep",
    "run",
    "summarize",
]
