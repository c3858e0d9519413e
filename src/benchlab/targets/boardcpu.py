"""A Linux board's CPU as the ``ssh`` target's identity script reads it, x86-64 or ARM.

On an x86-64 board ``/proc/cpuinfo`` names the CPU and its ``flags``. On an ARM board it is a
poorer witness: it has no model name (only part numbers), vendors trim it, and under QEMU's
user-mode emulator it is the *host's* file (an x86-64 CPU) while programs run on the emulated
core. So on ARM the script also reads what the kernel gives every program: the auxiliary
vector (``AT_HWCAP``/``AT_HWCAP2``, through ``od`` on ``/proc/self/auxv``, which an emulator
answers for the emulated core) and ``MIDR_EL1`` from sysfs. What cannot be read is said in
``unread``, never guessed.

Emulation is recognised two ways: the shell's own executable is an emulator (``qemu-*``, as
``binfmt_misc`` starts it), or ``uname -m`` says aarch64 while ``/proc/cpuinfo`` describes an
x86-64 CPU.
"""

from __future__ import annotations

from typing import Any

from benchlab.schema.result import EnvKey
from benchlab.targets.armcpu import arm_cpu
from benchlab.targets.environment import cpu_features, int8_instructions

__all__ = ["CPU_SCRIPT", "board_cpu"]

_AT_HWCAP, _AT_HWCAP2 = 16, 26

#: Shell lines printing ``name value`` facts about the CPU (POSIX sh, coreutils or BusyBox).
CPU_SCRIPT = r"""
echo "shell_exe $(readlink /proc/$$/exe 2>/dev/null)"
sed -n '/^flags[[:space:]]*:/{s/^[^:]*: *//;s/^/cpu_flags /;p;q;}' /proc/cpuinfo 2>/dev/null
sed -n '/^Features[[:space:]]*:/{s/^[^:]*: *//;s/^/cpu_flags /;p;q;}' /proc/cpuinfo 2>/dev/null
grep -q '^vendor_id' /proc/cpuinfo 2>/dev/null && echo "cpuinfo_x86 1"
if [ "$(uname -m)" = aarch64 ]; then
  echo "auxv $(od -An -tx8 -v /proc/self/auxv 2>/dev/null | tr -s ' \n' '  ')"
  m=/sys/devices/system/cpu/cpu0/regs/identification/midr_el1
  [ -r $m ] && echo "midr $(cat $m)"
fi
"""


def _auxv(text: str) -> dict[int, int]:
    words = [int(word, 16) for word in text.split()]
    return {words[i]: words[i + 1] for i in range(0, len(words) - 1, 2)}


def board_cpu(facts: dict[str, str]) -> dict[str, Any]:
    """The CPU facts of a board from :data:`CPU_SCRIPT`'s lines (``facts``: name → value,
    with ``machine`` and ``cpu_model`` from the identity script): features, int8 instructions,
    the ARM core, emulation, and what could not be read."""
    machine = facts.get("machine", "")
    unread: list[str] = []
    info: dict[str, Any] = {}
    emulator = facts.get("shell_exe", "")
    host_cpuinfo = machine == "aarch64" and "cpuinfo_x86" in facts
    if "qemu" in emulator.rsplit("/", 1)[-1]:
        info[EnvKey.EMULATED] = (f"QEMU user mode ({emulator}): latency under emulation says "
                                 "nothing about any hardware; counts and answers do")
    elif host_cpuinfo:
        info[EnvKey.EMULATED] = ("user-mode emulation (aarch64 programs, an x86-64 "
                                 "/proc/cpuinfo): latency under emulation says nothing about "
                                 "any hardware; counts and answers do")
    if machine != "aarch64":
        features = cpu_features(f"flags: {facts.get('cpu_flags', '')}")
        info[EnvKey.CPU_FEATURES] = features
        info[EnvKey.INT8_INSTRUCTIONS] = int8_instructions(features)
        return info
    if host_cpuinfo:
        unread.append("/proc/cpuinfo (it shows the emulator's x86-64 host): the CPU is read "
                      "from the hwcaps and MIDR_EL1 instead")
        info[EnvKey.CPU_MODEL] = None
    vector = _auxv(facts.get("auxv", ""))
    if _AT_HWCAP not in vector:
        unread.append("the hwcaps (/proc/self/auxv could not be read)")
        features = cpu_features(f"flags: {facts.get('cpu_flags', '')}")
        info[EnvKey.CPU_FEATURES] = features
        info[EnvKey.INT8_INSTRUCTIONS] = int8_instructions(features)
        return {**info, "unread": unread}
    midr = facts.get("midr")
    arm = arm_cpu({"arch": "aarch64", "hwcap": vector[_AT_HWCAP],
                   "hwcap2": vector.get(_AT_HWCAP2, 0),
                   "midr": int(midr, 16) if midr else None})
    if midr is None:
        unread.append("MIDR_EL1 (no /sys/devices/system/cpu/cpu0/regs/identification/"
                      "midr_el1): the core is not named")
    info[EnvKey.CPU_FEATURES] = cpu_features(f"flags: {' '.join(arm['features'])}")
    info[EnvKey.INT8_INSTRUCTIONS] = arm["int8_instructions"]
    info["cpu_core"] = arm.get("core")
    if arm.get("midr"):
        info["midr"] = arm["midr"]
    if arm.get("core"):  # an ARM /proc/cpuinfo has part numbers, not a model name
        info[EnvKey.CPU_MODEL] = arm["core"]
    return {**info, "unread": unread} if unread else info
