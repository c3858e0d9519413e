"""The diagnosis shapes: coverage and its warning rule, the layer table and its comparison."""

from __future__ import annotations

import numpy as np
import pytest

from benchlab.schema.diagnosis import (
    LAYER_SQNR_THRESHOLD_DB,
    LOW_COVERAGE,
    Coverage,
    LayerTable,
    coverage_warning,
)
from benchlab.runner.layers import compare_layers, layer_error


def _ort(delegated: int, nodes: int = 10, asked: bool = True) -> Coverage:
    return Coverage(engine="XnnpackExecutionProvider", method="profiler", asked=asked,
                    nodes=nodes, delegated=delegated,
                    fallback={"Softmax": nodes - delegated} if nodes > delegated else {})


def test_coverage_survives_the_json_round_trip() -> None:
    coverage = Coverage(engine="XnnpackBackend", method=".pte", asked=True, partitions=3,
                        fallback={"aten::mean.out": 1, "aten::add.out": 2},
                        by_engine={"XnnpackBackend": 3}, note="blob hides its operators")
    assert Coverage.from_detail(coverage.to_detail()) == coverage
    assert list(coverage.to_detail()["fallback"]) == ["aten::add.out", "aten::mean.out"]
    assert Coverage.from_detail(None) is None and Coverage.from_detail({"x": 1}) is None


@pytest.mark.parametrize(("delegated", "flagged"), [(0, True), (4, True), (5, False),
                                                    (10, False)])
def test_an_asked_engine_is_flagged_below_the_documented_share(delegated: int,
                                                               flagged: bool) -> None:
    assert LOW_COVERAGE == 0.5
    assert (coverage_warning(_ort(delegated)) is not None) is flagged
    assert coverage_warning(_ort(delegated, asked=False)) is None  # the default CPU session


def test_a_delegate_that_hides_its_operator_count_is_judged_by_its_partitions() -> None:
    none_taken = Coverage(engine="XnnpackBackend", method=".pte", asked=True, partitions=0,
                          fallback={"aten::addmm.out": 3})
    assert "took no operator" in (coverage_warning(none_taken) or "")
    assert none_taken.summary() == "0 parts + 3 ops"
    taken = Coverage(engine="XnnpackBackend", method=".pte", asked=True, partitions=2,
                     fallback={"aten::mean.out": 1})
    assert coverage_warning(taken) is None and taken.share is None
    assert _ort(9).summary() == "90%"


def test_layer_table_marks_the_first_layer_below_the_threshold() -> None:
    rng = np.random.default_rng(0)
    want = {name: rng.standard_normal((2, 8)).astype(np.float32) for name in "abcd"}
    got = dict(want)
    got["c"] = want["c"] + 0.5 * rng.standard_normal((2, 8)).astype(np.float32)
    got["d"] = want["d"] * 1.2
    got["idx"] = np.arange(3)  # integers are not layers
    order = [("a", "Conv"), ("idx", "ArgMax"), ("b", "Relu"), ("c", "Conv"), ("d", "Gemm"),
             ("e", "Add")]
    got["e"] = np.ones(4, np.float32)
    table = compare_layers(got, want, order, "the fp32 file")
    assert [layer.name for layer in table.layers] == ["a", "b", "c", "d"]
    assert table.unmatched == ("e",) and table.matched == 4
    assert table.layers[0].sqnr == 300.0 and table.threshold_db == LAYER_SQNR_THRESHOLD_DB
    first = table.first_diverging
    assert first is not None and first.name == "c" and first.op == "Conv"
    assert LayerTable.from_detail(table.to_detail()) == table
    assert table.to_detail()["first_diverging"] == "c"


def test_layer_error_of_a_scaled_tensor_is_its_known_sqnr() -> None:
    want = np.linspace(-1.0, 1.0, 101)
    error = layer_error("x", "Mul", want * 1.1, want)
    assert error.sqnr == pytest.approx(20.0)  # noise is 0.1 of the signal: 10·log10(100)
    assert error.l2_rel == pytest.approx(0.1) and error.max_abs == pytest.approx(0.1)


def test_a_lowering_error_near_its_rounding_floor_is_read_as_flips() -> None:
    from benchlab.schema.diagnosis import ROUNDING_FLOOR_MARGIN_DB, at_rounding_floor

    assert at_rounding_floor(26.0, 28.0)  # 2 dB below: within the floor's own spread
    assert at_rounding_floor(28.0 - ROUNDING_FLOOR_MARGIN_DB, 28.0)
    assert at_rounding_floor(40.0, 28.0)  # better than the floor
    assert not at_rounding_floor(25.9, 33.6)  # MobileNetV2's XNNPACK int8 cell: 7.7 dB above
    assert not at_rounding_floor(25.0, None) and not at_rounding_floor(None, 25.0)
