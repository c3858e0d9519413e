"""What the Python binding costs: benchlab's native runners against the Python runtimes.

For one zoo model (``--model``, the mlp by default) and each runtime with a native runner
(``onnxruntime``, ``executorch``; ``--frameworks``), one benchlab run measures the two
sides as configurations of the same framework, ``runner=native`` (benchlab's own program over
the runtime's C/C++ library) and ``runner=python`` (the binding in benchlab's runner), in
rounds: every round one fresh process of each, back to back (benchlab's sweep takes its jobs
in turns), same file, same inputs, same threads (``--threads``, 1 by default: the 2-vCPU VM's
second core is left to the machine). Each process gives one figure, the median of its timed
iterations; each round the log-ratio d = log(native / python). The ratio is exp of the
Hodges-Lehmann centre of the d's, its interval exp of the bounds of
:func:`benchlab.ab.stats.hodges_lehmann` (95%), as ``benchlab compare`` and bench/fidelity.py
compute theirs. Below 1: the native runner is faster, the binding costs that much.

Run it with nothing else on the machine (``load1`` is recorded beside each figure)::

    .venv/bin/python bench/binding_cost.py --repeats 12

It writes ``bench/results/binding_cost.json``; ``--smoke`` runs 2 rounds of 20 iterations.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_args, write_result  # noqa: E402

import benchlab  # noqa: E402
from benchlab.ab.stats import hodges_lehmann  # noqa: E402
from benchlab.devicetools import device_tools_dir  # noqa: E402
from benchlab.spec.artifacts import default_cache_dir  # noqa: E402

VARIANTS = {"onnxruntime": ("", "precision=int8"),
            "executorch": ("delegate=xnnpack", "delegate=xnnpack,precision=int8")}


def _extra(parser: object) -> None:
    parser.add_argument("--model", default="mlp")  # type: ignore[attr-defined]
    parser.add_argument("--frameworks", default="onnxruntime",  # type: ignore[attr-defined]
                        help="comma-separated: onnxruntime, executorch")
    parser.add_argument("--iterations", type=int, default=500)  # type: ignore[attr-defined]
    parser.add_argument("--threads", type=int, default=1)  # type: ignore[attr-defined]


def _per_round(result: benchlab.Result) -> dict[int, float]:
    """Each process's median latency (ms), by repetition."""
    by_rep: dict[int, list[float]] = {}
    for sample in result.samples:
        if sample.key == "NET latency":
            by_rep.setdefault(sample.repetition, []).append(sample.value)
    return {rep: statistics.median(values) for rep, values in by_rep.items()}


def measure(model: str, framework: str, options: str, args: object, cache: Path) -> dict:
    sep = "," if options else ""
    configs = [f"{framework}:runner=native{sep}{options}",
               f"{framework}:runner=python{sep}{options}"]
    load = os.getloadavg()[0]
    began = time.monotonic()
    results = benchlab.run(
        models=[model], frameworks=configs, cache_dir=cache,
        overrides=benchlab.TestOverrides(iter=args.iterations, warmup=20,  # type: ignore[attr-defined]
                                         min_time=0.0, repeat=args.repeats,  # type: ignore[attr-defined]
                                         threads=args.threads),  # type: ignore[attr-defined]
        db=Path(tempfile.mkdtemp()) / "binding.db")
    native, python = (_per_round(r) for r in results)
    failed = [r.error for r in results if r.error]
    if failed or not native or not python:
        return {"configs": configs, "error": failed or "no latency samples"}
    rounds = sorted(set(native) & set(python))
    d = [math.log(native[r] / python[r]) for r in rounds]
    figure = {"configs": configs, "rounds": len(rounds),
              "native_ms": statistics.median(native[r] for r in rounds),
              "python_ms": statistics.median(python[r] for r in rounds),
              "load1_before": round(load, 2), "seconds": round(time.monotonic() - began, 1),
              "tool": results[0].details.get("tool")}
    if len(d) >= 6:
        centre, low, high = hodges_lehmann(d)
        figure.update(ratio=math.exp(centre), ci_low=math.exp(low), ci_high=math.exp(high))
    else:  # too few rounds for a 95% interval
        figure.update(ratio=math.exp(statistics.median(d)), ci_low=None, ci_high=None)
    return figure


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], repeats=12,
                      repeats_help="rounds (process pairs) per cell", extra=_extra)
    if args.smoke:
        args.repeats, args.iterations = 2, 20
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        # The zoo's exports land here once; the runners built for this host are the cache's.
        device_tools_dir(cache).symlink_to(device_tools_dir(default_cache_dir()),
                                           target_is_directory=True)
        for framework in args.frameworks.split(","):
            for options in VARIANTS[framework][: 1 if args.smoke else 2]:
                cell = f"{args.model} / {framework}" + (f" / {options}" if options else "")
                figures[cell] = measure(args.model, framework, options, args, cache)
                f = figures[cell]
                if "error" in f:
                    print(f"{cell}: {f['error']}")
                    continue
                interval = (f"{f['ci_low']:.3f}–{f['ci_high']:.3f}" if f["ci_low"] else "n/a")
                print(f"{cell}: native {f['native_ms']:.4f} ms, python {f['python_ms']:.4f} ms, "
                      f"ratio {f['ratio']:.3f} ({interval}), {f['rounds']} rounds, "
                      f"load1 {f['load1_before']}")
    print(write_result("binding_cost", args, figures))


if __name__ == "__main__":
    main()
