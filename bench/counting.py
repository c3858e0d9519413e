"""Counted instructions on a real model: the A/A floor, a held-out 1% change, the validity of a
count against wall time, and what counting costs (docs/performance.md §19, docs/statistics.md
"Counted instructions").

Parts (``--parts``):

- **aa**: MobileNetV2 (the zoo's ONNX export) against itself on ONNX Runtime by counts
  (``compare --measure instructions``): the interval's width after one pair.
- **step**: the same file against a copy with ``k`` Adds of a zero tensor on the last feature
  map (``bench/ab_validity.py``'s construction, outputs equal to the bit), ``k`` chosen so the
  copy executes about 1% more instructions. The truth is measured apart from the compare: the
  instructions of one such Add, counted in a model of Adds alone (the count of k Adds minus
  one Add, over k − 1), times k, over MobileNetV2's own count. Then the compare by counts
  (``--min-effect 0.5%``): its verdict, pairs and interval.
- **validity**: for known changes, the counted change beside the wall-time change (in-process
  A/B, 20 sessions): one MatMul more in a chain of twenty; MobileNetV2 int8 against fp32; two
  intra-op threads against one; the installed ONNX Runtime against another version in its own
  environment (``--other-python``, skipped without it).
- **cost**: seconds per counted process and per counted call against the native call.

Run: ``python bench/counting.py`` (about 20 min on 2 vCPUs); ``--smoke`` for CI (a chain of
four MatMuls against five, one counted pair).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import parse_args, write_result  # noqa: E402

from ab_validity import slowed_copies  # noqa: E402


def _extra(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parts", default="aa,step,validity,cost")
    parser.add_argument("--calls", type=int, default=3, help="counted calls per process")
    parser.add_argument("--other-python", default=None,
                        help="a Python with another ONNX Runtime and benchlab (validity row)")


def _spec(where: Path, model: Path, name: str = "spec") -> Path:
    import onnx

    graph = onnx.load(str(model), load_external_data=False).graph
    shape = [d.dim_value or 1 for d in graph.input[0].type.tensor_type.shape.dim]
    spec = {"model": {"name": model.stem, "format": "onnx", "framework": "onnxruntime",
                      "files": {"model": {"location": str(model), "md5": None}}},
            "tests": [{"identifier": "default", "warmup": 0, "iter": 20,
                       "inputs": {graph.input[0].name: {"shapes": [shape]}}}]}
    path = where / f"{name}.json"
    path.write_text(json.dumps(spec))
    return path


def compare_files(where: Path, control: Path, treatment: Path, *, measure: str,
                  calls: int, min_effect: float = 0.005, sides: tuple[Any, Any] | None = None,
                  looks: tuple[int, ...] = (20,), verify: bool = False) -> dict[str, Any]:
    """One compare of two model files (or two other sides); each metric's figures."""
    from benchlab import compare
    from benchlab.ab import CompareSettings, Side

    control_side, treatment_side = sides or (Side("control", model=control),
                                             Side("treatment", model=treatment))
    started = time.monotonic()
    comparison = compare([_spec(where, control)], control=control_side,
                         treatment=treatment_side, db=where / "bench.db",
                         settings=CompareSettings(measure=measure, count_calls=calls,
                                                  min_effect=min_effect, looks=looks,
                                                  verify=verify, fidelity_tolerance=None))
    out: dict[str, Any] = {"seconds": round(time.monotonic() - started, 1),
                           "failed": list(comparison.failed)}
    for m in comparison.metrics:
        e = m.estimate
        out[m.metric.removeprefix("NET ")] = {
            "mode": m.mode.value, "n": e.n_pairs, "change": e.change, "low": e.ci_low,
            "high": e.ci_high, "width_points": 100 * (e.ci_high - e.ci_low),
            "outcome": e.outcome.value, "verified": m.verified,
            "control": statistics.median(m.control), "treatment": statistics.median(m.treatment),
            "regime": {k: v for k, v in m.regime.items() if isinstance(v, (dict, str, int))},
        }
    return out


def _adds_only(where: Path, adds: int) -> Path:
    """A model of ``adds`` Adds of a zero tensor on a 1×1280×7×7 input (the copies' Adds)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    zero = numpy_helper.from_array(np.zeros((1, 1280, 7, 7), np.float32), "zero")
    names = ["x"] + [f"a{i}" for i in range(adds)]
    nodes = [helper.make_node("Add", [names[i], "zero"], [names[i + 1]]) for i in range(adds)]
    graph = helper.make_graph(
        nodes, "adds", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1280, 7, 7])],
        [helper.make_tensor_value_info(names[-1], TensorProto.FLOAT, [1, 1280, 7, 7])], [zero])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = where / f"adds{adds}.onnx"
    onnx.save(model, str(path))
    return path


def counted(where: Path, model: Path, calls: int) -> dict[str, Any]:
    """One counted process of ``model``: its per-call counts and how long it took."""
    import benchlab

    started = time.monotonic()
    (result,) = benchlab.run([_spec(where, model, model.stem)], db=where / "bench.db",
                             overrides=benchlab.TestOverrides(count="instructions", iter=calls,
                                                              warmup=0, repeat=1))
    if not result.ok:
        raise RuntimeError(f"{model.name}: {result.error}")
    values = [s.value for s in result.samples if s.metric == "instructions"]
    return {"counts": values, "mean": statistics.fmean(values),
            "seconds": round(time.monotonic() - started, 1),
            "under_valgrind_s": result.details["counting"]["seconds_under_valgrind"]}


def native_call_ms(model: Path, calls: int = 200) -> float:
    """The median native call time of ``model`` with one intra-op thread."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    first = session.get_inputs()[0]
    feeds = {first.name: np.random.default_rng(0).random(
        [d if isinstance(d, int) else 1 for d in first.shape], dtype=np.float32)}
    for _ in range(10):
        session.run(None, feeds)
    times = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        session.run(None, feeds)
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1e6


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv, repeats=1, extra=_extra)
    parts = set(args.parts.split(","))
    from tests.ab.test_fidelity import write_chain

    figures: dict[str, Any] = {"calls_per_process": args.calls,
                               "emulation": "none: x86-64 under valgrind 3.19 (AVX2 at most)"}
    with tempfile.TemporaryDirectory(prefix="benchlab-counting-") as folder:
        where = Path(folder)
        if args.smoke:
            # 64 wide: a call of four MatMuls is about a million instructions, so the few
            # thousand a call now and then counts more (the machine's load moves them) stay
            # under 1%; 32 wide, they moved the step between 14% and 19%.
            four = write_chain(where / "four.onnx", 4, width=64)
            five = write_chain(where / "five.onnx", 5, width=64)
            figures["smoke"] = compare_files(where, four, five, measure="instructions",
                                             calls=1)
            write_result("counting", args, figures)
            return 0
        files = slowed_copies(where, {})
        original = files["0%"]
        if "aa" in parts:
            figures["aa"] = compare_files(where, original, original, measure="instructions",
                                          calls=args.calls)
            print("aa", json.dumps(figures["aa"]), flush=True)
        if "step" in parts:
            base = counted(where, original, args.calls)
            one, many = counted(where, _adds_only(where, 1), args.calls), counted(
                where, _adds_only(where, 41), args.calls)
            per_add = (many["mean"] - one["mean"]) / 40
            adds = round(0.01 * base["mean"] / per_add)
            predicted = adds * per_add / base["mean"]
            copy = slowed_copies(where, {"1%": adds})["1%"]
            figures["step"] = {
                "adds": adds, "per_add_instructions": per_add, "base": base,
                "truth": predicted,
                "compare": compare_files(where, original, copy, measure="instructions",
                                         calls=args.calls, verify=True),
            }
            print("step", json.dumps(figures["step"]), flush=True)
        if "validity" in parts:
            figures["validity"] = validity(where, original, args)
            print("validity", json.dumps(figures["validity"]), flush=True)
        if "cost" in parts:
            chain = write_chain(where / "chain20.onnx", 20, width=256)
            cost = {}
            for name, model in (("mobilenet_v2", original), ("chain20", chain)):
                process = counted(where, model, args.calls)
                native = native_call_ms(model)
                cost[name] = {"native_ms": native, "process_s": process["seconds"],
                              "under_valgrind_s": process["under_valgrind_s"],
                              "instructions": process["mean"]}
            figures["cost"] = cost
            print("cost", json.dumps(cost), flush=True)
    write_result("counting", args, figures)
    return 0


def validity(where: Path, original: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Counts and wall time side by side on known changes (module text)."""
    from benchlab.ab import Side

    from tests.ab.test_fidelity import write_chain

    rows: dict[str, Any] = {}
    twenty = write_chain(where / "twenty.onnx", 20, width=256)
    more = write_chain(where / "twenty-one.onnx", 21, width=256)
    rows["one MatMul more (chain of 20, 64×256)"] = compare_files(
        where, twenty, more, measure="both", calls=args.calls)
    from benchlab.spec.artifacts import ArtifactCache, default_cache_dir
    from benchlab.zoo import export_models

    (export,) = export_models(["mobilenet_v2"], ArtifactCache(default_cache_dir()),
                              formats=["onnx_int8"])
    int8 = Path(export.files["onnx_int8"][0])
    rows["MobileNetV2 int8 against fp32"] = compare_files(
        where, original, int8, measure="both", calls=args.calls,
        sides=(Side("fp32", model=original), Side("int8", model=int8)))
    rows["two intra-op threads against one (MobileNetV2)"] = compare_files(
        where, original, original, measure="both", calls=args.calls,
        sides=(Side("one thread", framework=_ort({"threads": 1})),
               Side("two threads", framework=_ort({"threads": 2}))))
    if args.other_python:
        rows["another ONNX Runtime (MobileNetV2)"] = compare_files(
            where, original, original, measure="both", calls=args.calls,
            sides=(Side("installed"), Side("other", python=args.other_python)))
    return rows


def _ort(options: dict[str, Any]) -> Any:
    from benchlab.spec.types import FrameworkConfig

    return FrameworkConfig("onnxruntime", options)


if __name__ == "__main__":
    sys.exit(main())
