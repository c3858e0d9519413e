"""Android command-line tools for the stand-in phone, as one multi-call program.

:func:`install` copies this file to ``<root>/system/bin/toolbox`` with a ``#!`` line naming
this interpreter (``-I -S``: fast start, no site packages, no user environment) and links the
tool names to it, the way Android's toolbox/toybox dispatch on ``argv[0]``. The copy finds the
sandbox from its own location (``<root>/system/bin``), so it needs nothing from the
environment. It uses the standard library only: it runs outside benchlab's import path.

Tools: ``getprop``, ``setprop``, ``log``, ``logcat``, ``dumpsys`` (``battery``,
``thermalservice``), and ``su`` on rooted profiles only. They read the property store
``data/property/props.json``, the log buffer ``data/logcat.txt`` (threadtime lines, as
``logcat -v threadtime`` prints them) and the simulated ``sys/class`` files.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import sys
import time
from pathlib import Path

TOOLS = ("getprop", "setprop", "log", "logcat", "dumpsys")
ROOTED_TOOLS = ("su",)

ROOT = Path(__file__).resolve().parents[2]
PROPS = ROOT / "data/property/props.json"
LOGBUF = ROOT / "data/logcat.txt"
POWER = ROOT / "sys/class/power_supply"
THERMAL = ROOT / "sys/class/thermal"
BATTERY_OVERRIDES = ROOT / "data/system/battery_overrides.json"

_PRIORITIES = "VDIWEFS"
# A threadtime line: date time pid tid priority tag: message.
_LINE = re.compile(r"^(\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\s+(\d+)\s+(\d+) ([VDIWEF]) (.*?)\s*: (.*)$")


def install(bin_dir: Path, rooted: bool) -> None:
    """Write the toolbox into ``bin_dir`` and link the tool names (``su`` only if rooted)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    target = bin_dir / "toolbox"
    source = Path(__file__).read_text()
    target.write_text(f"#!{sys.executable} -IS\n{source}")
    target.chmod(0o755)
    for name in TOOLS + ROOTED_TOOLS:
        link = bin_dir / name
        if link.is_symlink() or link.exists():
            link.unlink()
        if name in TOOLS or rooted:
            link.symlink_to("toolbox")


def _locked_props(update: dict[str, str] | None = None) -> dict[str, str]:
    """Read (and optionally update) the property store under a lock."""
    with open(PROPS.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        props = json.loads(PROPS.read_text()) if PROPS.exists() else {}
        if update:
            props.update(update)
            tmp = PROPS.with_suffix(".tmp")
            tmp.write_text(json.dumps(props, indent=1) + "\n")
            os.replace(tmp, PROPS)
        return props


def getprop(args: list[str]) -> int:
    """``getprop`` lists all as ``[key]: [value]``; ``getprop KEY [DEFAULT]`` prints one."""
    props = _locked_props()
    if not args:
        for key in sorted(props):
            print(f"[{key}]: [{props[key]}]")
        return 0
    print(props.get(args[0], args[1] if len(args) > 1 else ""))
    return 0


def setprop(args: list[str]) -> int:
    """``setprop KEY VALUE``; ``ro.*`` properties are write-once, as on Android."""
    if len(args) != 2:
        print("usage: setprop NAME VALUE", file=sys.stderr)
        return 1
    key, value = args
    if key.startswith("ro.") and key in _locked_props():
        print(f"Failed to set property '{key}' to '{value}'.\nSee dmesg for error reason.",
              file=sys.stderr)
        return 1
    _locked_props({key: value})
    return 0


def log(args: list[str]) -> int:
    """``log [-p PRIORITY] [-t TAG] MESSAGE...``: append one threadtime line to the buffer."""
    priority, tag, rest = "I", "log", []
    i = 0
    while i < len(args):
        if args[i] in ("-p", "-t") and i + 1 < len(args):
            if args[i] == "-p":
                priority = args[i + 1][:1].upper()
            else:
                tag = args[i + 1]
            i += 2
        else:
            rest.append(args[i])
            i += 1
    if priority not in _PRIORITIES[:-1]:
        priority = "I"
    now = time.time()
    stamp = time.strftime("%m-%d %H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1000):03d}"
    pid = os.getpid()
    line = f"{stamp} {pid:5d} {pid:5d} {priority} {tag:<8s}: {' '.join(rest)}\n"
    with open(LOGBUF, "a") as buffer:
        buffer.write(line)
    return 0


def _format(match: re.Match[str], fmt: str) -> str:
    stamp, pid, tid, prio, tag, msg = match.groups()
    formats = {
        "brief": f"{prio}/{tag:<8s}({int(pid):5d}): {msg}",
        "process": f"{prio}({int(pid):5d}) {msg}  ({tag})",
        "tag": f"{prio}/{tag:<8s}: {msg}",
        "raw": msg,
        "time": f"{stamp} {prio}/{tag:<8s}({int(pid):5d}): {msg}",
        "long": f"[ {stamp} {int(pid):5d}:{int(tid):5d} {prio}/{tag:<8s} ]\n{msg}\n",
    }
    return formats.get(fmt, match.group(0))


def _wanted(filters: dict[str, str], tag: str, prio: str) -> bool:
    floor = filters.get(tag, filters.get("*", "V"))
    return _PRIORITIES.index(prio) >= _PRIORITIES.index(floor)


def logcat(args: list[str]) -> int:
    """``logcat [-c] [-d] [-s] [-t N] [-v FORMAT] [-b BUF] [TAG:PRIO...]``; follows by default."""
    dump, fmt, tail, filters = False, "threadtime", None, {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-c":
            LOGBUF.write_text("")
            return 0
        if arg == "-d":
            dump = True
        elif arg == "-s":
            filters.setdefault("*", "S")
        elif arg in ("-v", "-b", "-t", "-T") and i + 1 < len(args):
            value = args[i + 1]
            if arg == "-v":
                fmt = value if value != "color" else fmt
            elif arg in ("-t", "-T"):
                tail, dump = int(value), dump or arg == "-t"
            i += 1
        elif arg.startswith("-v") or arg.startswith("-b"):
            fmt = arg[2:] if arg.startswith("-v") else fmt
        elif not arg.startswith("-"):  # A filterspec: TAG[:PRIORITY]
            tag, colon, prio = arg.rpartition(":")
            tag, prio = (tag, prio) if colon else (arg, "V")
            filters[tag] = prio[:1].upper() or "V"
        i += 1
    lines = LOGBUF.read_text().splitlines() if LOGBUF.exists() else []
    if tail is not None:
        lines = lines[-tail:]
    printed = _emit(lines, fmt, filters, header=True)
    if dump:
        return 0
    offset = LOGBUF.stat().st_size if LOGBUF.exists() else 0
    while True:  # Follow the buffer until the caller kills us, like logcat without -d.
        time.sleep(0.2)
        size = LOGBUF.stat().st_size if LOGBUF.exists() else 0
        if size < offset:  # Cleared by logcat -c: start from the top.
            offset = 0
        if size > offset:
            with open(LOGBUF) as buffer:
                buffer.seek(offset)
                chunk = buffer.read()
            complete = chunk.rpartition("\n")[0]
            offset += len(complete.encode()) + (1 if complete else 0)
            printed |= _emit(complete.splitlines(), fmt, filters, header=not printed)


def _emit(lines: list[str], fmt: str, filters: dict[str, str], header: bool) -> bool:
    out = []
    for line in lines:
        match = _LINE.match(line)
        if match and _wanted(filters, match.group(5), match.group(4)):
            out.append(_format(match, fmt))
    if out:
        if header and fmt != "raw":
            out.insert(0, "--------- beginning of main")
        sys.stdout.write("\n".join(out) + "\n")
        sys.stdout.flush()
    return bool(out)


def _read(path: Path, default: str = "") -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return default


def _battery(args: list[str]) -> int:
    overrides = json.loads(_read(BATTERY_OVERRIDES, "{}") or "{}")
    if args[:1] == ["reset"] or args[:1] == ["unplug"] or args[:1] == ["set"]:
        if args[0] == "reset":
            overrides = {}
        elif args[0] == "unplug":
            overrides.update(ac="0", usb="0", wireless="0")
        elif len(args) == 3:
            overrides[args[1]] = args[2]
        BATTERY_OVERRIDES.parent.mkdir(parents=True, exist_ok=True)
        BATTERY_OVERRIDES.write_text(json.dumps(overrides))
        return 0
    status_codes = {"Unknown": 1, "Charging": 2, "Discharging": 3, "Not charging": 4, "Full": 5}
    health_codes = {"Unknown": 1, "Good": 2, "Overheat": 3, "Dead": 4, "Cold": 7}
    bat = POWER / "battery"
    values = {
        "ac": _read(POWER / "ac/online", "0"), "usb": _read(POWER / "usb/online", "0"),
        "wireless": "0", "counter": _read(bat / "charge_counter", "0"),
        "status": str(status_codes.get(_read(bat / "status"), 1)),
        "health": str(health_codes.get(_read(bat / "health"), 1)),
        "present": _read(bat / "present", "1"), "level": _read(bat / "capacity", "0"),
        "voltage": str(int(_read(bat / "voltage_now", "0") or 0) // 1000),
        "temp": _read(bat / "temp", "0"), "technology": _read(bat / "technology", "Li-ion"),
    }
    values.update(overrides)

    def flag(key: str) -> str:
        return "true" if values[key] not in ("0", "false") else "false"

    plugged = flag("ac") == "true" or flag("usb") == "true"
    print("Current Battery Service state:")
    if overrides:
        print("  (UPDATES STOPPED -- use 'reset' to restart)")
    print(f"  AC powered: {flag('ac')}\n  USB powered: {flag('usb')}\n"
          f"  Wireless powered: {flag('wireless')}\n"
          f"  Max charging current: {500000 if plugged else 0}\n"
          f"  Max charging voltage: {5000000 if plugged else 0}\n"
          f"  Charge counter: {values['counter']}\n  status: {values['status']}\n"
          f"  health: {values['health']}\n  present: {flag('present')}\n"
          f"  level: {values['level']}\n  scale: 100\n  voltage: {values['voltage']}\n"
          f"  temperature: {values['temp']}\n  technology: {values['technology']}")
    return 0


def _thermalservice(args: list[str]) -> int:
    kinds = {"cpu": 0, "gpu": 1, "battery": 2, "skin": 3}
    lines = []
    for zone in sorted(THERMAL.glob("thermal_zone*"), key=lambda p: int(p.name[12:])):
        name = _read(zone / "type")
        kind = next((v for k, v in kinds.items() if name.startswith(k)), -1)
        celsius = int(_read(zone / "temp", "0") or 0) / 1000
        lines.append(f"\tTemperature{{mValue={celsius:.1f}, mType={kind}, mName={name}, "
                     f"mStatus=0}}")
    print("IsStatusOverride: false\nThermal Status: 0\nHAL Ready: true\n"
          "Current temperatures from HAL:\n" + "\n".join(lines))
    return 0


def dumpsys(args: list[str]) -> int:
    """``dumpsys battery`` (and its ``set``/``unplug``/``reset``), ``dumpsys thermalservice``."""
    services = {"battery": _battery, "thermalservice": _thermalservice}
    if not args or args[0] == "-l":
        print("Currently running services:\n" + "\n".join(f"  {s}" for s in services))
        return 0
    if args[0] not in services:
        print(f"Can't find service: {args[0]}", file=sys.stderr)
        return 0
    return services[args[0]](args[1:])


def su(args: list[str]) -> int:
    """``su [root|0] [-c CMD | CMD...]``: the sandbox already runs as this user, so just run."""
    if args and args[0] in ("root", "0", "-"):
        args = args[1:]
    if args[:1] == ["-c"]:
        os.execv("/bin/sh", ["sh", "-c", " ".join(args[1:])])
    if args:
        os.execvp(args[0], args)
    os.execv("/bin/sh", ["sh"])
    return 1


def main(argv: list[str]) -> int:
    """Dispatch on the name the program was called by."""
    name = os.path.basename(argv[0])
    if name == "toolbox" and len(argv) > 1:
        name, argv = argv[1], argv[1:]
    tools = {"getprop": getprop, "setprop": setprop, "log": log, "logcat": logcat,
             "dumpsys": dumpsys, "su": su}
    if name not in tools:
        print(f"toolbox: unknown tool {name!r}", file=sys.stderr)
        return 127
    try:
        return tools[name](argv[1:])
    except (BrokenPipeError, KeyboardInterrupt):
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
