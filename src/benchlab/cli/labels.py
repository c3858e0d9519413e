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

UserIdentifierOption = Annotated[
    Optional[str],  # noqa: UP007 - typer needs Optional here
    typer.Option("--user-identifier", "--user_identifier", metavar="NAME",
                 help="A name carried into every result (details.user_identifier), the "
                      "report's header and the lab, to find the results by.",
                 rich_help_panel=FAIPEP),
]
UserStringOption = Annotated[
    Optional[str],  # noqa: UP007
    typer.Option("--user-string", "--user_string", metavar="TEXT",
                 help="Who runs the benchmarks, carried into every result "
                      "(details.user_string) and to the lab.",
                 rich_help_panel=FAIPEP),
]
PlatformSigOption = Annotated[
    Optional[str],  # noqa: UP007
    typer.Option("--platform-sig", "--platform_sig", metavar="NAME",
                 help="The device's platform name, in every result (environment.platform).",
                 rich_help_panel=FAIPEP),
]
HashPlatformMappingOption = Annotated[
    Optional[Path],  # noqa: UP007
    typer.Option("--hash-platform-mapping", "--hash_platform_mapping", metavar="FILE",
                 help="A JSON file of device hash (adb serial, hostname) -> platform name; a "
                      "device it names gets that name over --platform-sig.",
                 rich_help_panel=FAIPEP),
]
RegressedTypesOption = Annotated[
    Optional[str],  # noqa: UP007
    typer.Option("--regressed-types", "--regressed_types", metavar="TYPES",
                 help="The metric types a verify run checks as regressed (FAI-PEP's): a JSON "
                      "list ('[\"latency\"]') or names comma-separated, recorded in "
                      "details.regressed_types; every metric is still measured.",
                 rich_help_panel=FAIPEP),
]
MonsoonMapOption = Annotated[
    Optional[str],  # noqa: UP007
    typer.Option("--monsoon-map", "--monsoon_map", metavar="FILE",
                 help="Which Monsoon each device is wired to: a JSON/YAML file (or JSON text) "
                      "of device serial -> monitor serial; implies --energy monsoon.",
                 rich_help_panel=MEASURE_MORE),
]


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
