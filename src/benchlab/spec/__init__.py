"""Specs and suites: what to benchmark, loaded from JSON or YAML (FAI-PEP's format included).

``load_spec``, ``load_suite`` and ``load`` return the frozen dataclasses of
:mod:`benchlab.spec.types`; every problem in a file is a :class:`~benchlab.errors.SpecError`.
"""

from __future__ import annotations

from benchlab.spec import types
from benchlab.spec.loader import load, load_spec, load_suite
from benchlab.spec.models import spec_json_schema, suite_json_schema
from benchlab.spec.placeholders import parse_string_map, placeholder_map, substitute
from benchlab.spec.types import *  # noqa: F403 - every spec type, as types.__all__ lists them

__all__ = sorted([  # noqa: PLE0604 - the types are re-exported by their own module's list
    *types.__all__,
    "load",
    "load_spec",
    "load_suite",
    "parse_string_map",
    "placeholder_map",
    "spec_json_schema",
    "substitute",
    "suite_json_schema",
])
