"""The validated, internal form of specs: frozen dataclasses the rest of benchlab reads.

The pydantic models in :mod:`benchlab.spec.models` exist only at the file boundary; the loader
turns them into these, with defaults applied and every test already expanded to one input shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab.schema.generation import Generation
from benchlab.schema.scenario import Scenario
from benchlab.schema.settings import EnergySettings, TestSettings

__all__ = [
    "BenchmarkSpec",
    "FileRef",
    "FrameworkConfig",
    "InputDef",
    "ModelDef",
    "OutputFile",
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
class OutputFile:
    """A file a test's commands write on the target, pulled to the host after each repetition.

    ``location`` is as written in the spec (usually ``{TGTDIR}/name.txt``; a relative path is
    relative to ``{TGTDIR}``) and still holds its placeholders; ``filename`` is the name of the
    pulled copy on the host (FAI-PEP's ``filename``, else the location's last part).
    """

    key: str
    location: str
    filename: str


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
    ``preprocess`` and ``postprocess`` are FAI-PEP's model-level host commands, run once
    before a job's first repetition and once after its last (:mod:`benchlab.harness.hoststeps`).
    """

    name: str
    format: str
    files: Mapping[str, FileRef] = field(default_factory=dict)
    framework: str | None = None
    entry: str | None = None
    description: str = ""
    placeholders: Mapping[str, str] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    preprocess: tuple[str, ...] = ()
    postprocess: tuple[str, ...] = ()
    #: Shared libraries the measured program loads (FAI-PEP's ``libraries``), by the file name
    #: they get in the job's folder on the target, where the dynamic loader finds them.
    libraries: Mapping[str, FileRef] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TestCase(TestSettings):
    """One test of a spec, for one input shape: what it feeds and runs, plus how it is measured.

    The measuring settings (``warmup``, ``iter``, ``repeat``, ``timeout``...) are inherited from
    :class:`benchlab.schema.settings.TestSettings`, their one definition. ``commands`` are for
    command-driven frameworks (``generic``) and still hold their ``{placeholders}``; the harness
    substitutes them per job. FAI-PEP's accuracy flow: ``preprocess`` and ``postprocess`` are
    commands run on the host before and after each repetition, and ``output_files`` are pulled
    from the target between the two (:mod:`benchlab.harness.hoststeps`). ``energy`` is the test's own
    energy request: a FAI-PEP power test (``metric: power``) measures energy even when the user
    asked for none (:func:`benchlab.spec.faipep.power_request`); the user's ``--energy`` is laid
    over it (:meth:`EnergySettings.over`). ``generate`` makes it a generative test
    (:class:`benchlab.schema.generation.Generation`, one prompt length and depth each): a generation
    is what each iteration times, instead of one forward pass. ``scenario`` runs the test
    under a load scenario (:class:`benchlab.schema.scenario.Scenario`): MLPerf LoadGen issues the
    queries and judges the run, instead of benchlab's loop.
    """

    identifier: str
    metric: str = "delay"
    inputs: tuple[InputDef, ...] = ()
    input_files: Mapping[str, FileRef] = field(default_factory=dict)
    commands: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    statistics: tuple[str, ...] = ()
    placeholders: Mapping[str, str] = field(default_factory=dict)
    preprocess: tuple[str, ...] = ()
    postprocess: tuple[str, ...] = ()
    output_files: Mapping[str, OutputFile] = field(default_factory=dict)
    energy: EnergySettings | None = None
    generate: Generation | None = None
    scenario: Scenario | None = None


@dataclass(frozen=True, slots=True)
class BenchmarkSpec:
    """One loaded spec: a model, its tests, and the framework configs it names (may be empty).

    ``ignored`` lists the FAI-PEP fields the file uses that benchlab does not act on, as
    (field path, why) pairs. ``elsewhere`` names frameworks planned with another copy of this
    spec (an exported model's other stage, :class:`benchlab.exporting.session.ExportSession`):
    left out of this one's jobs without a word.
    """

    path: Path
    model: ModelDef
    tests: tuple[TestCase, ...]
    frameworks: tuple[FrameworkConfig, ...] = ()
    ignored: tuple[tuple[str, str], ...] = ()
    elsewhere: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Suite:
    """A list of specs loaded from one suite file, with its shared defaults already applied."""

    path: Path
    specs: tuple[BenchmarkSpec, ...]
