"""Record real per-process timings of examples/ab/spin.py once, for the detector's replays.

Each of ``--processes`` fresh processes runs through benchlab's own harness exactly as one side
of ``benchlab compare`` runs it (the spin spec, the generic framework, ``side_job`` with
``repeat=1``), so a recorded process is what the A/B protocol would have observed on this
machine at that moment. Kept per process, in the order they ran: every timed iteration (µs) and
their median, the protocol's observation. The recording is written to
``bench/detector/recorded_spin.json`` and read by ``evaluate.py``; it is made once and kept in
the repository so that every evaluation replays the same noise.

    .venv/bin/python bench/detector/record.py --processes 200
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))  # bench/_common.py: the machine description

from _common import machine

from benchlab.ab.sides import Side, side_job
from benchlab.api import plan_sweep
from benchlab.spec.artifacts import ArtifactCache
from benchlab.harness.jobrun import run_job
from benchlab.plugins import load_target

SPEC = REPO / "examples" / "ab" / "spin.yaml"
PROGRAM = REPO / "examples" / "ab" / "spin.py"
OUT = HERE / "recorded_spin.json"
KEY = "NET latency"


def record(processes: int) -> dict:
    """Run ``processes`` fresh spin.py processes one after another; return the recording."""
    side = Side("spin", string_map={"program": f"{sys.executable} {PROGRAM}"})
    target = load_target("host")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-detector-") as tmp:
        (job,) = plan_sweep([SPEC], cache_dir=Path(tmp) / "cache").jobs
        job = side_job(job, side, "control")
        cache = ArtifactCache(Path(tmp) / "cache")
        started = time.perf_counter()
        for index in range(processes):
            result = run_job(job, target, cache, string_map=side.string_map)
            if not result.ok:
                raise SystemExit(f"process {index} failed: {result.status.value}: {result.error}")
            samples = sorted((s for s in result.samples if s.key == KEY), key=lambda s: s.index)
            values = [round(s.value, 3) for s in samples]
            rows.append({"median_us": statistics.median(values), "iterations_us": values})
        wall = time.perf_counter() - started
    return {
        "description": (
            "Fresh processes of examples/ab/spin.py (warmup 3, 30 timed iterations each) run "
            "one after another through benchlab's harness, as one side of `benchlab compare` "
            "runs them; per process, in running order: every timed iteration and their median."
        ),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "unit": "us",
        "wall_s": round(wall, 1),
        "processes": rows,
    }


def main() -> None:
    """Parse the options, record, write the JSON and print a one-line summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=200)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    recording = record(args.processes)
    # One process per line keeps the file small and its diffs readable.
    rows = ",\n".join("    " + json.dumps(row) for row in recording["processes"])
    head = json.dumps({k: v for k, v in recording.items() if k != "processes"}, indent=2)
    args.out.write_text(head[:-2] + ',\n  "processes": [\n' + rows + "\n  ]\n}\n")
    medians = [row["median_us"] for row in recording["processes"]]
    print(f"{len(medians)} processes in {recording['wall_s']} s; medians "
          f"{min(medians):.0f}..{max(medians):.0f} us (median {statistics.median(medians):.0f})"
          f" -> {args.out}")


if __name__ == "__main__":
    main()
