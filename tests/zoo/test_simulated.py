"""An int8 file's error split in two: quantization (the recipe run exactly against fp32) and
lowering (the runtime against the recipe), from the simulated outputs the zoo writes.

The arithmetic of :func:`attribution_stats` on arrays made here; ``onnx_simulator`` on small
graphs made here (which method, exact integer results); and end to end: two zoo models (a conv
net, statically quantized, and an MLP, dynamically quantized) exported to both int8 formats
and measured by ``benchlab.run`` in ONNX Runtime and ExecuTorch.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import benchlab
import benchlab.zoo as zoo
from benchlab.exporting.specs import spec_of
from benchlab.spec.artifacts import ArtifactCache
from benchlab.runner.accuracy import (
    attribution_stats,
    error_stats,
    floor_stats,
    load_reference,
    nudged,
    save_reference,
)
from benchlab.schema.result import Metric, Result, Status
from benchlab.exporting.simulate import onnx_simulator, simulated_path, write_simulated

ATTRIBUTION = (Metric.QUANTIZATION_SQNR, Metric.QUANTIZATION_L2_REL, Metric.LOWERING_SQNR,
               Metric.LOWERING_L2_REL)


def test_attribution_splits_the_error_exactly() -> None:
    # ‖reference‖ = 13; the recipe moves one value by 0.5, the runtime another by 1.2: the
    # two errors are orthogonal, so the total is √(0.5² + 1.2²) = 1.3, i.e. 0.1 of 13.
    reference = [np.array([[3.0, 4.0]]), np.array([12.0])]
    simulated = [np.array([[3.0, 4.5]]), np.array([12.0])]
    runtime = [np.array([[3.0, 4.5]], dtype=np.float32), np.array([13.2])]
    stats = attribution_stats(runtime, simulated, reference)
    assert set(stats) == set(ATTRIBUTION)
    assert stats[Metric.QUANTIZATION_L2_REL] == pytest.approx(0.5 / 13, rel=1e-12)
    assert stats[Metric.LOWERING_L2_REL] == pytest.approx(1.2 / 13, rel=1e-6)
    assert stats[Metric.QUANTIZATION_SQNR] == pytest.approx(10 * math.log10(169 / 0.25))
    assert stats[Metric.LOWERING_SQNR] == pytest.approx(10 * math.log10(169 / 1.44), rel=1e-6)
    total = error_stats(runtime, reference)[Metric.ERROR_L2_REL]
    assert total == pytest.approx(0.1, rel=1e-6)
    assert total == pytest.approx(math.hypot(stats[Metric.QUANTIZATION_L2_REL],
                                             stats[Metric.LOWERING_L2_REL]), rel=1e-6)


def test_a_lowering_that_undoes_the_quantization_error() -> None:
    # The runtime lands on the fp32 values: no total error, though each part has one.
    reference = [np.array([1.0, 2.0, 2.0])]
    simulated = [np.array([1.0, 2.0, 2.3])]
    stats = attribution_stats(reference, simulated, reference)
    assert stats[Metric.QUANTIZATION_L2_REL] == pytest.approx(0.1)
    assert stats[Metric.LOWERING_L2_REL] == pytest.approx(0.1)
    assert stats[Metric.QUANTIZATION_SQNR] == pytest.approx(20.0)
    # Identical outputs read as the SQNR ceiling; an all-zero reference has no relative error.
    same = attribution_stats(simulated, simulated, reference)
    assert same[Metric.LOWERING_SQNR] == 300.0 and same[Metric.LOWERING_L2_REL] == 0.0
    zero = attribution_stats([np.ones(3)], [np.ones(3)], [np.zeros(3)])
    assert set(zero) == {Metric.QUANTIZATION_SQNR, Metric.LOWERING_SQNR}


def test_nudged_inputs_move_every_float_by_one_ulp_and_no_integer() -> None:
    x = np.linspace(-2, 2, 1000, dtype=np.float32).reshape(10, 100)
    ids = np.arange(7, dtype=np.int64)
    moved = nudged({"x": x, "ids": ids}, seed=3)
    assert moved is not None and np.array_equal(moved["ids"], ids)
    up, down = np.nextafter(x, np.inf), np.nextafter(x, -np.inf)
    assert np.all((moved["x"] == up) | (moved["x"] == down))
    ups = np.mean(moved["x"] > x)
    assert 0.4 < ups < 0.6  # a seeded sign per element, about half each way
    again = nudged({"x": x, "ids": ids}, seed=3)
    assert again is not None and np.array_equal(again["x"], moved["x"])  # reproducible
    assert nudged({"ids": ids}) is None  # token ids alone: no ulp to move


def test_floor_is_measured_on_the_references_scale() -> None:
    reference = [np.array([3.0, 4.0])]
    outputs = [np.array([3.0, 4.1])]
    stats = floor_stats([np.array([3.0, 4.6])], outputs, reference)
    assert stats[Metric.LOWERING_FLOOR_L2_REL] == pytest.approx(0.5 / 5)
    assert stats[Metric.LOWERING_FLOOR_SQNR] == pytest.approx(20.0)
    assert floor_stats(outputs, outputs, reference)[Metric.LOWERING_FLOOR_SQNR] == 300.0


def _integer_graph(path: Path) -> None:
    """MatMulInteger with a zero point per column of B, and a GatherElements over 128
    positions (onnx 1.23's own reference kernel fails beyond 64)."""
    rng = np.random.default_rng(0)
    w = rng.integers(-64, 64, (8, 3)).astype(np.int8)
    w_zero = np.array([0, 3, -2], dtype=np.int8)
    indices = rng.integers(-128, 128, (1, 128)).astype(np.int64)
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "w", "a_zero", "w_zero"], ["product"]),
         helper.make_node("GatherElements", ["ids", "indices"], ["gathered"], axis=1)],
        "integer",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [4, 8]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 128])],
        [helper.make_tensor_value_info("product", TensorProto.INT32, [4, 3]),
         helper.make_tensor_value_info("gathered", TensorProto.INT64, [1, 128])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(w_zero, "w_zero"),
         numpy_helper.from_array(np.array(131, dtype=np.uint8), "a_zero"),
         numpy_helper.from_array(indices, "indices")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_integer_graphs_are_computed_by_onnx_reference_exactly(tmp_path: Path) -> None:
    path = tmp_path / "integer.onnx"
    _integer_graph(path)
    run, method = onnx_simulator(path)
    assert method == "onnx-reference"
    a = np.random.default_rng(1).integers(0, 256, (4, 8)).astype(np.uint8)
    ids = np.arange(1000, 1128, dtype=np.int64).reshape(1, 128)
    product, gathered = run([a, ids])
    model = onnx.load(path)
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    expected = (a.astype(np.int64) - 131) @ (init["w"].astype(np.int64) - init["w_zero"])
    assert product.dtype == np.int32 and np.array_equal(product, expected)
    assert np.array_equal(gathered, 1000 + init["indices"] % 128)


def test_qdq_graphs_run_as_fake_quantization_in_unoptimized_onnxruntime(
    tmp_path: Path,
) -> None:
    scale, zero = np.float32(0.05), np.uint8(128)
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["q"]),
         helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["y"])],
        "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])],
        [numpy_helper.from_array(np.array(scale), "scale"),
         numpy_helper.from_array(np.array(zero), "zero")],
    )
    path = tmp_path / "qdq.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    run, method = onnx_simulator(path)
    assert method == "ort-unoptimized"
    x = np.array([[0.0, 0.024, 0.026, -1.0, 9.0], [0.1, 0.125, -6.4, 6.35, 3.3]], np.float32)
    (y,) = run([x])
    # Round half to even, then saturate to uint8: 0.5 steps → 0, 1 → 0.05; 9.0 → 6.35.
    q = np.clip(np.rint(x / scale) + 128, 0, 255)
    np.testing.assert_allclose(y, (q - 128) * scale, rtol=0, atol=1e-7)


def test_simulated_outputs_keep_the_reference_sets(tmp_path: Path) -> None:
    reference = tmp_path / "m.reference.npz"
    sets = [({"input0": np.full((1, 2), float(k), np.float32)}, [np.zeros((1, 2))])
            for k in range(3)]
    save_reference(reference, *sets[0], task="regression", more=sets[1:])
    target = simulated_path(tmp_path / "m.int8.onnx")
    assert target.name == "m.int8.simulated.npz"
    write_simulated(reference, target, lambda inputs: [inputs[0] * 2, inputs[0].sum()])
    simulated = load_reference(target)
    assert simulated.task == "regression" and len(simulated.more) == 2
    for k, (inputs, outputs) in enumerate([(simulated.inputs, simulated.outputs),
                                           *simulated.more]):
        assert np.array_equal(inputs["input0"], sets[k][0]["input0"])
        assert np.array_equal(outputs[0], np.full((1, 2), 2.0 * k)) and outputs[1] == 2.0 * k


# -- end to end: the zoo's int8 exports measured by benchlab.run ----------------------------

#: A conv net (static quantization in both recipes) and an MLP (dynamic quantization).
MODELS = ("convnet", "mlp")
#: Framework → the configuration that runs its int8 file.
RUNTIMES = {"onnxruntime": "onnxruntime:precision=int8",
            "executorch": "executorch:delegate=xnnpack,precision=int8"}
#: |q − l| ≤ total ≤ q + l holds exactly; the three figures are each rounded in float64.
SLACK = 1e-9


@pytest.fixture(scope="module")
def cache_dir(zoo_cache_dir: Path) -> Path:
    # The run's shared zoo cache: the int8 files may be there already, or are put there once.
    return zoo_cache_dir


@pytest.fixture(scope="module")
def int8_only() -> Iterator[None]:
    """The models export their two int8 formats only: their others would take minutes."""
    with pytest.MonkeyPatch.context() as patch:
        for name in MODELS:
            patch.setitem(zoo.ZOO, name, replace(zoo.ZOO[name],
                                                 formats=("onnx_int8", "pte_xnnpack_int8")))
        yield


@pytest.fixture(scope="module")
def int8_results(int8_only: None, cache_dir: Path,
                 tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Result]:
    """(model, framework) → its int8 file measured by ``benchlab.run``, once per module."""
    overrides = benchlab.TestOverrides(iter=2, min_time=0.0, repeat=1, warmup=0)
    results = benchlab.run(models=list(MODELS), frameworks=list(RUNTIMES.values()),
                           db=tmp_path_factory.mktemp("simulated") / "results.db",
                           cache_dir=cache_dir,
                           overrides=overrides)
    return {(r.identity.model_name, r.identity.framework): r for r in results}


def _value(result: Result, metric: Metric) -> float:
    return result.summaries[metric.key].mean


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("framework", RUNTIMES)
def test_int8_error_splits_into_quantization_and_lowering(
    int8_results: dict[tuple[str, str], Result], model: str, framework: str
) -> None:
    assert len(int8_results) == len(MODELS) * len(RUNTIMES), sorted(int8_results)
    result = int8_results[model, framework]
    assert result.status is Status.OK, (result.error, result.stderr_tail)
    for metric in ATTRIBUTION:
        assert metric.key in result.summaries, (metric, sorted(result.summaries))
    total = _value(result, Metric.ERROR_L2_REL)
    quantization = _value(result, Metric.QUANTIZATION_L2_REL)
    lowering = _value(result, Metric.LOWERING_L2_REL)
    print(f"{model} {framework}: total {total:.3e}, quantization {quantization:.3e} "
          f"({_value(result, Metric.QUANTIZATION_SQNR):.1f} dB), lowering {lowering:.3e} "
          f"({_value(result, Metric.LOWERING_SQNR):.1f} dB)")
    assert abs(quantization - lowering) - SLACK <= total <= quantization + lowering + SLACK
    # The rounding floor is measured beside them (float inputs: both models take images or
    # feature vectors), at or below the lowering error whenever that one is not exact.
    assert Metric.LOWERING_FLOOR_SQNR.key in result.summaries
    floor = _value(result, Metric.LOWERING_FLOOR_L2_REL)
    assert 0 <= floor < 0.05
    # The recipe itself loses something: not all of an int8 file's error is the runtime's.
    assert 1e-4 < quantization < 0.05
    assert _value(result, Metric.QUANTIZATION_SQNR) < 80


@pytest.mark.slow
def test_the_zoo_specs_carry_the_simulated_files(
    int8_results: dict[tuple[str, str], Result], cache_dir: Path
) -> None:
    cache = ArtifactCache(cache_dir)
    for export in zoo.export_models(list(MODELS), cache):
        assert export.exported == ()  # what the run exported, now from the cache
        files = spec_of(export, cache).model.files
        assert {"reference", "onnx_int8", "simulated_onnx_int8", "pte_xnnpack_int8",
                "simulated_pte_xnnpack_int8"} <= set(files)
