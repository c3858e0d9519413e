"""What a sweep measures, as one value: :class:`Sweep`, which ``run``, ``plan_sweep``,
``compare``, ``track``, the lab and the CLI pass around instead of the same arguments each.

Its :meth:`Sweep.fingerprint_line` names the request in canonical JSON (sorted keys, options
sorted, no ``repr``), so a resumed run finds its run whatever order the options were given in
and whatever a class's ``repr`` looks like. Runs started before that line existed were named
by ``repr``; :meth:`Sweep.legacy_fingerprint_line` rebuilds that name so they stay resumable
(docs/reproducibility.md, "Resuming a sweep").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from benchlab.generation import Generation
from benchlab.harness import TestOverrides
from benchlab.scenario import Scenario
from benchlab.plugins import FRAMEWORK_GROUP, available_names, parse_plugin_text
from benchlab.spec.types import FrameworkConfig, InputDef
from benchlab.usermodels.given import input_defs
from benchlab.targets.base import Target

__all__ = ["FINGERPRINT_VERSION", "SpecsArg", "Sweep", "TargetsArg", "framework_configs", "parse_framework"]

#: Bumped when the canonical line's content changes; part of the line, so old runs differ.
FINGERPRINT_VERSION = 2

SpecsArg = Sequence[str | Path] | str | Path | None
TargetsArg = str | Target | Sequence[str | Target]


def parse_framework(text: str) -> FrameworkConfig:
    """Parse ``name`` or ``name:key=value,key=value`` (values parsed as int/float/bool if they
    look like one), e.g. ``pytorch:mode=torchscript`` or ``onnxruntime:intra_op_threads=1``."""
    name, options = parse_plugin_text(text, "framework")
    return FrameworkConfig(name, options)


def framework_configs(frameworks: Sequence[str | FrameworkConfig] | None
                      ) -> tuple[FrameworkConfig, ...]:
    """The configurations ``frameworks`` asks for, ``all`` expanded.

    ``all`` is every installed framework's defaults, except those configured explicitly;
    alone, it leaves each spec to its own defaults (what no framework at all does).
    """
    configs = [parse_framework(f) if isinstance(f, str) else f for f in frameworks or ()]
    if any(c.name == "all" for c in configs):
        explicit = [c for c in configs if c.name != "all"]
        named = {c.name for c in explicit}
        configs = [FrameworkConfig(n) for n in available_names(FRAMEWORK_GROUP)
                   if n != "generic" and n not in named] + explicit if explicit else []
    return tuple(configs)


@dataclass(frozen=True)
class Sweep:
    """What to measure and where: spec files, zoo models, framework configurations, the
    devices, and the settings that replace the specs'.

    Build it with :meth:`of`, which takes what the Python API and the CLI take (strings,
    lists, ``None``) and keeps the canonical forms: frameworks parsed (``all`` expanded),
    tuples, a read-only string map.
    """

    specs: tuple[Path, ...] = ()
    models: tuple[str, ...] = ()
    frameworks: tuple[FrameworkConfig, ...] = ()
    targets: tuple[str | Target, ...] = ("host",)
    exclude_targets: tuple[str, ...] = ()
    overrides: TestOverrides | None = None
    string_map: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    time_budget: float | None = None
    root_model_dir: Path | None = None
    cache_dir: Path | None = None
    #: The workloads the zoo's text generators run (one test each; empty: their default).
    generations: tuple[Generation, ...] = ()
    #: The load scenario every forward-pass test runs under (``None``: the specs' own).
    scenario: Scenario | None = None
    #: The user's own models (:mod:`benchlab.usermodels.given`: files, factories, modules).
    user_models: tuple[Any, ...] = ()
    #: Their input shapes and dtypes (empty: what each model declares or its file says).
    inputs: tuple[InputDef, ...] = ()
    #: An ``.npz`` of their input sets, for int8 calibration and accuracy.
    data: Path | None = None

    @classmethod
    def of(
        cls,
        specs: SpecsArg = None,
        *,
        models: Sequence[str] | None = None,
        frameworks: Sequence[str | FrameworkConfig] | None = None,
        target: TargetsArg = "host",
        exclude_targets: Sequence[str] = (),
        overrides: TestOverrides | None = None,
        string_map: Mapping[str, str] | None = None,
        time_budget: float | None = None,
        root_model_dir: Path | None = None,
        cache_dir: Path | None = None,
        generations: Sequence[Generation] = (),
        scenario: Scenario | None = None,
        model: Any = None,
        inputs: Sequence[Any] | None = None,
        data: str | Path | None = None,
    ) -> Sweep:
        """A sweep from the arguments ``benchlab.run`` takes (see there for each)."""
        paths = [specs] if isinstance(specs, (str, Path)) else list(specs or ())
        # One model (a file, a factory, a module) or a list of them.
        given = list(model) if isinstance(model, (list, tuple)) else [] if model is None \
            else [model]
        targets = [target] if isinstance(target, (str, Target)) else list(target)
        return cls(
            specs=tuple(Path(p) for p in paths), models=tuple(models or ()),
            frameworks=framework_configs(frameworks), targets=tuple(targets),
            exclude_targets=tuple(exclude_targets), overrides=overrides,
            string_map=MappingProxyType(dict(string_map or {})), time_budget=time_budget,
            root_model_dir=root_model_dir, cache_dir=cache_dir, generations=tuple(generations),
            scenario=scenario, user_models=tuple(given), inputs=input_defs(inputs),
            data=Path(data) if data is not None else None,
        )

    @property
    def override_values(self) -> dict[str, Any]:
        """The settings the overrides replace (empty without overrides)."""
        return dict(self.overrides.values) if self.overrides is not None else {}

    def fingerprint_line(self, where: str) -> str:
        """The canonical JSON of what names the sweep beside its models (``where``: the
        devices it runs on): framework configurations with sorted options, the overrides, the
        devices. Equal sweeps give equal lines whatever order options or keys came in."""
        # Generations and a scenario join the line only when asked for, so every other sweep keeps its name.
        more: dict[str, Any] = {"generations": [g.to_wire() for g in self.generations]} \
            if self.generations else {}
        if self.scenario is not None:
            more["scenario"] = self.scenario.to_wire()
        return json.dumps({
            **more,
            "v": FINGERPRINT_VERSION,
            # Each configuration as its own canonical text: two of one framework sort too.
            "frameworks": sorted(json.dumps([c.name, _canonical(c.options)], sort_keys=True,
                                            default=str) for c in self.frameworks),
            "overrides": _canonical(self.override_values),
            "targets": where,
        }, sort_keys=True, separators=(",", ":"), default=str)

    def legacy_fingerprint_line(self, where: str) -> str:
        """The line runs started before :data:`FINGERPRINT_VERSION` 2 were named by (the
        ``repr`` of the configurations and overrides). It matches an old run only while those
        classes print as they did when it started; when one changes, the old run cannot be
        found, and ``resume`` says there is nothing to resume."""
        return (f"frameworks={list(self.frameworks)!r} overrides={self.overrides!r} "
                f"target={where}")


def _canonical(value: Any) -> Any:
    """``value`` with every mapping's keys sorted (JSON sorts them too; tuples become lists)."""
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value
