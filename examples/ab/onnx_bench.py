"""An ONNX Runtime benchmark program that speaks benchlab's step protocol (docs/ab.md).

``python onnx_bench.py MODEL.onnx --warmup 10 --iter 50`` loads the model with ONNX Runtime's
defaults (its own intra-op pool, idle threads spinning: as an application ships it), feeds
seeded random inputs of the shapes the graph declares (symbolic dimensions as 1), and prints
one latency line per timed iteration. Started by ``benchlab compare`` in lock-step mode it
runs one iteration per step, so two builds of a model (or of ONNX Runtime) alternate
iteration by iteration: examples/ab/onnx.yaml.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import onnxruntime as ort

from benchlab.protocol.step import steps

_TYPES = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iter", type=int, default=50)
    args = parser.parse_args()
    session = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for arg in session.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in arg.shape]
        dtype = _TYPES.get(arg.type, np.float32)
        feeds[arg.name] = (rng.random(shape).astype(dtype) if dtype == np.float32
                           else rng.integers(0, 100, shape).astype(dtype))
    for _ in range(args.warmup):
        session.run(None, feeds)
    for _ in steps(args.iter):
        started = time.perf_counter_ns()
        session.run(None, feeds)
        elapsed_us = (time.perf_counter_ns() - started) / 1000
        print("BENCHLAB_METRIC " + json.dumps({"type": "NET", "metric": "latency",
                                               "unit": "us", "value": elapsed_us}))


if __name__ == "__main__":
    main()
