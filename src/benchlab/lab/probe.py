"""What a host's agent serves and how it checks it: its devices, their probe and health check.

The agent (:mod:`benchlab.lab.worker`) enumerates the host itself, the attached adb phones and
the boards of its config; a probe opens a device's target and reads its properties; a health
check adds a tiny known benchmark where the device has Python.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchlab.lab.devices import device_properties
from benchlab.schema.result import EnvKey

__all__ = ["DeviceEntry", "enumerate_devices", "health_check", "known_benchmark", "probe"]


@dataclass(frozen=True)
class DeviceEntry:
    """A device this host serves: its lab id, kind and benchlab target string."""

    id: str
    kind: str
    target: str



def enumerate_devices(host: str, *, include_host: bool = True, adb: bool | str = True,
                      targets: Sequence[str] = ()) -> list[DeviceEntry]:
    """The host itself, every attached adb phone and the extra targets (ssh boards).

    ``adb`` is ``False`` for no phones, or the adb target whose phones to serve (``True``:
    ``adb``, the default server; ``adb:server_port=N`` another one, whose options every
    phone's target keeps).
    """
    from benchlab.plugins import open_target

    found = [DeviceEntry(f"host:{host}", "host", "host")] if include_host else []
    if adb:
        text = "adb" if adb is True else str(adb)
        options = text.partition(":")[2]
        with contextlib.suppress(Exception):  # no adb on this host: no phones
            # Not usable_target: its availability check wants exactly one phone, and an
            # agent serves every phone attached.
            phones = open_target(text).fan_out()
            found += [DeviceEntry(f"adb:{p.chosen_serial()}", "adb",
                                  f"adb:serial={p.chosen_serial()}"
                                  + (f",{options}" if options else "")) for p in phones]
    for text in targets:
        found.append(DeviceEntry(f"{text.split(':', 1)[0]}:{_board_name(text)}",
                                 text.split(":", 1)[0], text))
    return found


def _board_name(text: str) -> str:
    """A configured device's name, from its target text alone: a board that is down when the
    agent starts is still served (registered offline, taken back once it answers) instead of
    keeping the agent and its other devices from starting."""
    from benchlab.plugins import open_target, parse_plugin_text

    target = open_target(text)  # a misspelt kind or option fails here, before anything runs
    _, options = parse_plugin_text(text, "target")
    named = options.get("serial") or options.get("host")
    if named:
        return str(named)
    # A bare "adb": the one phone attached, asked for its serial.
    return str(target.chosen_serial() if hasattr(target, "chosen_serial") else text)


def probe(entry: DeviceEntry) -> tuple[bool, str, dict[str, Any], dict[str, Any], Any]:
    """(reachable, reason, properties, device state, the open target) of one device.

    The target is opened and asked for its availability once (``usable_target`` would ask a
    second time); the health check reuses it for the known benchmark.
    """
    from benchlab.plugins import open_target

    try:
        target = open_target(entry.target)
        available = target.availability()
        if not available.ok:
            return False, available.reason or "unavailable", {}, {}, None
        description = target.describe()
        return True, "", device_properties(entry.kind, description), dict(
            description.get(EnvKey.STATE) or {}), target
    except Exception as exc:  # a lost phone raises from anywhere in the probe
        return False, f"{type(exc).__name__}: {exc}", {}, {}, None


def health_check(entry: DeviceEntry) -> tuple[str, str, dict[str, Any]]:
    """Liveness plus a tiny known benchmark (a fixed Python loop) on the device.

    Returns the verdict, its reason and the device state read on the way (temperatures,
    battery), which the registry shows.
    """
    reachable, reason, _, state, target = probe(entry)
    if not reachable:
        return "bad", f"unreachable: {reason}", {}
    health, why = known_benchmark(target)
    return health, why, state


def known_benchmark(target: Any) -> tuple[str, str]:
    from benchlab.targets.base import RunRequest

    try:
        python = target.python_executable()
    except Exception:  # a phone without Python: liveness is all we can check
        python = ""
    if not python:
        return "good", "reachable (no Python on the device for the known benchmark)"
    code = ("import time;t=time.perf_counter();sum(i*i for i in range(200000));"
            "print(round((time.perf_counter()-t)*1e3,3))")
    done = target.run(RunRequest(argv=[python, "-c", code], timeout=60.0))
    if not done.ok:
        return "bad", f"known benchmark failed: {(done.stderr or done.stdout)[-300:]}"
    return "good", f"reachable; known benchmark {done.stdout.strip()} ms"
