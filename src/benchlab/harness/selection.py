"""Choosing the devices of a sweep: ``--target`` repeated, ``--exclude-target``, fan-out.

FAI-PEP runs one spec on several devices (``--devices a,b``, ``--excluded_devices c``).
:func:`select_targets` is benchlab's form of it: every target text (``host``,
``ssh:host=pi``, ``adb:model=Pixel 8``) opens a target; a target that stands for several
devices (an adb target whose selectors match several attached phones) fans out to one target
per device; exclusions drop the devices they match; the rest are checked usable up front, so
a missing phone is one clear error before any job starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from benchlab.errors import InfrastructureError, UsageError
from benchlab.schema.result import EnvKey, device_label
from benchlab.targets.base import Target

__all__ = ["FanOut", "select_targets", "target_device_label", "usable_target"]


@runtime_checkable
class FanOut(Protocol):
    """A target that can stand for several devices (an adb target without a serial)."""

    def fan_out(self) -> list[Any]:
        """One target per device this target's selectors match (empty when none does)."""
        ...


def target_device_label(target: Target) -> str:
    """The device label (:func:`benchlab.schema.result.device_label`) of an open target."""
    return device_label(target.name, str(target.describe().get(EnvKey.HOSTNAME, "")))


def usable_target(target: str | Target) -> Target:
    """The target, checked once up front: an unreachable board or a missing phone is one clear
    error before any job starts, not the same failure in every job."""
    from benchlab.plugins import open_target

    opened: Target = open_target(target)
    available = opened.availability()
    if not available.ok:
        raise InfrastructureError(f"target {opened.name!r} is not usable: {available.reason}")
    return opened


def _excludes(exclusion: str, target: Target) -> bool:
    """Whether ``exclusion`` (a target text: ``adb:serial=X``, ``ssh:host=pi``, ``adb``)
    names ``target``: the same kind, and every option given equal to the target's attribute
    of that name or, failing that, its ``describe()`` entry (``model``, ``hostname``)."""
    from benchlab.plugins import parse_plugin_text

    name, options = parse_plugin_text(exclusion, "target")
    if name != target.name:
        return False
    described: dict[str, Any] | None = None
    for key, wanted in options.items():
        value = getattr(target, key, None)
        if value is None:
            described = described if described is not None else dict(target.describe())
            value = described.get(key)
        if value is None or str(value) != str(wanted):
            return False
    return True


def select_targets(
    targets: str | Target | Sequence[str | Target], exclude: Sequence[str] = ()
) -> list[Target]:
    """The usable targets a sweep runs on, in the order given, each device once.

    A target that matches several devices fans out to all of them; ``exclude`` drops every
    device an exclusion names. No device left, or one device given twice, is a
    :class:`UsageError`; an unusable device is an :class:`InfrastructureError`.
    """
    from benchlab.plugins import open_target

    given = [targets] if isinstance(targets, (str, Target)) else list(targets)
    if not given:
        raise UsageError("no target given")
    opened: list[Target] = []
    for item in given:
        target = open_target(item)
        many = target.fan_out() if isinstance(target, FanOut) else None
        opened += many if many else [target]
    kept = [t for t in opened if not any(_excludes(text, t) for text in exclude)]
    if not kept:
        names = ", ".join(str(t) for t in given)
        raise UsageError(f"every device of --target {names} is excluded by --exclude-target "
                         f"{', '.join(exclude)}")
    chosen = [usable_target(t) for t in kept]
    if len(chosen) > 1:
        labels = [target_device_label(t) for t in chosen]
        twice = sorted({label for label in labels if labels.count(label) > 1})
        if twice:
            raise UsageError(f"the same device is given twice: {', '.join(twice)}")
    return chosen
