"""Duet mode, measured: both sides at once on different CPUs, against lock-step and in-process.

Duet benchmarking (Bulej et al. 2020) runs the two sides at the same time, one per CPU, so
that whatever disturbs the machine disturbs both. Here each session starts two processes of
the compiled examples/ab/spin.c together, pinned with ``taskset`` to CPU 0 and CPU 1 (the
sides swap CPUs from one session to the next), each running its own warm-up and timed loop;
iteration ``i`` of one side is paired with iteration ``i`` of the other (they run at the same
moment: same work, started together), and the session's estimate is the median of those
log-ratios, as in the interleaved modes. A/A sessions give the noise of one estimate; sessions
with ``--slowdown`` on one side show whether a known change comes out whole.

The figure to beat is lock-step's on the same program (``recorded_lockstep_c.json``): the SD
of one session's estimate. Duet is worth shipping only if it is lower here.

    .venv/bin/python bench/detector/duet.py                      # writes duet.json
    .venv/bin/python bench/detector/duet.py --sessions 4 --out /tmp/duet.json   # smoke
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # bench/_common.py: the machine description
sys.path.insert(0, str(HERE))

from _common import provenance
from sources import robust_sd
from spinjobs import build_spin_c

from benchlab.protocol.lines import parse_output
from benchlab.schema.units import convert

OUT = HERE / "duet.json"
ITERATIONS, WARMUP = 30, 3


def _times(stdout: str) -> list[float]:
    """The timed iterations (µs) of one spin.c run, in order."""
    parsed = parse_output(stdout)
    return [convert(s.value, s.unit, "us") for s in parsed.samples if s.metric == "latency"]


def session(binary: str, cpus: tuple[int, int], slowdown: float) -> float:
    """One duet session: control on ``cpus[0]``, treatment on ``cpus[1]``, started together;
    the median log-ratio of their same-index iterations."""
    def start(cpu: int, extra: list[str]) -> subprocess.Popen[str]:
        argv = ["taskset", "-c", str(cpu), binary, "--warmup", str(WARMUP), "--iter",
                str(ITERATIONS), *extra]
        return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)

    control = start(cpus[0], [])
    treatment = start(cpus[1], ["--slowdown", str(slowdown)] if slowdown else [])
    c_out, _ = control.communicate(timeout=120)
    t_out, _ = treatment.communicate(timeout=120)
    c, t = _times(c_out), _times(t_out)
    if len(c) != ITERATIONS or len(t) != ITERATIONS:
        raise SystemExit(f"spin.c printed {len(c)} and {len(t)} iterations, not {ITERATIONS}")
    return statistics.median(math.log(b / a) for a, b in zip(c, t, strict=True))


def _spread(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values)
    return {"sd": float(np.std(arr, ddof=1)), "robust_sd": robust_sd(arr),
            "mean": float(arr.mean()), "n": len(values)}


def main() -> None:
    """Run the sessions, compare with lock-step's recorded noise, write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--slowdown", type=float, default=0.02)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if (os.cpu_count() or 1) < 2:
        raise SystemExit("duet needs two CPUs")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-duet-") as tmp:
        binary = build_spin_c(Path(tmp))
        swaps = [(0, 1) if i % 2 == 0 else (1, 0) for i in range(args.sessions)]
        aa = [session(binary, cpus, 0.0) for cpus in swaps]
        slow = [session(binary, cpus, args.slowdown) for cpus in swaps[: max(args.sessions // 4,
                                                                              2)]]
    wall = time.perf_counter() - started
    lockstep = json.loads((HERE / "results_interleaved.json").read_text())["modes"].get(
        "lockstep (spin.c)", {}).get("noise", {})
    record = {
        **provenance("duet"),
        "iterations": ITERATIONS, "warmup": WARMUP, "wall_s": round(wall, 1),
        "duet_aa_session_estimate": _spread(aa),
        "duet_slowdown": {"slowdown": args.slowdown, **_spread(slow),
                          "change": math.expm1(statistics.median(slow))},
        "lockstep_c_session_estimate": {"sd": lockstep.get("session_estimate_sd"),
                                        "robust_sd": lockstep.get("session_estimate_sd_robust"),
                                        "date": lockstep.get("date")},
    }
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    a, s = record["duet_aa_session_estimate"], record["duet_slowdown"]
    print(f"duet A/A: SD {a['sd'] * 100:.2f}% (robust {a['robust_sd'] * 100:.2f}%), "
          f"mean {a['mean'] * 100:+.2f}%, n={a['n']}")
    print(f"duet {args.slowdown:.0%} slower: median change {s['change'] * 100:+.2f}%, SD "
          f"{s['sd'] * 100:.2f}%, n={s['n']}")
    if lockstep:
        print(f"lock-step spin.c (recorded {lockstep.get('date')}): SD "
              f"{lockstep['session_estimate_sd'] * 100:.2f}% (robust "
              f"{lockstep['session_estimate_sd_robust'] * 100:.2f}%)")
    print(f"{record['wall_s']} s -> {args.out}")


if __name__ == "__main__":
    main()
