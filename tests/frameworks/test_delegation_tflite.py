"""LiteRT's delegation coverage: which nodes the XNNPACK delegate replaced in real
interpreters, for ``.tflite`` models written here with LiteRT's own flatbuffer schema.

What was found (ai-edge-litert 2.3.0): the Python ``Interpreter`` applies XNNPACK in
``allocate_tensors`` (``OpResolverType.AUTO``, the default), appending one ``DELEGATE`` node
per partition to the node list that ``_get_ops_details()`` returns; the replaced nodes stay
listed. ``BUILTIN_WITHOUT_DEFAULT_DELEGATES`` appends none. XNNPACK takes ``ADD`` and leaves
``CUMSUM`` to the built-in kernels, which splits ADD → CUMSUM → ADD → ADD into two partitions.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from benchlab.schema.diagnosis import Coverage, coverage_warning
from benchlab.frameworks.base import JobContext
from benchlab.frameworks.tflite import TfliteFramework
from benchlab.runner.config import RunnerConfig
from benchlab.spec.types import FrameworkConfig, ModelDef

pytest.importorskip("ai_edge_litert")

import flatbuffers  # noqa: E402 - a dependency of ai-edge-litert
from ai_edge_litert import schema_py_generated as schema  # noqa: E402

from benchlab.frameworks.tflite.backend import TfliteBackend  # noqa: E402

from .one_process import process_coverage

OPS = schema.BuiltinOperator


def write_chain(path: Path, codes: list[int]) -> Path:
    """A [1, 8] float model applying the ops of ``codes`` in a row.

    ``ADD`` adds its input to itself; ``CUMSUM`` sums along axis 1 (a constant input).
    """
    model = schema.ModelT()
    model.version = 3
    model.buffers = [schema.BufferT()]  # buffer 0: empty, for every non-constant tensor
    graph = schema.SubGraphT()
    graph.tensors, graph.operators = [], []

    def tensor(name: str, shape: list[int], kind: int = schema.TensorType.FLOAT32,
               data: np.ndarray | None = None) -> int:
        spec = schema.TensorT()
        spec.name, spec.shape, spec.type, spec.buffer = name, shape, kind, 0
        if data is not None:
            buffer = schema.BufferT()
            buffer.data = list(data.tobytes())
            model.buffers.append(buffer)
            spec.buffer = len(model.buffers) - 1
        graph.tensors.append(spec)
        return len(graph.tensors) - 1

    distinct = list(dict.fromkeys(codes))
    current = first = tensor("x", [1, 8])
    for step, code in enumerate(codes):
        op = schema.OperatorT()
        op.opcodeIndex = distinct.index(code)
        if code == OPS.CUMSUM:
            axis = tensor(f"axis{step}", [], schema.TensorType.INT32, np.array(1, np.int32))
            op.inputs = [current, axis]
        else:
            op.inputs = [current, current]
        current = tensor(f"t{step}", [1, 8])
        op.outputs = [current]
        graph.operators.append(op)
    graph.inputs, graph.outputs = [first], [current]
    model.subgraphs = [graph]
    model.operatorCodes = []
    for code in distinct:
        entry = schema.OperatorCodeT()
        entry.builtinCode, entry.deprecatedBuiltinCode, entry.version = code, min(code, 127), 1
        model.operatorCodes.append(entry)
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    path.write_bytes(builder.Output())
    return path


WITH_CUMSUM = [OPS.ADD, OPS.CUMSUM, OPS.ADD, OPS.ADD]


@pytest.fixture(scope="module")
def with_cumsum(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_chain(tmp_path_factory.mktemp("tflite-delegation") / "cumsum.tflite",
                       WITH_CUMSUM)


def _coverage(path: Path, codes: list[int], xnnpack: bool) -> Coverage:
    """The coverage the runner-side backend reports once the model (of ``codes``) has run."""
    backend = TfliteBackend(RunnerConfig(backend=TfliteFramework.backend, model_path=str(path),
                                         options={"xnnpack": xnnpack}))
    backend.load()
    x = want = np.arange(8, dtype=np.float32).reshape(1, 8)
    backend.prepare({"x": x})()
    for code in codes:  # what the model computes, whoever runs which node
        want = np.cumsum(want, axis=1) if code == OPS.CUMSUM else want + want
    np.testing.assert_allclose(backend.outputs()[0], want)
    return backend.delegation()


def test_an_operator_xnnpack_does_not_take_is_shown_as_fallen_back(with_cumsum: Path) -> None:
    coverage = _coverage(with_cumsum, WITH_CUMSUM, xnnpack=True)
    assert (coverage.engine, coverage.asked) == ("XNNPACK", True)
    assert (coverage.nodes, coverage.delegated, coverage.partitions) == (4, 3, 2)
    assert coverage.fallback == {"CUMSUM": 1}
    assert coverage.by_engine == {"XNNPACK": 3, "builtin": 1}
    assert coverage.summary() == "75% (2 parts)" and coverage_warning(coverage) is None


def test_a_model_xnnpack_takes_whole_is_one_partition(tmp_path: Path) -> None:
    codes = [OPS.ADD] * 3
    coverage = _coverage(write_chain(tmp_path / "adds.tflite", codes), codes, xnnpack=True)
    assert (coverage.nodes, coverage.delegated, coverage.partitions) == (3, 3, 1)
    assert coverage.fallback == {} and coverage.share == 1.0


def test_a_model_xnnpack_takes_little_of_is_flagged(tmp_path: Path) -> None:
    codes = [OPS.CUMSUM, OPS.CUMSUM, OPS.ADD]
    coverage = _coverage(write_chain(tmp_path / "sums.tflite", codes), codes, xnnpack=True)
    assert (coverage.nodes, coverage.delegated, coverage.partitions) == (3, 1, 1)
    assert coverage.fallback == {"CUMSUM": 2}
    warning = coverage_warning(coverage)
    assert warning is not None and "XNNPACK took only 33%" in warning


def test_without_xnnpack_the_builtin_kernels_run_every_node(with_cumsum: Path) -> None:
    coverage = _coverage(with_cumsum, WITH_CUMSUM, xnnpack=False)
    assert (coverage.engine, coverage.asked) == ("builtin", False)
    assert coverage.nodes == coverage.delegated == 4 and coverage.partitions is None
    assert coverage.by_engine == {"builtin": 4} and coverage_warning(coverage) is None


@pytest.mark.slow
def test_a_runner_process_reports_the_delegation_in_its_details(
        make_model: Callable[..., ModelDef], make_ctx: Callable[..., JobContext],
        with_cumsum: Path, tmp_path: Path) -> None:
    fw = TfliteFramework()
    model = make_model({"tflite": "cumsum.tflite"}, format="tflite")
    ctx = make_ctx(model, FrameworkConfig("tflite", {}),
                   files={"files.tflite": str(with_cumsum)}, workdir=str(tmp_path), iter=2,
                   threads=1)
    coverage = process_coverage(fw, ctx)
    assert (coverage.engine, coverage.delegated, coverage.partitions) == ("XNNPACK", 3, 2)
    assert coverage.fallback == {"CUMSUM": 1}
