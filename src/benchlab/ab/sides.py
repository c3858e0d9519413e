"""The two sides of a comparison, and what the comparison is asked to decide.

:class:`Side` is what differs from the spec's own job (a framework variant, a program, a
Python, a model file); :func:`side_job` is the job as a side runs it; :class:`CompareSettings`
is how much evidence to gather and what counts as a change. Every mode reads these.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchlab.spec.artifacts import sha256_of
from benchlab.errors import UsageError
from benchlab.plugins import check_configurations
from benchlab.harness.jobrun import Job
from benchlab.plugins import parse_plugin_text
from benchlab.spec.placeholders import substitute
from benchlab.spec.types import BenchmarkSpec, FileRef, FrameworkConfig
from benchlab.targets.base import Target

__all__ = ["AUTO", "MEASURES", "CompareSettings", "PythonTarget", "Side", "make_side", "side_job",
           "side_targets"]

#: Let compare choose the strongest mode the sides allow.
AUTO = "auto"

#: What a comparison can decide on (``CompareSettings.measure``).
MEASURES = ("time", "instructions", "both")


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a comparison: what differs from the spec's own job.

    ``framework`` is the job's framework configuration for this side: laid over the job's own
    options when it names the same framework (a variant: threads, mode, provider), else in
    its place; ``string_map`` adds placeholders (``{program}`` for a binary built elsewhere);
    ``python`` runs runner frameworks under another interpreter (another environment).
    ``model`` replaces the spec's model file of the same format (every file of the spec
    whose name ends like it: ``.onnx``, ``.xml``, ``.pte``...) with this one.
    ``variant`` names the side in stored results (default ``control``/``treatment``).
    """

    label: str
    framework: FrameworkConfig | None = None
    string_map: Mapping[str, str] = field(default_factory=dict)
    python: str | None = None
    variant: str | None = None
    model: Path | None = None


def make_side(label: str, *, program: str | None = None, config: str | None = None,
              python: str | None = None, model: str | Path | None = None) -> Side:
    """A side from what the CLI takes: a program (``{program}``), a framework variant
    (``pytorch:mode=eager``), a Python or a model file; none of them is the spec as it
    stands."""
    given = [x for x in (program, config, python, model) if x]
    if len(given) > 1:
        raise UsageError(f"give the {label} side one of --{label}-program, --{label}-config, "
                         f"--{label}-python or --{label}-model")
    if model:
        path = Path(model).resolve()
        if not path.is_file():
            raise UsageError(f"--{label}-model {model}: no such file")
        return Side(f"{label}:{path.name}", model=path)
    if program:
        # Jobs run in their own work directory: make paths that exist here absolute.
        words = [str(Path(w).resolve()) if Path(w).exists() else w for w in shlex.split(program)]
        return Side(f"{label}:{program}", string_map={"program": shlex.join(words)})
    if config:
        name, options = parse_plugin_text(config, "framework")
        framework = FrameworkConfig(name, options)
        check_configurations([framework])  # a misspelt option must not become a "variant"
        return Side(f"{label}:{config}", framework=framework)
    if python:
        return Side(f"{label}:{python}", python=python)
    return Side(label)


@dataclass(frozen=True, slots=True)
class CompareSettings:
    """How much evidence to gather, what counts as a change, and how the sides are paired.

    ``mode`` is ``auto`` (the strongest the sides allow: ``in-process`` for Python runtimes,
    ``lockstep`` for programs on the host, else ``process-pairs``) or one of those names;
    a mode the sides do not allow falls back with a note. ``looks`` count process pairs or
    interleaved sessions. ``fidelity_tolerance``: how far an interleaved mode may move a
    side's latency from its solo latency (0.05: ±5%) before the job is measured in process
    pairs instead; ``None`` measures and reports fidelity but keeps the mode whatever it is.

    ``measure`` is what decides: ``time`` (the modes above), ``instructions`` (each call's
    executed instructions, counted under valgrind in process pairs: :mod:`benchlab.ab.counted`)
    or ``both`` (each job twice, one verdict per metric). ``count_looks`` are the process
    pairs a counted job is decided at, ``count_calls`` the counted calls per process.
    """

    min_effect: float = 0.01
    alpha: float = 0.05
    looks: tuple[int, ...] = (20, 40, 80)
    verify: bool = True
    mode: str = AUTO
    fidelity_tolerance: float | None = 0.05
    measure: str = "time"
    count_looks: tuple[int, ...] = (1, 3, 6)
    count_calls: int = 3

    def __post_init__(self) -> None:
        if self.measure not in MEASURES:
            raise UsageError(f"unknown measure {self.measure!r}: choose one of "
                             f"{', '.join(MEASURES)}")

    @property
    def times(self) -> bool:
        """Whether wall time is compared."""
        return self.measure in ("time", "both")

    @property
    def counts(self) -> bool:
        """Whether counted instructions are compared."""
        return self.measure in ("instructions", "both")


class PythonTarget:
    """A target whose runner interpreter is another Python; everything else is delegated."""

    def __init__(self, inner: Target, python: str) -> None:
        self._inner = inner
        self._python = python
        self.name = inner.name

    def python_executable(self) -> str:
        """The other interpreter."""
        return self._python

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def side_job(job: Job, side: Side, variant: str) -> Job:
    """The job as ``side`` runs it: one fresh process per call, identity marked with the side.

    A power test's own energy request is dropped: a comparison measures no energy, and its
    collection time would ask for more than one process per call.
    """
    config = side.framework or job.config
    if side.framework is not None and side.framework.name == job.config.name:
        # A variant of the job's own configuration: the job's options (the int8 file of a
        # zoo model) stay, the side's are laid over them.
        config = FrameworkConfig(config.name, {**job.config.options, **side.framework.options})
    if side.model is not None:
        job = replace(job, spec=_with_model_file(job, side.model))
    if side.string_map:
        job = replace(job, spec=_with_file_placeholders(job.spec, side.string_map))
    identity = replace(
        job.identity, framework=config.name, framework_config=dict(config.options),
        variant=side.variant or variant,
    )
    return replace(job, identity=identity, config=config, test=replace(job.test, repeat=1,
                                                                       target_ci=None,
                                                                       energy=None))


def _format_suffix(name: str) -> str:
    return Path(name).suffix.lower()


def _with_model_file(job: Job, model: Path) -> BenchmarkSpec:
    """The job's spec with every model file of ``model``'s format replaced by ``model``."""
    files = job.spec.model.files
    keys = [key for key, ref in files.items()
            if _format_suffix(ref.filename or ref.location) == _format_suffix(model.name)]
    if not keys:
        have = ", ".join(f"{k} ({Path(r.filename or r.location).name})" for k, r in files.items())
        raise UsageError(f"{job.identity.label}: no model file of {model.name}'s format "
                         f"({_format_suffix(model.name) or 'no suffix'}) to replace; the spec "
                         f"has {have or 'no files'}")
    digest = sha256_of(model)
    swapped = {**files, **{key: FileRef(key, str(model), model.parent, sha256=digest,
                                        filename=model.name) for key in keys}}
    return replace(job.spec, model=replace(job.spec.model, files=swapped))


def _with_file_placeholders(spec: BenchmarkSpec, values: Mapping[str, str]) -> BenchmarkSpec:
    """The spec with the side's placeholders put into its model files' locations, so a side
    that names its model as ``{program}`` carries its own file into any mode (an in-process
    pair stages both sides' files; see :mod:`benchlab.ab.inprocess`)."""
    files = {key: replace(ref, location=substitute(ref.location, values))
             for key, ref in spec.model.files.items()}
    return replace(spec, model=replace(spec.model, files=files))


def side_targets(target: Target, control: Side, treatment: Side) -> tuple[Target, Target]:
    """The target each side runs on: ``target``, or it under the side's own Python."""
    return tuple(PythonTarget(target, s.python) if s.python else target  # type: ignore[return-value]
                 for s in (control, treatment))
