"""Record real A/A interleaved sessions of the spin work loop, for the interleaved replays.

Each session runs through benchlab's own code exactly as ``benchlab compare`` runs one session
of a job (``benchlab.ab.interleave.session_runner``, which calls ``inprocess_session`` or
``lockstep_session``): session k gets a new balanced random AB/BA order of ``--blocks`` blocks,
``--warmup`` warm-up calls per side first, and the control is loaded (in-process) or started
(lock-step) first when k is even, the treatment when k is odd. Both sides run the same code:

- ``in-process``: the spin runner backend (``tests/ab/spin_backend.py``, the loop of
  ``examples/ab/spin.py``) with slowdown 0 on both sides, two configurations in one fresh
  runner process per session;
- ``lockstep``: two live ``examples/ab/spin.py`` processes (``--program c``: the compiled
  ``spin.c``, written to ``recorded_lockstep_c.json``) stepped one iteration at a time.

Kept per session, in running order: both sides' call times (µs) in block order, the block
order (``c`` where the control's call came first) and the side loaded/started first; and,
where the session measured them (in-process), each call's CPU time (µs). One session per
line, like ``record.py``.

    .venv/bin/python bench/detector/record_interleaved.py                   # both modes, 200
    .venv/bin/python bench/detector/record_interleaved.py --mode in-process --sessions 200
    .venv/bin/python bench/detector/record_interleaved.py --smoke --out-dir /tmp
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # bench/_common.py: the machine description

from _common import machine
from spinjobs import build_spin_c, program_jobs, program_side, python_program, runner_pair

from benchlab.ab.interleave import session_runner
from benchlab.schema.comparison import Mode
from benchlab.ab.sides import side_job
from benchlab.spec.artifacts import ArtifactCache
from benchlab.targets.host import HostTarget

OUT = {Mode.IN_PROCESS: HERE / "recorded_inprocess.json",
       Mode.LOCKSTEP: HERE / "recorded_lockstep.json"}
SEED = 20261123  # the block orders: session k uses balanced_orders(blocks, SEED * 100_003 + k)


def cpu_seconds() -> float:
    """CPU time of this process and its finished children so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _runner(mode: Mode, tmp: Path, blocks: int, warmup: int, program: str):
    """benchlab's session runner for an A/A pair of the spin loop in ``mode``."""
    cache = ArtifactCache(tmp / "cache")
    if mode is Mode.IN_PROCESS:
        pair = runner_pair(tmp, 0.0, 0.0, blocks, warmup)
        labels, maps = ("A", "A'"), ({}, {})
    else:
        (base,) = program_jobs(tmp, blocks, warmup)
        sides = (program_side("A", program, 0.0), program_side("A'", program, 0.0))
        pair = (side_job(base, sides[0], "control"), side_job(base, sides[1], "treatment"))
        labels = (sides[0].label, sides[1].label)
        maps = (dict(sides[0].string_map), dict(sides[1].string_map))
    return session_runner(mode, pair, labels, maps, HostTarget(), cache, seed=SEED)


def record(mode: Mode, sessions: int, blocks: int, warmup: int, program: str) -> dict[str, Any]:
    """Run ``sessions`` A/A sessions in ``mode`` one after another; return the recording."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-interleaved-") as tmp:
        runner = _runner(mode, Path(tmp), blocks, warmup, program)
        started, cpu = time.perf_counter(), cpu_seconds()
        for index in range(sessions):
            session = runner(index)
            row = {
                "control_us": [round(1e3 * v, 3) for v in session.control],
                "treatment_us": [round(1e3 * v, 3) for v in session.treatment],
                "order": session.order, "first": session.loaded_first,
            }
            # The calls' CPU times, where the session measured them (in-process only).
            for side in ("control", "treatment"):
                cpu_ms = getattr(session, f"{side}_cpu", ())
                if cpu_ms:
                    row[f"{side}_cpu_us"] = [round(1e3 * v, 3) for v in cpu_ms]
            rows.append(row)
        wall, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    what = ("the spin runner backend (tests/ab/spin_backend.py: spin.py's loop, 20000 steps, "
            "slowdown 0) as both sides of one fresh runner process per session"
            if mode is Mode.IN_PROCESS else
            f"two live processes of `{program} --slowdown 0`, stepped in turn")
    return {
        "description": (
            f"A/A {mode.value} sessions: {what}; "
            f"warmup {warmup} per side, {blocks} blocks per session, a new balanced random "
            "AB/BA order per session, the side loaded/started first alternating (c at even "
            "sessions). Per session: both sides' call times (us) in block order, the order "
            "(c: the control's call came first) and the side loaded/started first."
        ),
        "mode": mode.value,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "unit": "us",
        "seed": SEED,
        "warmup": warmup,
        "blocks": blocks,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "sessions": rows,
    }


def write(recording: dict[str, Any], out: Path) -> None:
    """One session per line keeps the file small and its diffs readable."""
    rows = ",\n".join("    " + json.dumps(row) for row in recording["sessions"])
    head = json.dumps({k: v for k, v in recording.items() if k != "sessions"}, indent=2)
    out.write_text(head[:-2] + ',\n  "sessions": [\n' + rows + "\n  ]\n}\n")


def main(argv: list[str] | None = None) -> None:
    """Parse the options, record each mode asked for, write its JSON, print a summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["both", Mode.IN_PROCESS.value, Mode.LOCKSTEP.value],
                        default="both")
    parser.add_argument("--sessions", type=int, default=None, help="default 200, 4 with --smoke")
    parser.add_argument("--blocks", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--program", choices=["py", "c"], default="py",
                        help="lock-step program: examples/ab/spin.py or the compiled spin.c")
    parser.add_argument("--out-dir", type=Path, default=None,
                        help="default bench/detector (with --smoke: nothing is written there)")
    parser.add_argument("--smoke", action="store_true", help="4 sessions: keeps it working")
    args = parser.parse_args(argv)
    sessions = args.sessions or (4 if args.smoke else 200)
    if args.smoke and args.out_dir is None:
        raise SystemExit("--smoke needs --out-dir (the kept recordings are not overwritten)")
    modes = ([Mode.IN_PROCESS, Mode.LOCKSTEP] if args.mode == "both" else [Mode(args.mode)])
    with tempfile.TemporaryDirectory(prefix="bench-spin-c-") as build:
        program = build_spin_c(Path(build)) if args.program == "c" else python_program()
        for mode in modes:
            recording = record(mode, sessions, args.blocks, args.warmup, program)
            if mode is Mode.LOCKSTEP:
                recording["program"] = "spin.c" if args.program == "c" else "spin.py"
            name = OUT[mode].name
            if mode is Mode.LOCKSTEP and args.program == "c":
                name = name.replace(".json", "_c.json")  # recorded_lockstep_c.json
            out = (args.out_dir / name) if args.out_dir else HERE / name
            write(recording, out)
            ratios = [statistics.median(math.log(t / c) for c, t in
                                        zip(r["control_us"], r["treatment_us"], strict=True))
                      for r in recording["sessions"]]
            print(f"{mode.value}: {sessions} sessions in {recording['wall_s']} s "
                  f"(cpu {recording['cpu_s']} s); session estimates SD "
                  f"{100 * statistics.stdev(ratios):.2f}% -> {out}")


if __name__ == "__main__":
    main()
