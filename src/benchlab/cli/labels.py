"""The options that label a run and name its devices and monitors, each declared once under
benchlab's name with FAI-PEP's underscore spelling beside it: ``--user-identifier``,
``--user-string``, ``--platform-sig``, ``--hash-platform-mapping``, ``--regressed-types``
(:class:`~benchlab.schema.labels.RunLabels`) and ``--monsoon-map``
(:attr:`~benchlab.schema.settings.EnergySettings.monsoon_map`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from benchlab.cli.helptext import FAIPEP, MEASURE_MORE
from benchlab.errors import UsageError

__all__ = [
    "HashPlatformMappingOption",
    "MonsoonMapOption",
    "PlatformSigOption",
    "RegressedTypesOption",
    "UserIdentifierOption",
    "UserStringOption",
    "energy_from_options",
    "labels_from_options",
    "labels_of_run",
]

def _with_faipep_spelling(kind: Any, name: str, metavar: str, help: str,
                         panel: str = FAIPEP) -> Any:
    """An optional ``--name`` that also answers to FAI-PEP's ``--name_with_underscores``."""
    return Annotated[
        Optional[kind],  # noqa: UP007 - typer needs Optional here
        typer.Option(f"--{name}", f"--{name.replace('-', '_')}", metavar=metavar, help=help,
                     rich_help_panel=panel),
    ]


UserIdentifierOption = _with_faipep_spelling(
    str, "user-identifier", "NAME",
    "A name carried into every result (details.user_identifier), the report's header and the "
    "lab, to find the results by.")
UserStringOption = _with_faipep_spelling(
    str, "user-string", "TEXT",
    "Who runs the benchmarks, carried into every result (details.user_string) and to the lab.")
PlatformSigOption = _with_faipep_spelling(
    str, "platform-sig", "NAME",
    "The device's platform name, in every result (environment.platform).")
HashPlatformMappingOption = _with_faipep_spelling(
    Path, "hash-platform-mapping", "FILE",
    "A JSON file of device hash (adb serial, hostname) -> platform name; a device it names gets "
    "that name over --platform-sig.")
RegressedTypesOption = _with_faipep_spelling(
    str, "regressed-types", "TYPES",
    "The metric types a verify run checks as regressed (FAI-PEP's): a JSON list "
    "('[\"latency\"]') or names comma-separated, recorded in details.regressed_types; every "
    "metric is still measured.")
MonsoonMapOption = _with_faipep_spelling(
    str, "monsoon-map", "FILE",
    "Which Monsoon each device is wired to: a JSON/YAML file (or JSON text) of device serial -> "
    "monitor serial; implies --energy monsoon.", panel=MEASURE_MORE)


def labels_from_options(user_identifier: str | None = None, user_string: str | None = None,
                        platform_sig: str | None = None,
                        hash_platform_mapping: Path | str | None = None,
                        regressed_types: str | None = None) -> Any:
    """The run's :class:`~benchlab.schema.labels.RunLabels`, or ``None`` when none is given."""
    from benchlab.schema.labels import RunLabels, parse_regressed_types, read_platform_mapping

    labels = RunLabels(
        user_identifier=user_identifier, user_string=user_string, platform=platform_sig,
        platform_names=read_platform_mapping(Path(hash_platform_mapping))
        if hash_platform_mapping else RunLabels().platform_names,
        regressed_types=parse_regressed_types(regressed_types))
    return None if labels.empty else labels


def labels_of_run(given: Mapping[str, Any]) -> Any:
    """:func:`labels_from_options` of ``run``'s parameters (``given``: saved defaults in)."""
    return labels_from_options(given["user_identifier"], given["user_string"],
                               given["platform_sig"], given["hash_platform_mapping"],
                               given["regressed_types"])


def energy_from_options(energy: str | None, monsoon_map: str | None) -> Any:
    """``--energy`` as run passes it to the sweep: the meter's name, or with ``--monsoon-map``
    the Monsoon's settings with each device's monitor."""
    if not monsoon_map:
        return energy
    if energy not in (None, "monsoon"):
        raise UsageError(f"--monsoon-map names Monsoon power monitors: it goes with --energy "
                         f"monsoon, not --energy {energy}")
    from benchlab.energy.monsoon import read_monsoon_map
    from benchlab.schema.settings import EnergySettings

    pairs, source = read_monsoon_map(monsoon_map)
    return EnergySettings(meter="monsoon", monsoon_map=pairs, monsoon_map_source=source)
