"""One shell script that reads a device's state, and its parser: the same on every target.

Every target (this host, an ssh board, an adb phone) runs :data:`PROBE_SCRIPT` with its own
``sh`` and hands the output to :func:`parse_probe`, so a result's device state has one shape
wherever it was measured. The script is plain POSIX ``sh`` using only ``cat`` and shell
globbing, which Android's ``mksh``/toybox, BusyBox and Debian's ``dash`` all have; a file that
is missing or unreadable is simply not printed, and its field stays ``None``.

What it reads:

* per CPU: governor, current/min/max frequency, hardware limits, ``related_cpus``, capacity
  (``/sys/devices/system/cpu``), from which CPU clusters (big.LITTLE) are derived;
* thermal zones (``/sys/class/thermal``), in °C;
* power supplies (``/sys/class/power_supply``): battery status, level, temperature, voltage,
  current and charge counter, and whether USB/AC power is online;
* load average, total memory and the time since boot (``/proc``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchlab.schema.result import EnvKey

__all__ = ["PROBE_SCRIPT", "clusters_of", "hottest", "parse_probe", "state_facts"]

#: Reads the device state; each line is ``kind name key value...``.
PROBE_SCRIPT = r"""
for d in /sys/devices/system/cpu/cpu[0-9]*; do
  n=${d##*/}
  for k in scaling_governor scaling_cur_freq scaling_min_freq scaling_max_freq \
           cpuinfo_min_freq cpuinfo_max_freq related_cpus; do
    [ -r "$d/cpufreq/$k" ] && echo "cpu $n $k $(cat "$d/cpufreq/$k" 2>/dev/null)"
  done
  [ -r "$d/cpu_capacity" ] && echo "cpu $n capacity $(cat "$d/cpu_capacity" 2>/dev/null)"
  [ -r "$d/online" ] && echo "cpu $n online $(cat "$d/online" 2>/dev/null)"
done
for z in /sys/class/thermal/thermal_zone*; do
  [ -r "$z/temp" ] && echo "thermal ${z##*/} $(cat "$z/type" 2>/dev/null) $(cat "$z/temp" 2>/dev/null)"
done
for p in /sys/class/power_supply/*; do
  for k in type status capacity temp voltage_now current_now charge_counter online present; do
    [ -r "$p/$k" ] && echo "power ${p##*/} $k $(cat "$p/$k" 2>/dev/null)"
  done
done
[ -r /proc/loadavg ] && echo "load - - $(cat /proc/loadavg)"
[ -r /proc/uptime ] && echo "uptime - - $(cat /proc/uptime)"
[ -r /proc/meminfo ] && while read -r k v u; do
  [ "$k" = "MemTotal:" ] && echo "mem - total_kb $v"
  [ "$k" = "MemAvailable:" ] && echo "mem - available_kb $v"
done < /proc/meminfo
echo "probe - done 1"
"""

_CPU_KEYS = {
    "scaling_governor": ("governor", str),
    "scaling_cur_freq": ("cur_khz", int),
    "scaling_min_freq": ("min_khz", int),
    "scaling_max_freq": ("max_khz", int),
    "cpuinfo_min_freq": ("hw_min_khz", int),
    "cpuinfo_max_freq": ("hw_max_khz", int),
    "related_cpus": ("related_cpus", str),
    "capacity": ("capacity", int),
    "online": ("online", int),
}


def _number(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


def _battery(supplies: Mapping[str, Mapping[str, str]]) -> dict[str, Any] | None:
    """The battery's state in SI-ish units, or None when the device has no battery."""
    name = next((n for n, f in supplies.items() if f.get("type", "").lower() == "battery"), None)
    if name is None and "battery" in supplies:
        name = "battery"
    if name is None:
        return None
    fields = supplies[name]
    status = fields.get("status")
    temp = _number(fields.get("temp", ""))
    voltage = _number(fields.get("voltage_now", ""))
    current = _number(fields.get("current_now", ""))
    charge = _number(fields.get("charge_counter", ""))
    external = sorted(
        n for n, f in supplies.items() if n != name and f.get("online", "").strip() == "1"
    )
    return {
        "status": status,
        "charging": status in ("Charging", "Full") or bool(external),
        "level_percent": _number(fields.get("capacity", "")),
        # Android reports the battery temperature in tenths of a degree.
        "temperature_c": temp / 10.0 if temp is not None else None,
        "voltage_v": voltage / 1e6 if voltage is not None else None,
        "current_ma": current / 1e3 if current is not None else None,
        "charge_counter_uah": charge,
        "powered_by": external,
    }


def parse_probe(text: str) -> dict[str, Any]:
    """Turn :data:`PROBE_SCRIPT` output into the device-state dictionary.

    Keys: ``cpus`` (``cpuN`` → governor, ``cur_khz``, ``min_khz``, ``max_khz``, ``hw_max_khz``,
    ...), ``clusters``, ``temperatures_c`` (``type:zone`` → °C), ``battery`` (or None),
    ``load_average``, ``memory_total_mib``, ``memory_available_mib``, ``uptime_s`` (seconds
    since boot) and ``complete`` (whether the script ran to its end).
    """
    cpus: dict[str, dict[str, Any]] = {}
    temps: dict[str, float] = {}
    supplies: dict[str, dict[str, str]] = {}
    load: list[float] | None = None
    memory: dict[str, int] = {}
    uptime: float | None = None
    complete = False
    for line in text.splitlines():
        parts = line.split(None, 3)
        if len(parts) < 3:
            continue
        kind, name, key = parts[0], parts[1], parts[2]
        value = parts[3].strip() if len(parts) > 3 else ""
        if kind == "cpu" and key in _CPU_KEYS:
            field, convert = _CPU_KEYS[key]
            if convert is int:
                number = _number(value)
                if number is not None:
                    cpus.setdefault(name, {})[field] = number
            elif value:
                cpus.setdefault(name, {})[field] = value
        elif kind == "thermal":
            # "thermal thermal_zone0 <type> <millidegrees>": the type may be empty.
            words = (key + " " + value).split()
            raw = _number(words[-1]) if words else None
            if raw is not None:
                zone_type = words[0] if len(words) > 1 else name
                # Most zones report millidegrees; a few drivers report whole degrees.
                temps[f"{zone_type}:{name}"] = raw / 1000.0 if abs(raw) > 200 else float(raw)
        elif kind == "power":
            supplies.setdefault(name, {})[key] = value
        elif kind == "load":
            try:
                load = [float(x) for x in value.split()[:3]]
            except ValueError:
                load = None
        elif kind == "uptime":
            try:
                uptime = float(value.split()[0])
            except (ValueError, IndexError):
                uptime = None
        elif kind == "mem":
            number = _number(value)
            if number is not None:
                memory[key] = number
        elif kind == "probe" and key == "done":
            complete = True
    ordered = dict(sorted(cpus.items(), key=lambda kv: _number(kv[0][3:]) or 0))
    return {
        "cpus": ordered or None,
        "clusters": clusters_of(ordered) or None,
        "temperatures_c": temps or None,
        "battery": _battery(supplies),
        "load_average": load,
        "memory_total_mib": memory["total_kb"] // 1024 if "total_kb" in memory else None,
        "memory_available_mib": (
            memory["available_kb"] // 1024 if "available_kb" in memory else None
        ),
        "uptime_s": uptime,
        "complete": complete,
    }


def clusters_of(cpus: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Group CPUs into clusters by their hardware maximum frequency (big.LITTLE and friends).

    Each cluster lists its CPUs (``"4-6"``), the hardware maximum, and the current frequency
    range, slowest cluster first. CPUs without cpufreq data are left out.
    """
    groups: dict[int, list[int]] = {}
    for name, info in cpus.items():
        top = info.get("hw_max_khz")
        index = _number(name[3:])
        if top is None or index is None:
            continue
        groups.setdefault(int(top), []).append(index)
    clusters = []
    for top, members in sorted(groups.items()):
        members.sort()
        current = [cpus[f"cpu{i}"].get("cur_khz") for i in members]
        known = [c for c in current if c is not None]
        clusters.append({
            "cpus": _cpu_ranges(members),
            "hw_max_khz": top,
            "governors": sorted({str(cpus[f"cpu{i}"].get("governor")) for i in members}),
            "cur_khz": [min(known), max(known)] if known else None,
            "max_khz": max(
                (cpus[f"cpu{i}"].get("max_khz") or 0) for i in members
            ) or None,
        })
    return clusters


def _cpu_ranges(indices: list[int]) -> str:
    """``[0, 1, 2, 5]`` → ``"0-2,5"``."""
    parts: list[str] = []
    start = prev = indices[0]
    for i in indices[1:] + [None]:  # type: ignore[list-item]
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(f"{start}-{prev}" if prev != start else str(start))
        if i is not None:
            start = prev = i
    return ",".join(parts)


def state_facts(state: Mapping[str, Any]) -> dict[str, Any]:
    """What a target's description repeats from its device state: the state itself and its
    temperatures, load average and CPU clusters."""
    return {EnvKey.STATE: state, EnvKey.TEMPERATURES_C: state.get("temperatures_c"),
            "load_average": state.get("load_average"), EnvKey.CLUSTERS: state.get("clusters")}


def hottest(state: Mapping[str, Any] | None) -> float | None:
    """The highest thermal-zone temperature in a device state, °C (None when none is known)."""
    temps = (state or {}).get("temperatures_c") or {}
    return max(temps.values()) if temps else None
