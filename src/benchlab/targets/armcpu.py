"""An ARM CPU as its kernel shows it to a program: the hwcap words and MIDR_EL1.

On a phone, ``/proc/cpuinfo`` may be cut down by the vendor; under QEMU's user-mode emulator
it is the host's file (an x86-64 CPU) while the program runs on the emulated core. The auxiliary
vector's ``AT_HWCAP``/``AT_HWCAP2`` and the ``MIDR_EL1`` register (readable from user space
where the kernel sets ``HWCAP_CPUID``) come from the CPU the program runs on, emulated or not.
Bit names are Linux's (``arch/arm64/include/uapi/asm/hwcap.h``), as ``/proc/cpuinfo`` prints
them; part numbers are ARM's (the cores' technical reference manuals).

Two readings, for two moments, in the same names. Before a plan exports or pushes anything no
program of benchlab's is on the device yet: the planner reads the ``Features`` line
(:data:`ARM_FEATURES_COMMAND`, one shell round trip) to leave out a runner whose library the
CPU cannot run. A job's runner then reads its own hwcap words and MIDR_EL1 (:func:`arm_cpu`),
which the result records: the truth where the file is cut down or, under emulation, another
CPU's. Where the file lists nothing, the plan refuses nothing and the job's first command
checks the feature itself.
"""

from __future__ import annotations

from typing import Any

from benchlab.targets.environment import int8_instructions

__all__ = ["ARM_FEATURES_COMMAND", "arm_cpu", "hwcap_features", "parse_arm_features"]

_HWCAP = ("fp", "asimd", "evtstrm", "aes", "pmull", "sha1", "sha2", "crc32", "atomics", "fphp",
          "asimdhp", "cpuid", "asimdrdm", "jscvt", "fcma", "lrcpc", "dcpop", "sha3", "sm3",
          "sm4", "asimddp", "sha512", "sve", "asimdfhm", "dit", "uscat", "ilrcpc", "flagm",
          "ssbs", "sb", "paca", "pacg")
_HWCAP2 = ("dcpodp", "sve2", "sveaes", "svepmull", "svebitperm", "svesha3", "svesm4", "flagm2",
           "frint", "svei8mm", "svef32mm", "svef64mm", "svebf16", "i8mm", "bf16", "dgh", "rng",
           "bti", "mte")
#: ARM Ltd. (implementer 0x41) part numbers → core names.
_ARM_PARTS = {0xD03: "Cortex-A53", 0xD04: "Cortex-A35", 0xD05: "Cortex-A55",
              0xD07: "Cortex-A57", 0xD08: "Cortex-A72", 0xD09: "Cortex-A73",
              0xD0A: "Cortex-A75", 0xD0B: "Cortex-A76", 0xD0C: "Neoverse-N1",
              0xD0D: "Cortex-A77", 0xD40: "Neoverse-V1", 0xD41: "Cortex-A78",
              0xD44: "Cortex-X1", 0xD46: "Cortex-A510", 0xD47: "Cortex-A710",
              0xD48: "Cortex-X2", 0xD49: "Neoverse-N2", 0xD4F: "Neoverse-V2"}


#: A shell command printing the ``Features`` line of an ARM CPU's ``/proc/cpuinfo`` (nothing
#: where there is none: an x86-64 CPU's file, or one a vendor cut down).
ARM_FEATURES_COMMAND = "grep -m1 '^Features' /proc/cpuinfo 2>/dev/null"


def parse_arm_features(text: str) -> frozenset[str] | None:
    """The features an ARM ``Features`` line names (:data:`ARM_FEATURES_COMMAND`'s output);
    None where there was no such line, so nothing is known."""
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "Features":
            return frozenset(value.split())
    return None


def hwcap_features(hwcap: int, hwcap2: int = 0) -> list[str]:
    """The feature names ``/proc/cpuinfo`` would print for these hwcap words."""
    names = [name for bit, name in enumerate(_HWCAP) if hwcap >> bit & 1]
    return names + [name for bit, name in enumerate(_HWCAP2) if hwcap2 >> bit & 1]


def arm_cpu(reading: dict[str, Any]) -> dict[str, Any]:
    """A program's own reading of its CPU (``{"arch", "hwcap", "hwcap2", "midr"?}``) as facts:
    the features, the core (from MIDR_EL1 where readable) and the int8 instructions it has."""
    facts: dict[str, Any] = {"arch": reading.get("arch")}
    if reading.get("arch") != "aarch64":
        return facts
    features = hwcap_features(int(reading.get("hwcap", 0)), int(reading.get("hwcap2", 0)))
    facts["features"] = features
    facts["int8_instructions"] = int8_instructions(features)
    midr = reading.get("midr")
    if midr is None:
        facts["core"] = None
        facts["unread"] = ["MIDR_EL1 (the kernel does not let programs read it: no cpuid hwcap)"]
        return facts
    midr = int(midr)
    implementer, part = midr >> 24 & 0xFF, midr >> 4 & 0xFFF
    facts["midr"] = f"0x{midr:08x}"
    if implementer == 0x41:
        facts["core"] = _ARM_PARTS.get(part, f"ARM part 0x{part:03x}")
    elif implementer == 0:  # "reserved for software use": an emulator's own model
        facts["core"] = f"a software-defined core (implementer 0x00, part 0x{part:03x})"
    else:
        facts["core"] = f"implementer 0x{implementer:02x} part 0x{part:03x}"
    return facts
