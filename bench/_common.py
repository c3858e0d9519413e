"""Shared helpers of benchlab's own benchmarks: repeats, machine description, result files.

Every script in ``bench/`` measures one figure of ``docs/performance.md``. Each prints a small
table and writes ``bench/results/<name>.json`` with the figure's min/median/max over repeats,
the command that produced it, the date and the machine. ``--smoke`` runs a tiny version so CI
keeps the scripts working; smoke numbers mean nothing and are never compared with anything.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
#: A few quick test files, for the smoke runs of the scripts that run pytest: one run proves
#: the plumbing, not the suite.
QUICK_TESTS = ("tests/test_process_state.py", "tests/stats/test_stats.py")


def parse_args(
    description: str,
    argv: Sequence[str] | None = None,
    *,
    repeats: int | None = 5,
    repeats_help: str = "independent repeats per figure",
    extra: Callable[[argparse.ArgumentParser], None] | None = None,
) -> argparse.Namespace:
    """The options every bench script takes: ``--smoke``, ``--repeats`` and ``--out``.

    ``repeats`` and ``repeats_help`` set the default and the help of ``--repeats`` for a
    script whose repeats mean something more specific; ``extra`` adds the script's own options.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--smoke", action="store_true", help="tiny run for CI; numbers mean nothing")
    parser.add_argument("--repeats", type=int, default=repeats, help=repeats_help)
    parser.add_argument("--out", type=Path, default=None, help="where to write the JSON result")
    if extra is not None:
        extra(parser)
    return parser.parse_args(argv)


def spread(values: Sequence[float]) -> dict[str, float]:
    """min / median / max of repeated measurements of one figure."""
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "os": platform.platform(),
        "python": platform.python_version(),
    }


def provenance(name: str) -> dict[str, Any]:
    """Where a result file's figures come from: its name, the command, the date, the machine."""
    return {
        "name": name,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
    }


def write_result(name: str, args: argparse.Namespace, figures: dict[str, Any]) -> Path:
    """Write one script's figures with their provenance; smoke runs go to a ``smoke-`` file."""
    out = args.out or RESULTS / (f"smoke-{name}.json" if args.smoke else f"{name}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        **provenance(name),
        "smoke": bool(args.smoke),
        "repeats": args.repeats,
        "figures": figures,
    }
    out.write_text(json.dumps(record, indent=2) + "\n")
    return out
