"""OpenVINO's delegation coverage: ``Core.query_model``'s answer for real models, one that the
CPU runs whole and one holding an operation the CPU plugin has no kernel for.

The CPU is the only device here. The unsupported operation is a real one: an operation
defined in Python (``openvino.Op``) without ``evaluate``, which the CPU plugin can neither
compile nor fall back to a reference implementation for (``compile_model`` rejects it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchlab.schema.diagnosis import coverage_warning
from benchlab.frameworks.base import JobContext
from benchlab.frameworks.openvino import OpenVinoFramework
from benchlab.runner.config import RunnerConfig
from benchlab.spec.types import FrameworkConfig, ModelDef

ov = pytest.importorskip("openvino")

from benchlab.frameworks.openvino.backend import (  # noqa: E402 - after the skip
    NOT_COUNTED,
    OpenVinoBackend,
    query_coverage,
)

from .one_process import process_coverage  # noqa: E402 - after the skip


class NoKernel(ov.Op):  # type: ignore[misc, name-defined]
    """An identity-shaped operation of an extension no device implements."""

    def __init__(self, inputs: list[Any] | None = None) -> None:
        super().__init__(self, inputs)
        if inputs is not None:
            self.constructor_validate_and_infer_types()

    def validate_and_infer_types(self) -> None:
        self.set_output_type(0, self.get_input_element_type(0), self.get_input_partial_shape(0))

    def clone_with_new_inputs(self, new_inputs: list[Any]) -> NoKernel:
        return NoKernel(new_inputs)

    def get_type_info(self) -> Any:
        return ov.DiscreteTypeInfo("NoKernel", "benchlab_test")

    def visit_attributes(self, visitor: Any) -> bool:
        return True


def _mixed_model() -> Any:
    """Parameter → Relu → NoKernel → Add(Constant) → Sigmoid → Result."""
    ops = ov.opset13
    x = ops.parameter([2, 4], np.float32, name="x")
    hidden = NoKernel([ops.relu(x)])
    y = ops.sigmoid(ops.add(hidden, ops.constant(np.ones((2, 4), np.float32))))
    return ov.Model([y], [x], "mixed")


def _counted(model: Any) -> list[str]:
    return [op.get_type_name() for op in model.get_ordered_ops()
            if op.get_type_name() not in NOT_COUNTED]


def test_a_model_the_cpu_runs_whole_counts_every_operation(onnx_file: Path) -> None:
    backend = OpenVinoBackend(RunnerConfig(backend=OpenVinoFramework.backend,
                                           model_path=str(onnx_file)))
    backend.load()
    coverage = backend.delegation()
    expected = _counted(ov.Core().read_model(str(onnx_file)))
    assert expected  # the Gemm, Relu and MatMul, as OpenVINO converted them
    assert (coverage.engine, coverage.asked) == ("CPU", False)
    assert coverage.nodes == coverage.delegated == len(expected)
    assert coverage.by_engine == {"CPU": len(expected)}
    assert coverage.fallback == {} and coverage.share == 1.0 and not coverage.note
    assert coverage_warning(coverage) is None


def test_an_operation_the_cpu_lacks_is_shown_as_fallen_back() -> None:
    core, model = ov.Core(), _mixed_model()
    with pytest.raises(RuntimeError, match="NoKernel"):
        core.compile_model(model, "CPU")  # what the query predicts
    coverage = query_coverage(core, model, "CPU")
    assert _counted(model) == ["Relu", "NoKernel", "Add", "Sigmoid"]
    assert (coverage.nodes, coverage.delegated) == (4, 3)
    assert coverage.fallback == {"NoKernel": 1}
    assert coverage.by_engine == {"CPU": 3}
    assert "cannot be compiled" in coverage.note
    assert not coverage.asked and coverage_warning(coverage) is None


def test_a_device_that_was_asked_for_is_judged() -> None:
    # HETERO accepts the CPU as its only device: asked for, and it takes 3 of 4.
    coverage = query_coverage(ov.Core(), _mixed_model(), "HETERO:CPU")
    assert (coverage.engine, coverage.asked) == ("HETERO:CPU", True)
    assert (coverage.nodes, coverage.delegated) == (4, 3)
    assert coverage.fallback == {"NoKernel": 1}
    assert coverage_warning(coverage) is None  # 75% is above LOW_COVERAGE


@pytest.mark.slow
def test_a_runner_process_reports_the_delegation_in_its_details(
        make_model: Callable[..., ModelDef], make_ctx: Callable[..., JobContext],
        onnx_file: Path, tmp_path: Path) -> None:
    fw = OpenVinoFramework()
    model = make_model({"onnx": "tiny.onnx"})
    ctx = make_ctx(model, FrameworkConfig("openvino", {"precision": "f32"}),
                   files={"files.onnx": str(onnx_file)}, workdir=str(tmp_path), iter=2,
                   threads=1)
    coverage = process_coverage(fw, ctx)
    assert coverage.engine == "CPU"
    assert coverage.nodes and coverage.delegated == coverage.nodes
