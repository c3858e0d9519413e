"""FAI-PEP compatibility: how FAI-PEP's legacy keys map onto benchlab's test settings.

FAI-PEP specs load unchanged. Its keys that benchlab has a better name for are translated here,
after validation and before the internal dataclasses are built:

* ``platform_args.taskset`` (a hexadecimal CPU mask, as given to ``taskset MASK cmd``) becomes
  ``cpu_list``; ``platform_args.sleep_before_run`` becomes ``cooldown``; ``platform_args.timeout``
  and ``platform_args.env`` become ``timeout`` and ``env``;
* legacy ``command: str`` becomes a one-command ``commands`` list, and legacy ``arguments: str``
  (appended to the benchmark program by FAI-PEP) becomes ``["{program} <arguments>"]``;
* model-level ``timeout``, ``cooldown`` and ``repeat`` are defaults for every test of the spec;
* ``{blob: [file]}`` (a one-element list, the 2018 form of ``input_files``) means ``{blob: file}``;
* input types ``float``, ``double``, ``int``... mean ``float32``, ``float64``, ``int32``...
* ``preprocess``/``postprocess`` (model and test level) and ``output_files`` are FAI-PEP's
  accuracy flow, run by :mod:`benchlab.harness.hoststeps`; only their commands and file locations are
  acted on (:data:`UNHONOURED_NESTED_KEYS` lists the rest).
* a power test (``metric: power``) carries its own energy request (:func:`power_request`):
  ``collection_time``, ``voltage`` and the ``monsoon`` block become ``TestCase.energy``.

A test's setting is taken from the first place that has it: the test's own key, the test's
``platform_args``, the model-level default, the suite's test defaults, the suite defaults'
``platform_args``; else the built-in default. ``env`` is merged across all of them instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from benchlab.schema.settings import EnergySettings
from benchlab.spec.types import TestCase

if TYPE_CHECKING:
    from benchlab.spec.models import ModelModel, MonsoonModel, PlatformArgsModel, TestDefaultsModel

__all__ = [
    "DTYPE_ALIASES",
    "FAIPEP_MONSOON_VOLTAGE",
    "POWER_KEYS",
    "UNHONOURED_MODEL_KEYS",
    "UNHONOURED_MONSOON_KEYS",
    "UNHONOURED_NESTED_KEYS",
    "UNHONOURED_TEST_KEYS",
    "UNKNOWN_NESTED_KEY",
    "cpu_ranges",
    "effective_settings",
    "normalise_dtype",
    "power_request",
    "taskset_to_cpu_list",
    "unhonoured_power_fields",
    "unwrap_file_list",
]

DTYPE_ALIASES: dict[str, str] = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "int": "int32",
    "long": "int64",
    "uint8_t": "uint8",
}
"""FAI-PEP (C-style) input type names and the numpy dtype names benchlab uses for them."""

#: FAI-PEP test keys that load but that benchlab does not act on, and why; a loaded spec
#: lists the ones it uses (``BenchmarkSpec.ignored``) and ``run --dry-run`` shows them.
UNHONOURED_TEST_KEYS: dict[str, str] = {
    "files": "per-test files are not fetched; list them in model.files or input_files",
    "profiler": "per-operator profiles come from profile_ops (the runtimes' own profilers)",
    "degrade": "network degradation is not simulated",
    "method": "benchlab compare chooses how to pair the two sides itself",
    "commands_mapping": "a mapping, not commands: this file repeats the key 'commands' and "
                        "JSON keeps the last one; the test runs without commands",
}
#: FAI-PEP model keys that load but that benchlab does not act on, and why.
UNHONOURED_MODEL_KEYS: dict[str, str] = {
    "converter": "models are not converted on the fly; the zoo exports its own formats",
    "command_args": "appended to the commands that run {program}, and this spec's tests "
                    "have none",
    "platform_args": "model-level platform_args: give them per test",
    "app": "FAI-PEP's Android app runner is not supported; use a native tool or commands",
}

#: Keys inside a ``preprocess``/``postprocess`` block or an ``output_files`` entry that load
#: but are not acted on (a host step runs its commands; an output file is pulled, no more).
UNHONOURED_NESTED_KEYS: dict[str, str] = {
    "files": "files of a pre/postprocess step are not fetched; list them in model.files",
    "platform_args": "host commands run as they are, with the test's timeout",
    "converter": "output files are not converted into metrics; a postprocess command that "
                 "reads the file and prints metric lines does that",
    "upload": "output files are not uploaded; they lie in {HOSTDIR} until the job ends",
    "md5": "an output file is made by the commands; no hash is checked",
    "sha256": "an output file is made by the commands; no hash is checked",
}
#: Why another key of those blocks is not acted on.
UNKNOWN_NESTED_KEY = "not a key benchlab knows here"

#: A power test's keys (``metric: power``) that make its energy request (:func:`power_request`).
POWER_KEYS = ("monsoon", "collection_time", "voltage")
#: The output voltage FAI-PEP sets a Monsoon to when a ``monsoon`` block gives none (V).
FAIPEP_MONSOON_VOLTAGE = 4.0
#: Keys of a ``monsoon`` block that load but are not acted on, and why.
UNHONOURED_MONSOON_KEYS: dict[str, str] = {
    "disable_usb": "FAI-PEP roots the phone and writes 1 to this file to cut USB power while it "
                   "measures; benchlab does not write it: cut USB power yourself (adb over "
                   "Wi-Fi, a switchable hub) so the Monsoon alone powers the phone",
}
_NOT_A_MONSOON_KEY = "not a key of FAI-PEP's monsoon block"
_NOT_POWER = ("acted on only in a test of metric 'power' (as in FAI-PEP); this test's metric "
              "is another")

# The keys of TestCase that come straight from a validated test model.
_SETTING_KEYS = frozenset(f.name for f in fields(TestCase)) - {
    "identifier", "placeholders", "energy"}


def normalise_dtype(name: str) -> str:
    """Return the numpy dtype name for an input type, translating FAI-PEP's C-style names."""
    return DTYPE_ALIASES.get(name, name)


def cpu_ranges(cpus: Iterable[int]) -> str:
    """Render CPU numbers as a compact list: ``[0, 1, 2, 5]`` becomes ``"0-2,5"``."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    start = prev = None
    for cpu in [*ordered, None]:
        if prev is not None and cpu == prev + 1:
            prev = cpu
            continue
        if start is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = cpu
    return ",".join(parts)


def taskset_to_cpu_list(mask: str) -> str:
    """Turn a ``taskset`` hexadecimal CPU mask (``"f0"``, ``"0x3"``) into a CPU list (``"4-7"``).

    Raises ValueError when the mask is not hexadecimal or selects no CPU.
    """
    text = mask.strip().lower().removeprefix("0x")
    try:
        bits = int(text, 16)
    except ValueError:
        raise ValueError(f"taskset must be a hex CPU mask like 'f0', got {mask!r}") from None
    if bits <= 0:
        raise ValueError(f"taskset mask {mask!r} selects no CPU")
    return cpu_ranges(i for i in range(bits.bit_length()) if bits >> i & 1)


def unwrap_file_list(value: Any) -> Any:
    """Accept FAI-PEP's one-element list form of a file entry; reject longer lists."""
    if isinstance(value, list):
        if len(value) != 1:
            raise ValueError(
                f"a list of files is accepted only with exactly one entry, got {len(value)}"
            )
        return value[0]
    return value


def _own(test: TestDefaultsModel) -> dict[str, Any]:
    layer = {k: getattr(test, k) for k in test.model_fields_set if k in _SETTING_KEYS}
    layer.update({k: getattr(test, k) for k in POWER_KEYS if getattr(test, k) is not None})
    if test.command is not None:
        layer["commands"] = [test.command]
    elif test.arguments is not None:
        # FAI-PEP ran "<program> <arguments>"; {program} is filled in per job.
        layer["commands"] = [f"{{program}} {test.arguments}"]
    return layer


def _platform(args: PlatformArgsModel | None) -> dict[str, Any]:
    if args is None:
        return {}
    layer: dict[str, Any] = {}
    if args.timeout is not None:
        layer["timeout"] = args.timeout
    if args.sleep_before_run is not None:
        layer["cooldown"] = args.sleep_before_run
    if args.taskset is not None:
        layer["cpu_list"] = taskset_to_cpu_list(args.taskset)
    if args.env:
        layer["env"] = args.env
    return layer


def _model(model: ModelModel) -> dict[str, Any]:
    pairs = (("timeout", model.timeout), ("cooldown", model.cooldown), ("repeat", model.repeat))
    return {key: value for key, value in pairs if value is not None}


def effective_settings(
    test: TestDefaultsModel, model: ModelModel, defaults: TestDefaultsModel | None
) -> dict[str, Any]:
    """Resolve one validated test's settings through the layers described in the module doc.

    Returns only the keys some layer sets, so the dataclass defaults fill in the rest; ``env``
    is the union of every layer's ``env``, the most specific layer winning per variable. The
    power keys (:data:`POWER_KEYS`) come back as one ``energy`` request, in a power test only.
    """
    layers = [_own(test), _platform(test.platform_args), _model(model)]
    if defaults is not None:
        layers += [_own(defaults), _platform(defaults.platform_args)]
    settings: dict[str, Any] = {}
    env: dict[str, str] = {}
    for layer in reversed(layers):
        env.update(layer.get("env", {}))
        settings.update(layer)
    settings["env"] = env
    power = {key: settings.pop(key) for key in POWER_KEYS if key in settings}
    energy = power_request(settings.get("metric"), **power)
    if energy is not None:
        settings["energy"] = energy
    return settings


def power_request(
    metric: str | None,
    monsoon: MonsoonModel | None = None,
    collection_time: float | None = None,
    voltage: float | None = None,
) -> EnergySettings | None:
    """The energy request of a FAI-PEP power test; ``None`` when ``metric`` is not ``power``.

    The meter is a Monsoon when the test has a ``monsoon`` block or a ``voltage``, else the
    target's own (``auto``: RAPL or NVML on the host, the battery gauge on a phone, which is
    FAI-PEP's ``method: software``). The block's ``collection_time`` and ``voltage`` win over
    the test's own; a block with no voltage anywhere sets FAI-PEP's 4.0 V
    (:data:`FAIPEP_MONSOON_VOLTAGE`). No collection time means no floor on the window (FAI-PEP
    samples a fixed 180 s or 300 s and looks for the benchmark in it afterwards; benchlab's
    window is the measured loop itself).
    """
    if metric != "power":
        return None
    if monsoon is not None:
        if monsoon.collection_time is not None:
            collection_time = monsoon.collection_time
        if monsoon.voltage is not None:
            voltage = monsoon.voltage
        elif voltage is None:
            voltage = FAIPEP_MONSOON_VOLTAGE
    meter = "monsoon" if voltage is not None else "auto"
    return EnergySettings(meter=meter, voltage=voltage, collection_time=collection_time or 0.0)


def unhonoured_power_fields(
    test: TestDefaultsModel, energy: EnergySettings | None
) -> list[tuple[str, str]]:
    """The power keys of one test that are not acted on, as (key, why): every one the test
    sets when it is no power test (``energy`` is ``None``), else its ``monsoon`` block's
    other keys (``monsoon.disable_usb``)."""
    if energy is None:
        return [(key, _NOT_POWER) for key in POWER_KEYS if getattr(test, key) is not None]
    extra = test.monsoon.model_extra if test.monsoon is not None else None
    return [(f"monsoon.{key}", UNHONOURED_MONSOON_KEYS.get(key, _NOT_A_MONSOON_KEY))
            for key in extra or {}]
