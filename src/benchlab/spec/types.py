"""The validated, internal form of specs: frozen dataclasses the rest of benchlab reads.

The pydantic models in :mod:`benchlab.spec.models` exist only at the file boundary; the loader
turns them into these, with defaults applied and every test already expanded to one input shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "BenchmarkSpec",
    "FileRef",
    "FrameworkConfig",
    "InputDef",
    "ModelDef",
    "Suite",
    "TestCase",
]


@dataclass(frozen=True, slots=True)
class FileRef:
    """One file a spec needs: where it comes from and the hash it must have.

    ``location`` is as written in the spec (``https://…``, ``file://…``, ``//rel/to/root`` or a
    path relative to the spec); ``base_dir`` is the spec's directory, used to resolve relative
    paths. At least one of ``sha256`` and ``md5`` is set unless the spec opted out.
    """

    key: str
    location: str
    base_dir: Path
    sha256: str | None = None
    md5: str | None = None
    filename: str | None = None


@dataclass(frozen=True, slots=True)
class InputDef:
    """One model input with a single shape (tests with several shapes are already expanded)."""

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"


@dataclass(frozen=True, slots=True)
class FrameworkConfig:
    """A framework name plus its options, e.g. ``pytorch`` with ``{"mode": "torchscript"}``."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ModelDef:
    """The ``model`` block of a spec.

    ``entry`` names Python code that builds an eager model (``pkg.module:factory`` or
    ``file.py:factory``); ``placeholders`` holds any extra string fields, usable as ``{name}``.
    ``metadata`` carries facts known before running (the zoo's task, parameters, FLOPs, failed
    exports); every result of the model repeats it under ``details["model_info"]``.
    """

    name: str
    format: str
    files: Mapping[str, FileRef] = field(default_factory=dict)
    framework: str | None = None
    entry: str | None = None
    description: str = ""
    placeholders: Mapping[str, str] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TestCase:
    """One test of a spec, for one input shape.

    Times are seconds. ``iter`` is the minimum number of timed iterations per fresh process,
    ``min_time``/``max_time`` bound how long each process measures, ``repeat`` is the number of
    fresh processes. ``memory_limit`` (MiB) caps each process's address space. Before each process,
    the device must cool below ``temperature_gate`` (°C), waiting at most ``gate_timeout``.
    ``commands`` are for command-driven frameworks (``generic``) and still hold
    their ``{placeholders}``; the harness substitutes them per job.
    """

    identifier: str
    metric: str = "delay"
    warmup: int = 1
    iter: int = 10
    min_time: float = 0.0
    max_time: float | None = None
    repeat: int = 1
    inputs: tuple[InputDef, ...] = ()
    input_files: Mapping[str, FileRef] = field(default_factory=dict)
    commands: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    statistics: tuple[str, ...] = ()
    timeout: float = 600.0
    cooldown: float = 0.0
    cpu_list: str | None = None
    threads: int | None = None
    profile_ops: bool = False
    target_ci: float | None = None
    memory_limit: int | None = None
    temperature_gate: float | None = None
    gate_timeout: float = 300.0
    placeholders: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BenchmarkSpec:
    """One loaded spec: a model, its tests, and the framework configs it names (may be empty)."""

    path: Path
    model: ModelDef
    tests: tuple[TestCase, ...]
    frameworks: tuple[FrameworkConfig, ...] = ()


@dataclass(frozen=True, slots=True)
class Suite:
    """A list of specs loaded from one suite file, with its shared defaults already applied."""

    path: Path
    specs: tuple[BenchmarkSpec, ...]
