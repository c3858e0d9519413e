"""A lab compare's and a lab track's options: typed here, JSON in the job's request.

Both are built from the dataclasses the local commands take (:class:`CompareSettings`,
:class:`TrackSettings`), so an option added there travels without a second list of fields.
What names this machine cannot travel: a track's build folder, status file and remote are the
device host's; a side's model file or commit is refused before the job is queued.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from benchlab.ab.sides import CompareSettings, Side, make_side
from benchlab.errors import UsageError
from benchlab.tracking.tracker import TrackSettings

__all__ = ["SideSpec", "compare_options", "read_compare_options", "read_track_options",
           "track_options"]

#: The track settings that are paths or services of the machine that runs the track: the
#: lab device's host gives its own.
_TRACK_LOCAL = ("builds_dir", "status_file", "remote", "branch")


@dataclass(frozen=True, slots=True)
class SideSpec:
    """One side of a lab compare as the device builds it (:func:`make_side`): a program on
    the device's host, a framework configuration or a Python there; none: the spec itself."""

    program: str | None = None
    config: str | None = None
    python: str | None = None

    def side(self, label: str) -> Side:
        return make_side(label, program=self.program, config=self.config, python=self.python)


def compare_options(control: SideSpec, treatment: SideSpec,
                    settings: CompareSettings) -> dict[str, Any]:
    """A compare job's options: the two sides and every compare setting."""
    wire = asdict(settings)
    wire["looks"] = list(settings.looks)
    return {"control": _no_none(asdict(control)), "treatment": _no_none(asdict(treatment)),
            "settings": wire}


def read_compare_options(options: Mapping[str, Any]) -> tuple[Side, Side, CompareSettings]:
    """The sides and settings :func:`compare_options` wrote; a wrong field names itself."""
    try:
        return _compare_options(options)
    except (TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"compare options: {exc}") from None


def _compare_options(options: Mapping[str, Any]) -> tuple[Side, Side, CompareSettings]:
    _known(options, {"control", "treatment", "settings"}, "compare options")
    sides = []
    for label in ("control", "treatment"):
        given = dict(options.get(label, {}))
        _known(given, {f.name for f in fields(SideSpec)}, f"the {label} side")
        sides.append(SideSpec(**given).side(label))
    settings = dict(options.get("settings", {}))
    _known(settings, {f.name for f in fields(CompareSettings)}, "compare settings")
    if "looks" in settings:
        settings["looks"] = tuple(settings["looks"])
    return sides[0], sides[1], CompareSettings(**settings)


def track_options(settings: TrackSettings) -> dict[str, Any]:
    """A track job's options: the settings, less what the device's host gives itself.
    A track that fetches a remote stays local (a lab track walks a fixed range)."""
    if settings.fetches or settings.status_file is not None:
        raise UsageError("track --lab walks a fixed range: --follow, --remote and "
                         "--status-file stay local")
    wire = {k: v for k, v in asdict(settings).items() if k not in _TRACK_LOCAL}
    wire["repo"] = str(settings.repo)
    return wire


def read_track_options(options: Mapping[str, Any], builds_dir: Path) -> TrackSettings:
    """The settings :func:`track_options` wrote, building in ``builds_dir`` on this host."""
    allowed = {f.name for f in fields(TrackSettings)} - set(_TRACK_LOCAL)
    _known(options, allowed, "track options")
    given = dict(options)
    try:
        given["repo"] = Path(given["repo"])
        return TrackSettings(**given, builds_dir=builds_dir)
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"track options: {exc!s} (repo, revisions and program are needed)") \
            from None


def _known(given: Mapping[str, Any], allowed: set[str], what: str) -> None:
    unknown = sorted(set(given) - allowed)
    if unknown:
        raise UsageError(f"{what}: unknown field(s) {', '.join(unknown)}")


def _no_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}
