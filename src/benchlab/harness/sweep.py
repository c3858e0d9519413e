"""What a sweep measures, as one value: :class:`Sweep`, which ``run``, ``plan_sweep``,
``compare``, ``track``, the lab and the CLI pass around instead of the same arguments each.

Its :meth:`Sweep.fingerprint_line` names the request in canonical JSON (sorted keys, options
sorted, no ``repr``), so a resumed run finds its run whatever order the options were given in
and whatever a class's ``repr`` looks like. Runs started before that line existed were named
by ``repr``; :meth:`Sweep.legacy_fingerprint_line` rebuilds that name so they stay resumable
(docs/reproducibility.md, "Resuming a sweep").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypedDict

from typing_extensions import Unpack

from benchlab.errors import SpecError, UsageError
from benchlab.plugins import check_configurations
from benchlab.schema.generation import Generation
from benchlab.schema.labels import RunLabels
from benchlab.harness.overrides import TestOverrides
from benchlab.stats.race import RacePolicy
from benchlab.schema.scenario import Scenario
from benchlab.schema.settings import EnergySettings
from benchlab.targets.reboot import RebootPolicy
from benchlab.plugins import FRAMEWORK_GROUP, available_names, parse_plugin_text
from benchlab.spec.types import FrameworkConfig, InputDef
from benchlab.usermodels.given import input_defs
from benchlab.targets.base import Target

__all__ = [
    "FINGERPRINT_VERSION",
    "ORDERS",
    "PLACE_FIELDS",
    "SpecsArg",
    "Sweep",
    "SweepFields",
    "TargetsArg",
    "WIRE_VERSION",
    "framework_configs",
    "parse_framework",
    "wire_digest",
]

#: Bumped when the canonical line's content changes; part of the line, so old runs differ.
FINGERPRINT_VERSION = 2
#: The version of :meth:`Sweep.to_wire`'s form; a reader refuses another.
WIRE_VERSION = 1
#: How a run orders its processes (:func:`benchlab.harness.planner.execute`).
ORDERS = ("rounds", "jobs")

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

    An option its framework does not declare, or a value it does not allow, is a
    ``UsageError`` here, before any model is exported or any job planned.
    """
    configs = [parse_framework(f) if isinstance(f, str) else f for f in frameworks or ()]
    if any(c.name == "all" for c in configs):
        explicit = [c for c in configs if c.name != "all"]
        named = {c.name for c in explicit}
        configs = [FrameworkConfig(n) for n in available_names(FRAMEWORK_GROUP)
                   if n != "generic" and n not in named] + explicit if explicit else []
    check_configurations(configs)
    return tuple(configs)


class SweepFields(TypedDict, total=False):
    """The fields of a :class:`Sweep` as :meth:`Sweep.of`, ``benchlab.run``, ``plan_sweep``,
    ``compare`` and ``track`` take them, each with its one description here.

    ``models``: zoo models (or ``all``, ``default``, ``small``).
    ``frameworks``: limits and configures the frameworks (``"pytorch:mode=eager"``; ``all``).
    ``target``: ``"host"``, ``"ssh:host=pi"``, ``"adb:serial=X"``, a target object, or a list
    of them (every job runs on every device, one after the other).
    ``exclude_targets``: devices to drop (``"adb:serial=X"``).
    ``overrides``: settings replacing the specs' (:class:`~benchlab.harness.overrides.TestOverrides`).
    ``string_map``: values of the specs' ``{placeholders}``.
    ``time_budget``: seconds a job may take before it is stopped.
    ``root_model_dir``, ``cache_dir``: where ``//`` model paths start; the artifact cache.
    ``generations``: the workloads the zoo's text generators run, one test each.
    ``scenario``: a LoadGen load scenario every forward-pass test runs under.
    ``model``: your own model or a list (a ``torch.nn.Module``, ``"file.py:factory"``, an
    ONNX file, a file a runtime reads as it is); ``inputs``: its shapes or example tensors;
    ``data``: an ``.npz`` of input sets for int8 calibration and accuracy.
    ``energy``: ``"auto"``, a meter name or :class:`~benchlab.schema.settings.EnergySettings`:
    energy per inference where a meter can; elsewhere each result's ``details.energy`` says
    why it is unavailable.
    ``reboot``: when to reboot a device (:class:`~benchlab.targets.reboot.RebootPolicy`):
    before the run, after failures in a row or after an uptime (adb targets); each reboot is
    in the next result's ``details.reboot``.
    ``order``: ``"rounds"`` (every job's first process, then every job's second...: drift
    falls on every cell alike and the "× fastest" ratios are paired) or ``"jobs"``
    (:func:`benchlab.harness.planner.execute`).
    ``race``: spends processes where the answer is open (a :class:`~benchlab.stats.race.RacePolicy`,
    docs/statistics.md); ``None``, the default, races a run in rounds unless ``overrides``
    fix ``repeat``; ``False`` never races (:meth:`Sweep.race_policy`).
    ``labels``: what the user says about the run (:class:`~benchlab.schema.labels.RunLabels`:
    user identifier, user string, platform name, regressed types), stamped into every result.
    """

    models: Sequence[str] | None
    frameworks: Sequence[str | FrameworkConfig] | None
    target: TargetsArg
    exclude_targets: Sequence[str]
    overrides: TestOverrides | None
    string_map: Mapping[str, str] | None
    time_budget: float | None
    root_model_dir: Path | None
    cache_dir: Path | None
    generations: Sequence[Generation]
    scenario: Scenario | None
    model: Any
    inputs: Sequence[Any] | None
    data: str | Path | None
    energy: str | EnergySettings | None
    reboot: RebootPolicy | None
    order: str
    race: RacePolicy | bool | None
    labels: RunLabels | None


#: The sweep fields that name this machine (its devices, paths, objects in memory), with the
#: option that sets each and why a request sent elsewhere (a lab job) cannot carry it.
PLACE_FIELDS: Mapping[str, tuple[str, str]] = MappingProxyType({
    "targets": ("--target", "the lab chooses the device: give --lab-device or --lab-pool"),
    "exclude_targets": ("--exclude-target", "the lab chooses the device: give --lab-pool"),
    "root_model_dir": ("--root-model-dir", "a folder on this machine"),
    "cache_dir": ("--cache-dir", "each lab device keeps its own artifact cache"),
    "user_models": ("--model", "a model on this machine; give the lab a spec whose files it "
                    "can reach"),
    "inputs": ("--input", "goes with --model"),
    "data": ("--inputs", "a file on this machine"),
    "shared_libs": ("--shared-libs", "files on this machine; give the lab a spec whose "
                    "model.libraries it can fetch"),
})


#: Each wire field's value when the sweep leaves it at its default (left out of the form).
_WIRE_DEFAULTS: Mapping[str, Any] = MappingProxyType({
    "models": [], "frameworks": [], "overrides": {}, "string_map": {}, "time_budget": None,
    "generations": [], "scenario": None, "energy": None, "reboot": None, "order": "rounds",
    "race": None, "labels": None,
})


@dataclass(frozen=True)
class Sweep:
    """What to measure and where: spec files, zoo models, framework configurations, the
    devices, the settings that replace the specs', and how the processes are spent.

    Build it with :meth:`of`, which takes what the Python API and the CLI take (strings,
    lists, ``None``) and keeps the canonical forms: frameworks parsed (``all`` expanded),
    tuples, a read-only string map. :meth:`to_wire` is the request without its place (the
    devices, local paths, models in memory), as a lab job stores it; :meth:`from_wire` the
    inverse; :meth:`digest` names that request.
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
    #: Energy per inference where a meter can (``None``: not measured).
    energy: EnergySettings | None = None
    #: When to reboot a device between its jobs (``None``: never).
    reboot: RebootPolicy | None = None
    #: ``rounds`` (every job's first process, then every job's second...) or ``jobs``.
    order: str = "rounds"
    #: The race as asked for: a policy, ``False`` (fixed design) or ``None`` (the default).
    race: RacePolicy | bool | None = None
    #: What the user says about the run, stamped into every result (not part of its name).
    labels: RunLabels | None = None

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise UsageError(f"order must be 'rounds' or 'jobs', not {self.order!r}")

    @classmethod
    def of(cls, specs: SpecsArg = None, **fields: Unpack[SweepFields]) -> Sweep:
        """A sweep from the arguments ``benchlab.run`` takes (:class:`SweepFields`)."""
        unknown = sorted(set(fields) - set(SweepFields.__annotations__))
        if unknown:
            raise UsageError(f"not a sweep field: {', '.join(unknown)}")
        paths = [specs] if isinstance(specs, (str, Path)) else list(specs or ())
        # One model (a file, a factory, a module) or a list of them.
        model = fields.get("model")
        given = list(model) if isinstance(model, (list, tuple)) else [] if model is None \
            else [model]
        target = fields.get("target", "host")
        targets = [target] if isinstance(target, (str, Target)) else list(target)
        energy = fields.get("energy")
        data = fields.get("data")
        return cls(
            specs=tuple(Path(p) for p in paths), models=tuple(fields.get("models") or ()),
            frameworks=framework_configs(fields.get("frameworks")), targets=tuple(targets),
            exclude_targets=tuple(fields.get("exclude_targets", ())),
            overrides=fields.get("overrides"),
            string_map=MappingProxyType(dict(fields.get("string_map") or {})),
            time_budget=fields.get("time_budget"), root_model_dir=fields.get("root_model_dir"),
            cache_dir=fields.get("cache_dir"), generations=tuple(fields.get("generations", ())),
            scenario=fields.get("scenario"), user_models=tuple(given),
            inputs=input_defs(fields.get("inputs")),
            data=Path(data) if data is not None else None,
            energy=EnergySettings(meter=energy) if isinstance(energy, str) else energy,
            reboot=fields.get("reboot"), order=fields.get("order", "rounds"),
            race=fields.get("race"), labels=fields.get("labels"),
        )

    @property
    def override_values(self) -> dict[str, Any]:
        """The settings the overrides replace (empty without overrides)."""
        return dict(self.overrides.values) if self.overrides is not None else {}

    def race_policy(self) -> RacePolicy | None:
        """The race the run uses: the policy given, or by default a race for a run in rounds
        whose number of processes the caller did not fix (``repeat`` in the overrides)."""
        if isinstance(self.race, RacePolicy):
            return self.race
        if self.race is False or self.order != "rounds":
            return None
        if self.race is None and "repeat" in self.override_values:
            return None
        return RacePolicy()

    def place_fields(self) -> list[str]:
        """The :data:`PLACE_FIELDS` this sweep sets (a request sent elsewhere cannot carry
        them)."""
        default = Sweep()
        # shared_libs is a setting (it rides in the overrides), but names files here too.
        return [name for name in PLACE_FIELDS
                if (self.overrides is not None and self.overrides.values.get(name)
                    if name == "shared_libs"
                    else getattr(self, name) != getattr(default, name))]

    def to_wire(self) -> dict[str, Any]:
        """The request as JSON-ready data, spec files carried as their text: what a lab job
        stores. Versioned (``v``); fields left at their default are left out. A sweep that
        sets a :data:`PLACE_FIELDS` field is a :class:`UsageError` naming the option and why."""
        placed = self.place_fields()
        if placed:
            raise UsageError("; ".join(f"{PLACE_FIELDS[n][0]} cannot travel: {PLACE_FIELDS[n][1]}"
                                       for n in placed))
        names = [p.name for p in self.specs]
        if len(set(names)) != len(names):
            raise UsageError("two spec files share a name; a request sent elsewhere keys its "
                             "specs by file name")
        texts = {}
        for path in self.specs:
            try:
                texts[path.name] = path.read_text()
            except OSError as exc:
                raise SpecError(f"{path}: cannot read the spec: {exc.strerror or exc}") from None
        wire: dict[str, Any] = {
            "v": WIRE_VERSION, "specs": texts, "models": list(self.models),
            "frameworks": [[c.name, _canonical(c.options)] for c in self.frameworks],
            "overrides": _canonical(self.override_values),
            "string_map": dict(sorted(self.string_map.items())),
            "time_budget": self.time_budget,
            "generations": [g.to_wire() for g in self.generations],
            "scenario": None if self.scenario is None else self.scenario.to_wire(),
            "energy": None if self.energy is None else asdict(self.energy),
            "reboot": None if self.reboot is None else asdict(self.reboot),
            "order": self.order,
            "race": asdict(self.race) if isinstance(self.race, RacePolicy) else self.race,
            "labels": None if self.labels is None else self.labels.to_wire(),
        }
        return {k: v for k, v in wire.items() if k in ("v", "specs") or v != _WIRE_DEFAULTS[k]}

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any], spec_dir: Path | None = None,
                  target: TargetsArg = "host") -> Sweep:
        """The sweep :meth:`to_wire` gave, its spec files written into ``spec_dir``, run on
        ``target``. A field of the wrong shape is a :class:`UsageError` naming it."""
        version = wire.get("v")
        if version != WIRE_VERSION:
            raise UsageError(f"sweep wire form v{version} is not one this benchlab reads "
                             f"(v{WIRE_VERSION}); upgrade the side that reads it")
        unknown = sorted(set(wire) - {"v", "specs", *_WIRE_DEFAULTS})
        if unknown:
            raise UsageError(f"sweep wire form: unknown field(s) {', '.join(unknown)}")
        values = {**_WIRE_DEFAULTS, **wire}
        if not isinstance(values["specs"], Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in values["specs"].items()):
            raise UsageError("sweep wire form, field specs: a mapping of file name to its text")
        if not isinstance(values["models"], list) or not all(
                isinstance(m, str) for m in values["models"]):
            raise UsageError("sweep wire form, field models: a list of zoo model names")
        specs: list[Path] = []
        if values["specs"]:
            if spec_dir is None:
                raise UsageError("a sweep with spec files needs a folder to write them into")
            for name, text in values["specs"].items():
                if name in ("", ".", "..") or Path(name).name != name or "\0" in name:
                    raise UsageError(f"sweep wire form, field specs: {name!r} is not a file "
                                     "name")
                path = spec_dir / name
                path.write_text(text)
                specs.append(path)
        current = "?"
        try:
            current = "frameworks"
            frameworks = [FrameworkConfig(str(n), dict(o)) for n, o in values["frameworks"]]
            current = "overrides"
            overrides = TestOverrides(**values["overrides"]) if values["overrides"] else None
            current = "generations"
            generations = [Generation(**g) for g in values["generations"]]
            current = "scenario"
            scenario = Scenario(**values["scenario"]) if values["scenario"] else None
            current = "energy"
            energy = EnergySettings(**values["energy"]) if values["energy"] else None
            current = "reboot"
            reboot = RebootPolicy(**values["reboot"]) if values["reboot"] else None
            current = "race"
            race = RacePolicy(**values["race"]) if isinstance(values["race"], dict) \
                else values["race"]
            current = "time_budget"
            budget = None if values["time_budget"] is None else float(values["time_budget"])
            current = "string_map"
            string_map = {str(k): str(v) for k, v in dict(values["string_map"]).items()}
            current = "labels"
            labels = RunLabels.from_wire(values["labels"]) if values["labels"] else None
            current = "order"
            return cls.of(specs, models=list(values["models"]), frameworks=frameworks,
                          target=target, overrides=overrides, string_map=string_map,
                          time_budget=budget, generations=generations, scenario=scenario,
                          energy=energy, reboot=reboot, order=str(values["order"]), race=race,
                          labels=labels)
        except (TypeError, ValueError, AttributeError, UsageError) as exc:
            raise UsageError(f"sweep wire form, field {current}: {exc}") from None

    def digest(self) -> str:
        """Names the request (:meth:`to_wire` in canonical JSON, hashed): equal requests have
        equal digests whatever order their options came in or which machine holds them."""
        return wire_digest(self.to_wire())

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



def wire_digest(wire: Mapping[str, Any]) -> str:
    """The digest of a sweep's wire form (:meth:`Sweep.digest`)."""
    line = json.dumps(_canonical(wire), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(line.encode()).hexdigest()


def _canonical(value: Any) -> Any:
    """``value`` with every mapping's keys sorted (JSON sorts them too; tuples become lists)."""
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    return value
