"""A stand-in benchmark for the lock-step tests: it steps, or misbehaves, as its flags say.

``--mode step`` speaks the step protocol through ``benchlab.protocol.step`` and reports ``--value-us``
for every step (exactly, so a session's numbers are known in advance); ``--log`` appends
``NAME ready`` and ``NAME step I`` lines so a test can read back the order the steps ran in;
``--crash-at N`` exits with status 3 at step N. ``--mode own-loop`` ignores the protocol and
prints five metric lines; ``--mode ready-then-loop`` prints the ready line and then its own
ten metric lines without reading stdin; ``--mode silent`` prints nothing and sleeps, deaf to
SIGTERM. ``--peer-pid-file F`` reports, instead of ``--value-us``, the state of the process
whose pid is in F at each step: 1000 µs when it is stopped (parked), 2000 when it runs or
sleeps, 3000 before F exists, 4000 once that process is gone.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from benchlab.protocol.step import steps


def metric(value_us: float) -> str:
    line = {"type": "NET", "metric": "latency", "unit": "us", "value": value_us}
    return "BENCHLAB_METRIC " + json.dumps(line)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="x")
    parser.add_argument("--mode", default="step",
                        choices=("step", "own-loop", "ready-then-loop", "silent"))
    parser.add_argument("--value-us", type=float, default=1000.0)
    parser.add_argument("--log", type=Path)
    parser.add_argument("--pid-file", type=Path)
    parser.add_argument("--crash-at", type=int)
    parser.add_argument("--peer-pid-file", type=Path)
    parser.add_argument("--warmup", type=int, default=0)  # the spec's own flags, unused
    parser.add_argument("--iter", type=int, default=10)
    args = parser.parse_args()
    if args.pid_file:
        args.pid_file.write_text(str(os.getpid()))

    def log(text: str) -> None:
        if args.log:
            with args.log.open("a") as f:
                f.write(f"{args.name} {text}\n")

    if args.mode == "silent":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(60)
    if args.mode == "own-loop":
        for _ in range(5):
            print(metric(args.value_us), flush=True)
        return
    if args.mode == "ready-then-loop":
        print("\n".join(["BENCHLAB_STEP ready"] + [metric(args.value_us)] * 10), flush=True)
        return
    print("loading the model", flush=True)  # ordinary output before ready is fine
    log("ready")
    for index in steps(args.iter):
        log(f"step {index}")
        if args.crash_at is not None and index + 1 == args.crash_at:
            print(f"boom at step {index + 1}", file=sys.stderr, flush=True)
            sys.exit(3)
        print(metric(peer_state(args.peer_pid_file) if args.peer_pid_file else args.value_us))


def peer_state(pid_file: Path) -> float:
    """The peer's state as a latency, see the module text."""
    if not pid_file.exists():
        return 3000.0
    try:
        stat = Path(f"/proc/{pid_file.read_text().strip()}/stat").read_text()
    except (FileNotFoundError, ValueError):
        return 4000.0
    state = stat.rsplit(")", 1)[1].split()[0]
    if state in ("Z", "X"):
        return 4000.0
    return 1000.0 if state in ("T", "t") else 2000.0


if __name__ == "__main__":
    main()
