"""How a test is measured: each setting defined once, with its default, bounds, unit and meaning.

Every layer reads the settings from :class:`TestSettings`:

* the spec files' pydantic models (:mod:`benchlab.spec.models`) build their fields from it;
* :class:`benchlab.spec.types.TestCase` carries them (it subclasses :class:`TestSettings`);
* :class:`benchlab.harness.planner.TestOverrides` (the command line's and the API's overrides) checks
  names and bounds against it, and the CLI's options take their help text from it;
* the runner's wire format (:class:`benchlab.runner.config.RunnerConfig`) takes its defaults and
  bounds from it.

:class:`EnergySettings` says how a job's energy is measured (``--energy``, or a test of
``metric: power``); it lives here, beside the test settings, so that a loaded test can carry one
without the spec layer importing the meters.

Standard library only, because runner processes import it and their start-up is measured.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from types import NoneType
from typing import Any, get_args, get_type_hints

__all__ = [
    "DEFAULT_TIME_BUDGET_S",
    "EnergySettings",
    "SettingInfo",
    "TestSettings",
    "check_settings",
    "setting_info",
    "settings_info",
]

_KEY = "benchlab.setting"


DEFAULT_TIME_BUDGET_S = 60.0
"""Seconds a job may spend when its test sets ``target_ci`` and no ``max_time``: its processes
share them (a sweep's ``time_budget`` replaces it)."""


@dataclass(frozen=True, slots=True)
class SettingInfo:
    """What one setting means: its name, default, meaning, unit and bounds (``None``: unbounded).

    ``kind`` is the value's type (``int``, ``float``, ``str``, ``bool``; ``None`` is always
    allowed where the default is ``None``). ``ge``/``gt`` are inclusive/exclusive lower bounds,
    ``lt`` an exclusive upper bound; ``choices`` the values a text setting may take.
    """

    name: str
    kind: type
    default: Any
    doc: str
    unit: str = ""
    ge: float | None = None
    gt: float | None = None
    lt: float | None = None
    choices: tuple[str, ...] = ()

    @property
    def bounds(self) -> dict[str, float]:
        """The bounds that are set, as keyword arguments (``{"ge": 0}``) for pydantic's Field."""
        given = {"ge": self.ge, "gt": self.gt, "lt": self.lt}
        return {key: value for key, value in given.items() if value is not None}

    @property
    def described(self) -> str:
        """The meaning, with the unit: ``"Pause before each process (s)."``."""
        return f"{self.doc[:-1]} ({self.unit})." if self.unit else self.doc

    @property
    def help(self) -> str:
        """One line for a user: the meaning, the unit and the default."""
        default = "none" if self.default is None else f"{self.default:g}" if isinstance(
            self.default, float) else str(self.default).lower()
        return f"{self.described} Spec default: {default}."

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not a valid value of this setting, or ``None`` when it is."""
        if isinstance(value, str) and self.choices and value not in self.choices:
            return f"{self.name} must be one of {', '.join(self.choices)} (got {value!r})"
        if value is None or isinstance(value, (bool, str)):
            return None
        if self.ge is not None and value < self.ge:
            return f"{self.name} must be at least {self.ge:g} (got {value!r})"
        if self.gt is not None and value <= self.gt:
            return f"{self.name} must be above {self.gt:g} (got {value!r})"
        if self.lt is not None and value >= self.lt:
            return f"{self.name} must be below {self.lt:g} (got {value!r})"
        return None


def _setting(default: Any, doc: str, *, unit: str = "", ge: float | None = None,
             gt: float | None = None, lt: float | None = None,
             choices: tuple[str, ...] = ()) -> Any:
    meta = {_KEY: {"doc": doc, "unit": unit, "ge": ge, "gt": gt, "lt": lt, "choices": choices}}
    return field(default=default, metadata=meta)


@dataclass(frozen=True, slots=True, kw_only=True)
class TestSettings:
    """The settings that say how a test is measured (the spec's, after defaults are applied).

    Times are seconds. ``iter`` is the minimum number of timed iterations per fresh process,
    ``min_time``/``max_time`` bound how long each process measures, ``repeat`` is the number of
    fresh processes (the minimum, with ``target_ci``).
    """

    __test__ = False  # a library class, not a pytest test class

    warmup: int = _setting(1, "Untimed iterations before measuring.", ge=0)
    iter: int = _setting(10, "Minimum timed iterations per process.", ge=1)
    min_time: float = _setting(0.0, "Keep measuring each process at least this long.",
                               unit="s", ge=0)
    max_time: float | None = _setting(None, "Stop measuring a process after this long.",
                                      unit="s", gt=0)
    repeat: int = _setting(1, "Fresh processes per job.", ge=1)
    target_ci: float | None = _setting(
        None, "Keep measuring until the 95% CI of the median is this tight, relative to the "
        "median (0.01 is 1%).", gt=0, lt=1)
    timeout: float = _setting(600.0, "Kill a process after this long.", unit="s", gt=0)
    cooldown: float = _setting(0.0, "Pause before each process.", unit="s", ge=0)
    cpu_list: str | None = _setting(None, "CPUs to pin every process to, e.g. '0-3,6'.")
    threads: int | None = _setting(None, "Intra-op threads of the runtime.", ge=1)
    profile_ops: bool = _setting(False, "Also measure per-operator times.")
    count: str | None = _setting(
        None, "Count the instructions each measured call executes instead of timing it: "
        "'instructions' or 'cache' (also simulated cache misses); under valgrind, one "
        "intra-op thread unless threads is set.", choices=("instructions", "cache"))
    layer_errors: bool = _setting(
        False, "Also compare every layer's output with the reference model's (ONNX Runtime, "
        "PyTorch) and mark the first that diverges.")
    memory_limit: int | None = _setting(None, "Address-space cap per process.", unit="MiB", ge=1)
    temperature_gate: float | None = _setting(
        None, "Before each process, wait until the device is below this.", unit="°C")
    gate_timeout: float = _setting(300.0, "Longest wait for the temperature gate.",
                                   unit="s", ge=0)
    wipe_cache: bool = _setting(
        False, "Before each process, evict the CPU caches (write a buffer twice the "
        "last-level cache) and drop the file cache where the target lets root (FAI-PEP's "
        "--wipe_cache); details.cache_wipe says what was done.")
    shared_libs: str | None = _setting(
        None, "Shared libraries the measured program loads: host paths, comma-separated, "
        "pushed into the job's folder on the target and found there through LD_LIBRARY_PATH "
        "(FAI-PEP's --shared_libs).")


def settings_info() -> Iterator[SettingInfo]:
    """Every setting of :class:`TestSettings`, in declaration order."""
    hints = get_type_hints(TestSettings)
    for f in fields(TestSettings):
        kind = next(t for t in (*get_args(hints[f.name]), hints[f.name]) if t is not NoneType)
        yield SettingInfo(name=f.name, kind=kind, default=f.default, **f.metadata[_KEY])


_BY_NAME = {info.name: info for info in settings_info()}


def setting_info(name: str) -> SettingInfo:
    """The :class:`SettingInfo` of the setting called ``name`` (``KeyError`` if there is none)."""
    return _BY_NAME[name]


def check_settings(values: Mapping[str, Any]) -> list[str]:
    """What is wrong with ``values`` (setting name → value): unknown names and broken bounds."""
    problems = []
    for name, value in values.items():
        info = _BY_NAME.get(name)
        if info is None:
            problems.append(f"{name!r} is not a test setting (known: {', '.join(_BY_NAME)})")
        elif (problem := info.problem(value)) is not None:
            problems.append(problem)
    return problems


@dataclass(frozen=True, slots=True)
class EnergySettings:
    """How a job's energy is measured: the meter, the idle baseline, a Monsoon's voltage, and
    how long the measured window must be.

    ``meter`` is ``auto``, ``rapl``, ``nvml``, ``battery`` or ``monsoon``; ``idle_s`` the idle
    time before the job that gives the baseline (s). ``voltage`` is the output voltage a Monsoon
    is set to (V; ``None``: the meter's own default); other meters ignore it.
    ``collection_time`` (FAI-PEP's name, s; 0: none) is the least the job's measured windows add
    up to: each process is asked to measure at least that long (its ``min_time``), and when a
    process's length is fixed by its own commands, fresh processes follow until the windows add
    up (:class:`benchlab.energy.session.EnergySession`).

    A test of ``metric: power`` carries its own (``TestCase.energy``, from the spec); settings
    the user gives (``--energy``, ``run(energy=...)``) are laid over it with :meth:`over`.

    ``monsoon_map`` (FAI-PEP's ``--monsoon_map``): which Monsoon each device is wired to, as
    (device serial or hostname, monitor serial) pairs; ``monsoon_map_source`` names the file it
    came from in errors (:func:`benchlab.energy.monsoon.monitor_for`).
    """

    meter: str = "auto"
    idle_s: float = 2.0
    voltage: float | None = None
    collection_time: float = 0.0
    monsoon_map: tuple[tuple[str, str], ...] = ()
    monsoon_map_source: str = ""

    def __post_init__(self) -> None:
        # The wire form (JSON) gives the pairs back as lists; kept as tuples, the settings hash.
        object.__setattr__(self, "monsoon_map",
                           tuple((str(device), str(monitor)) for device, monitor in
                                 self.monsoon_map))

    def over(self, test: EnergySettings | None) -> EnergySettings:
        """These settings (the user's) over a test's own: the meter and the idle time are these;
        the voltage is this one when given, else the test's; the collection time the longer."""
        if test is None:
            return self
        voltage = self.voltage if self.voltage is not None else test.voltage
        return replace(self, voltage=voltage,
                       collection_time=max(self.collection_time, test.collection_time))
