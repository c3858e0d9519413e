"""The recorded int8 accuracy of the zoo's quantizers, and the check that it has not moved.

``int8_baseline.json`` holds, for a few (model, format) pairs, the SQNR in dB of the int8 file
against the fp32 reference, the quantizer that made it and the versions of the packages that
decide what the exporter writes (``benchlab.exporting.formats.ExportFormat.packages``). Two checks:

* a floor: what the locked versions reach on any x86-64 CPU. ONNX Runtime's int8 files use
  7-bit weights (``benchlab.exporting.quantize.REDUCE_RANGE``), so their integer arithmetic cannot
  saturate on CPUs without VNNI and gives the same result on every x86-64 CPU;
* drift: more than ``tolerance_db`` from the recorded figure fails, naming the package versions
  that differ from the recorded ones. A runtime upgrade that changes quantized accuracy is news
  for a benchmarking platform: look at it, then record the new figures with
  ``pytest tests/zoo/test_export.py --update-int8-baseline``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import machine_facts

from benchlab.exporting.formats import format_of

__all__ = ["BASELINE_PATH", "check_int8_sqnr", "installed_versions", "load_baseline"]

BASELINE_PATH = Path(__file__).parent / "data" / "int8_baseline.json"


def load_baseline(path: Path = BASELINE_PATH) -> dict[str, Any]:
    """The recorded figures, floors and versions."""
    return json.loads(path.read_text())


def installed_versions(fmt: str) -> dict[str, str | None]:
    """The versions of the packages that decide what ``fmt``'s exporter writes, as installed."""
    return {name: machine_facts.version(name) for name in format_of(fmt).packages}


def check_int8_sqnr(
    model: str, fmt: str, sqnr: float, update: bool = False, path: Path = BASELINE_PATH
) -> None:
    """Fail when ``sqnr`` is below the pair's floor or moved more than the tolerance.

    With ``update`` the measured figure and today's versions are written to the baseline
    instead (the floor still applies).
    """
    baseline = load_baseline(path)
    entry = baseline["entries"][f"{model}/{fmt}"]
    installed = installed_versions(fmt)
    assert sqnr >= entry["floor_db"], (
        f"int8 {model}/{fmt}: SQNR {sqnr:.2f} dB is below its floor of {entry['floor_db']} dB "
        f"({entry['quantizer']}; installed {installed})"
    )
    if update:
        entry["sqnr_db"] = round(sqnr, 2)
        entry["versions"] = installed
        path.write_text(json.dumps(baseline, indent=2, sort_keys=True) + "\n")
        return
    moved = sqnr - entry["sqnr_db"]
    if abs(moved) > baseline["tolerance_db"]:
        changed = {
            name: f"{entry['versions'].get(name)} -> {now}"
            for name, now in installed.items() if entry["versions"].get(name) != now
        }
        cause = (f"these packages changed since it was recorded: {changed}" if changed
                 else "no exporter package changed, so the quantizer code or the CPU did")
        raise AssertionError(
            f"int8 {model}/{fmt}: SQNR moved {moved:+.2f} dB, from {entry['sqnr_db']} to "
            f"{sqnr:.2f} dB (tolerance {baseline['tolerance_db']} dB); {cause}. A change in "
            f"quantized accuracy is news: check it, then record it with "
            f"`pytest tests/zoo/test_export.py --update-int8-baseline`."
        )
