"""Discovery of frameworks and targets through entry points.

Plugins are registered under the ``benchlab.frameworks`` and ``benchlab.targets`` entry-point
groups, so a vendor can ship a backend as its own package. Loading a plugin imports only its
adapter module, never its runtime, and checks it against its protocol.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from typing import Any

from benchlab.errors import PluginLoadError, UnknownPluginError, UsageError

__all__ = [
    "FRAMEWORK_GROUP",
    "TARGET_GROUP",
    "available_names",
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
