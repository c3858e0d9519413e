"""Discovery of frameworks and targets through entry points, and what they declare.

Plugins are registered under the ``benchlab.frameworks`` and ``benchlab.targets`` entry-point
groups, so a vendor can ship a backend as its own package. Loading a plugin imports only its
adapter module, never its runtime, and checks it against its protocol.

The registry sits above what it loads (docs/architecture.md, "Layers"): it answers for every
framework with that framework's own declarations (:mod:`benchlab.frameworks.options`):
configurations checked before anything runs (:func:`check_configurations`), labels for
tables (:class:`ConfigLabels`), and the listing of ``benchlab frameworks``
(:func:`framework_options`).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchlab.errors import (
    BenchlabError,
    PluginLoadError,
    SpecError,
    UnknownPluginError,
    UsageError,
)
from benchlab.frameworks.options import (
    FrameworkOption,
    OptionProblem,
    declared_options,
    option_problem,
)

if TYPE_CHECKING:  # annotations only: the reporters import this module, and stay light
    from benchlab.spec.types import BenchmarkSpec, FrameworkConfig

__all__ = [
    "FRAMEWORK_GROUP",
    "TARGET_GROUP",
    "ConfigLabels",
    "FrameworkOptions",
    "available_names",
    "check_configurations",
    "check_spec_configurations",
    "configuration_problem",
    "framework_options",
    "load_framework",
    "load_target",
    "open_target",
    "parse_plugin_text",
]

FRAMEWORK_GROUP = "benchlab.frameworks"
TARGET_GROUP = "benchlab.targets"


def available_names(group: str) -> list[str]:
    """Names registered in an entry-point group, sorted."""
    return sorted({ep.name for ep in importlib.metadata.entry_points(group=group)})


def _load(group: str, name: str, kind: str) -> Callable[..., Any]:
    matches = [ep for ep in importlib.metadata.entry_points(group=group) if ep.name == name]
    if not matches:
        known = ", ".join(available_names(group)) or "none"
        raise UnknownPluginError(f"unknown {kind} {name!r}; registered {kind}s: {known}")
    entry = matches[0]
    try:
        factory = entry.load()
    except Exception as exc:  # a broken plugin must not take benchlab down with a traceback
        dist = entry.dist.name if entry.dist else "?"
        raise PluginLoadError(
            f"{kind} {name!r} from distribution {dist!r} failed to load: {exc}"
        ) from exc
    return factory


def load_framework(name: str) -> Any:
    """Instantiate the framework adapter registered under ``name``."""
    from benchlab.frameworks.base import Framework

    plugin = _load(FRAMEWORK_GROUP, name, "framework")()
    if not isinstance(plugin, Framework):
        raise PluginLoadError(f"framework {name!r} does not implement the Framework protocol")
    return plugin


def _scalar(value: str) -> object:
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def parse_plugin_text(text: str, kind: str = "framework") -> tuple[str, dict[str, object]]:
    """``name`` or ``name:key=value,key=value`` → ``(name, options)``.

    Values that look like a bool, int or float become one; a value may itself contain ``=``
    or ``:`` (``config=/home/me/.ssh/config``).
    """
    name, _, rest = text.partition(":")
    if not name.strip():
        raise UsageError(f"bad {kind} {text!r}: expected name or name:key=value,...")
    options: dict[str, object] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"bad {kind} option {item!r} in {text!r}: expected key=value")
        options[key.strip()] = _scalar(value.strip())
    return name.strip(), options


def open_target(target: Any) -> Any:
    """A target object from ``"host"``, ``"ssh:host=pi"``, ``"adb:serial=X"`` or a target."""
    if not isinstance(target, str):
        return target
    name, options = parse_plugin_text(target, "target")
    try:
        return load_target(name, **options)
    except TypeError as exc:
        raise UsageError(f"bad option for target {name!r} in {target!r}: {exc}") from None


def load_target(name: str, **options: Any) -> Any:
    """Instantiate the target registered under ``name`` with its options."""
    from benchlab.targets.base import Target

    plugin = _load(TARGET_GROUP, name, "target")(**options)
    if not isinstance(plugin, Target):
        raise PluginLoadError(f"target {name!r} does not implement the Target protocol")
    return plugin


# -- what the frameworks declare ------------------------------------------------------


def configuration_problem(config: FrameworkConfig) -> OptionProblem | None:
    """What :func:`option_problem` finds in ``config``, its framework loaded from the
    registry. A name nobody registered, or a plug-in that does not load, is no option
    problem: the planner says so, as it always has. A malformed declaration is the
    plug-in's ``PluginLoadError``."""
    if not config.options:
        return None
    try:
        framework = load_framework(config.name)
    except (UnknownPluginError, PluginLoadError):
        return None
    # A malformed declaration raises here: unchecked options would be this check undone.
    return option_problem(config.name, declared_options(framework), config.options)


def check_configurations(configs: Iterable[FrameworkConfig]) -> None:
    """Refuse (``UsageError``) the first configuration whose options its framework's
    declaration does not take (:func:`configuration_problem`)."""
    for config in configs:
        problem = configuration_problem(config)
        if problem is not None:
            raise UsageError(problem.message)


def check_spec_configurations(spec: BenchmarkSpec) -> None:
    """:func:`check_configurations` for a spec's own ``frameworks``: the refusal is the spec
    error of that field (``spec.yaml: frameworks[1].provders: ...``). A framework planned
    with the model's other export stage (``spec.elsewhere``) is checked there."""
    for index, config in enumerate(spec.frameworks):
        problem = None if config.name in spec.elsewhere else configuration_problem(config)
        if problem is not None:
            raise SpecError(spec.path, problem.message, f"frameworks[{index}].{problem.key}")


class ConfigLabels:
    """Labels of framework configurations for tables: ``executorch[xnnpack,int8]``,
    ``onnxruntime[int8,threads=4]``. Each option is shown as its declaration says
    (:meth:`FrameworkOption.label`): ``key=value`` unless declared bare, bare values first;
    a key no declaration names (a framework not installed here, a plug-in that declares
    nothing, a result stored before declarations) as ``key=value`` too, never a value alone.

    One instance per table: it looks each framework's declaration up once, since a lookup
    scans the installed entry points (milliseconds, paid per cell otherwise)."""

    def __init__(self) -> None:
        self._declared: dict[str, Mapping[str, FrameworkOption]] = {}

    def __call__(self, framework: str, config: Mapping[str, Any]) -> str:
        """``framework[...]``: the bare values first, then ``key=value`` parts, each group in
        key order (what runs, then how it is tuned); the name alone without options."""
        declared = self._options_of(framework)
        shown = [(not (key in declared and declared[key].bare), key,
                  declared[key].label(value) if key in declared else f"{key}={value}")
                 for key, value in config.items()]
        parts = [part for _, _, part in sorted(shown)]
        return f"{framework}[{','.join(parts)}]" if parts else framework

    def _options_of(self, framework: str) -> Mapping[str, FrameworkOption]:
        if framework not in self._declared:
            try:
                declared = declared_options(load_framework(framework)) or ()
            except BenchlabError:  # not registered here, or broken: label every key
                declared = ()
            self._declared[framework] = {option.name: option for option in declared}
        return self._declared[framework]


@dataclass(frozen=True, slots=True)
class FrameworkOptions:
    """One registered framework's options as ``benchlab frameworks`` lists them.

    ``options`` is ``None`` when the framework declares none (its options pass unchecked);
    ``error`` says why a plug-in could not be loaded to ask."""

    framework: str
    options: tuple[FrameworkOption, ...] | None
    error: str | None = None


def framework_options(names: Iterable[str] = ()) -> list[FrameworkOptions]:
    """The options each registered framework takes (``names``: only those), from the same
    declarations the harness checks configurations against: what ``benchlab frameworks``
    prints. An unknown name is an ``UnknownPluginError``; a plug-in that fails to load is
    listed with its error rather than ending the list."""
    asked = list(names)
    listed = []
    for name in asked or available_names(FRAMEWORK_GROUP):
        try:
            listed.append(FrameworkOptions(name, declared_options(load_framework(name))))
        except PluginLoadError as exc:
            if asked:
                raise
            listed.append(FrameworkOptions(name, None, error=str(exc)))
    return listed
