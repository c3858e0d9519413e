"""``benchlab doctor``: which frameworks, targets and devices work here, and why not."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab.spec.artifacts import default_cache_dir
from benchlab.errors import BenchlabError
from benchlab.plugins import (
    FRAMEWORK_GROUP,
    TARGET_GROUP,
    available_names,
    load_framework,
    load_target,
    open_target,
    parse_plugin_text,
)

# Its home is beside the facts it summarises; named here too for scripts that took it from
# ``benchlab.doctor`` before the folders (tests/public_names_before_folders.json).
from benchlab.targets.environment import device_summary

__all__ = ["Diagnosis", "PluginStatus", "device_summary", "diagnose"]


@dataclass(frozen=True, slots=True)
class PluginStatus:
    """One framework or target: usable or not, its version, and the reason when not."""

    kind: str
    name: str
    ok: bool
    version: str | None
    reason: str
    device: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Everything ``doctor`` reports."""

    plugins: tuple[PluginStatus, ...]
    store: str
    store_ok: bool
    cache_dir: Path


def _status(kind: str, name: str) -> PluginStatus:
    try:
        plugin = load_framework(name)
        available = plugin.availability()
    except BenchlabError as exc:
        return PluginStatus(kind, name, False, None, str(exc))
    return PluginStatus(kind, name, available.ok, available.version, available.reason)


def _target_statuses(label: str, plugin: Any) -> list[PluginStatus]:
    """One status per device: an adb target with no serial lists every attached phone."""
    try:
        lister = getattr(plugin, "devices", None)
        if lister is not None and getattr(plugin, "serial", "unset") is None:
            phones = lister()
            if phones:
                return [s for phone in phones
                        for s in _target_statuses(f"{label} {phone.serial}",
                                                  plugin.for_device(phone.serial))]
        available = plugin.availability()
        device = dict(plugin.describe()) if available.ok else {}
    except BenchlabError as exc:
        return [PluginStatus("target", label, False, None, str(exc))]
    return [PluginStatus("target", label, available.ok, available.version, available.reason,
                         device)]


def diagnose(db: str | None = None, targets: Sequence[str] = ()) -> Diagnosis:
    """Check every registered plugin (without importing any runtime) and the store.

    ``targets`` (``"ssh:host=pi"``, ``"adb:server_port=5038"``) replace the option-less check
    of the targets they name, so configured boards and phones are listed with their devices.
    """
    from benchlab.store import open_store

    plugins = [_status("framework", n) for n in available_names(FRAMEWORK_GROUP)]
    given = {parse_plugin_text(t, "target")[0]: t for t in targets}
    for name in available_names(TARGET_GROUP):
        try:
            plugin = open_target(given[name]) if name in given else load_target(name)
        except BenchlabError as exc:
            plugins.append(PluginStatus("target", name, False, None, str(exc)))
            continue
        plugins += _target_statuses(name, plugin)
    try:
        with open_store(db) as store:
            where, ok = store.url, True
    except BenchlabError as exc:
        where, ok = str(exc), False
    return Diagnosis(tuple(plugins), where, ok, default_cache_dir())
