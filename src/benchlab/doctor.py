"""``benchlab doctor``: which frameworks, targets and devices work here, and why not."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlab.artifacts import default_cache_dir
from benchlab.errors import BenchlabError
from benchlab.plugins import (
    FRAMEWORK_GROUP,
    TARGET_GROUP,
    available_names,
    load_framework,
    load_target,
)

__all__ = ["Diagnosis", "PluginStatus", "diagnose"]


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
        plugin = load_framework(name) if kind == "framework" else load_target(name)
        available = plugin.availability()
        device = dict(plugin.describe()) if kind == "target" and available.ok else {}
    except BenchlabError as exc:
        return PluginStatus(kind, name, False, None, str(exc))
    return PluginStatus(kind, name, available.ok, available.version, available.reason, device)


def diagnose(db: str | None = None) -> Diagnosis:
    """Check every registered plugin (without importing any runtime) and the store."""
    from benchlab.store import open_store

    plugins = [_status("framework", n) for n in available_names(FRAMEWORK_GROUP)]
    plugins += [_status("target", n) for n in available_names(TARGET_GROUP)]
    try:
        with open_store(db) as store:
            where, ok = store.url, True
    except BenchlabError as exc:
        where, ok = str(exc), False
    return Diagnosis(tuple(plugins), where, ok, default_cache_dir())
