"""A small benchmark binary in FAI-PEP's style: it prints ``PyTorchObserver {json}`` lines.

It runs a two-layer numpy MLP whose weights come from the model file, times each iteration and
each "operator" (matmul, relu), and prints one line per sample, exactly as FAI-PEP's
``generic`` framework expects from any binary. benchlab reads every line; none is dropped.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def emit(kind: str, metric: str, value: float, unit: str) -> None:
    """One FAI-PEP observer line; FAI-PEP passes values as strings, so this does too."""
    payload = {"type": kind, "metric": metric, "unit": unit, "value": f"{value:.3f}"}
    print("PyTorchObserver " + json.dumps(payload), flush=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="a .npy file of shape (2, N, N)")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--iter", type=int, default=10)
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()

    weights = np.load(args.model)
    x = np.random.default_rng(0).standard_normal((args.batch, weights.shape[1]), np.float32)
    print(f"loaded {args.model}: {weights.shape}")  # noise a real binary prints too
    for step in range(args.warmup + args.iter):
        ops = {}
        start = time.perf_counter_ns()
        h = x
        for layer in weights:
            t0 = time.perf_counter_ns()
            h = h @ layer
            t1 = time.perf_counter_ns()
            h = np.maximum(h, 0.0)
            t2 = time.perf_counter_ns()
            ops["matmul"] = ops.get("matmul", 0) + (t1 - t0)
            ops["relu"] = ops.get("relu", 0) + (t2 - t1)
        total = time.perf_counter_ns() - start
        if step < args.warmup:
            continue  # FAI-PEP binaries do not print warm-up samples
        emit("NET", "latency", total / 1e3, "us")
        for op, ns in ops.items():
            emit(op, "latency", ns / 1e3, "us")
    print(json.dumps({"checksum": float(h.sum())}))


if __name__ == "__main__":
    main()
