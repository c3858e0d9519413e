"""Specs and suites: what to benchmark, loaded from JSON or YAML (FAI-PEP's format included).

``load_spec``, ``load_suite`` and ``load`` return the frozen dataclasses of
:mod:`benchlab.spec.types`; every problem in a file is a :class:`~benchlab.errors.SpecError`.
"""

from __future__ import annotations

from benchlab.spec.loader import load, load_spec, load_suite
from benchlab.spec.models import spec_json_schema, suite_json_schema
from benchlab.spec.placeholders import parse_string_map, placeholder_map, substitute
from benchlab.spec.types import (
    BenchmarkSpec,
    FileRef,
    FrameworkConfig,
    InputDef,
    ModelDef,
    OutputFile,
    Suite,
    TestCase,
)

__all__ = [
    "BenchmarkSpec",
    "FileRef",
    "FrameworkConfig",
    "InputDef",
    "ModelDef",
    "OutputFile",
    "Suite",
    "TestCase",
    "load",
    "load_spec",
    "load_suite",
    "parse_string_map",
    "placeholder_map",
    "spec_json_schema",
    "substitute",
    "suite_json_schema",
]
